# Helpers shared by the bench scripts (sourced).
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 1 240); do curl -fsS -m 1 "$1" >/dev/null 2>&1 && return 0; sleep 0.25; done; echo "not up: $1" >&2; exit 1; }
# User + system CPU ticks of a process.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# A number member of a one-line JSON answer: jnum JSON KEY.
jnum() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" <<<"$1"; }
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }

# A budget script's mode and output folder: MODE (full, or smoke with
# --smoke; anything else is a usage error) and OUT, made fresh.
bench_mode() { # NAME "$@"
  local name=$1; shift
  MODE=full
  case "${1:-}" in
    "") ;;
    --smoke) MODE=smoke ;;
    *) echo "usage: bash bench/$name.sh [--smoke]" >&2; exit 2 ;;
  esac
  OUT=bench/out/$name-$MODE
  rm -rf "$OUT"; mkdir -p "$OUT/logs"
}

# The gateway and the bench agent (and EXTRA cargo targets): the debug build
# for a smoke run, the dist build (bench/dist.sh) otherwise. Sets BIN, GW,
# UP, CLK_TCK; writes the request bodies into OUT; kills PIDS on exit.
bench_build() { # [EXTRA cargo targets...]
  local targets=(--bin a2a-gateway --example bench-upstream "$@")
  if [ "$MODE" = smoke ]; then
    cargo build --quiet "${targets[@]}"
    BIN=target/debug
  else
    bash bench/dist.sh --quiet "${targets[@]}"
    BIN=target/dist
  fi
  GW=$BIN/a2a-gateway; UP=$BIN/examples/bench-upstream
  python3 bench/bodies.py "$OUT"
  CLK_TCK=$(getconf CLK_TCK)
  PIDS=()
  trap bench_cleanup EXIT INT TERM
}
bench_cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }

# Microseconds of CPU a call: TICKS of CPU (cpu's unit) over CALLS calls.
cpu_us() { awk -v t="$1" -v k="$CLK_TCK" -v n="$2" 'BEGIN {printf "%.2f", t / k * 1e6 / n}'; }
