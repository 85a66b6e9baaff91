# Helpers shared by bench/bridge.sh and bench/rest.sh (sourced).
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 1 240); do curl -fsS -m 1 "$1" >/dev/null 2>&1 && return 0; sleep 0.25; done; echo "not up: $1" >&2; exit 1; }
# User + system CPU ticks of a process.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# A number member of a one-line JSON answer: jnum JSON KEY.
jnum() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" <<<"$1"; }
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }
