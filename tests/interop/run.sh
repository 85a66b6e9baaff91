#!/usr/bin/env bash
# Interop harness: official A2A SDK clients x official SDK agents, directly and
# through one a2a-gateway. Loopback only. Exit 0 unless setup fails; the matrix
# is a measurement, not a gate. See README.md.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="$HERE/out"; mkdir -p "$OUT"
GW_BIN="${GW_BIN:-$ROOT/target/debug/a2a-gateway}"
SDK1=1.3.0; SDK03=0.3.26
PY="${PYTHON:-python3}"

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT INT TERM
die() { echo "SETUP FAILED: $*" >&2; exit 2; }

# --- venvs (ignored folders), pinned SDKs ---------------------------------
mkvenv() { # dir pin
  local d="$HERE/$1"
  if ! "$d/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('a2a-sdk') != '$2')" 2>/dev/null; then
    echo "installing a2a-sdk==$2 into $1 ..."
    "$PY" -m venv "$d" || die "venv $1"
    timeout 600 "$d/bin/pip" install -q "a2a-sdk[http-server]==$2" uvicorn httpx \
      >"$OUT/pip-$1.log" 2>&1 || die "pip install a2a-sdk==$2 (see $OUT/pip-$1.log)"
  fi
}
mkvenv .venv1 "$SDK1"
mkvenv .venv03 "$SDK03"
V1="$HERE/.venv1/bin/python"; V03="$HERE/.venv03/bin/python"
[ -x "$GW_BIN" ] || die "no gateway binary at $GW_BIN (build it first)"

# --- processes ------------------------------------------------------------
freeport() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { # url name
  for _ in $(seq 1 60); do curl -fsS -m 1 "$1" >/dev/null 2>&1 && return 0; sleep 0.25; done
  die "$2 did not come up ($1)"
}
start() { # logname cmd...
  local log="$OUT/$1.log"; shift
  "$@" >"$log" 2>&1 & PIDS+=($!)
}

AGENTS=(v1 v1compat v03)
declare -A PORT
for a in "${AGENTS[@]}"; do PORT[$a]=$(freeport); done
start agent-v1       "$V1"  "$HERE/agents/agent_v1.py"  --port "${PORT[v1]}"
start agent-v1compat "$V1"  "$HERE/agents/agent_v1.py"  --port "${PORT[v1compat]}" --compat
start agent-v03      "$V03" "$HERE/agents/agent_v03.py" --port "${PORT[v03]}"
for a in "${AGENTS[@]}"; do wait_http "http://127.0.0.1:${PORT[$a]}/.well-known/agent-card.json" "agent $a"; done

GW=$(freeport); GWA=$(freeport)
UP=(); for a in "${AGENTS[@]}"; do UP+=(--upstream "$a=http://127.0.0.1:${PORT[$a]}"); done
start gateway "$GW_BIN" run --listen "127.0.0.1:$GW" --admin-listen "127.0.0.1:$GWA" \
  --public-url "http://127.0.0.1:$GW" "${UP[@]}"
wait_http "http://127.0.0.1:$GWA/readyz" "gateway"

# --- clients x agents -----------------------------------------------------
CLIENTS=(sdk1 sdk03 raw01)
client_cmd() { case $1 in
  sdk1) echo "$V1 $HERE/clients/client_v1.py";;
  sdk03) echo "$V03 $HERE/clients/client_v03.py";;
  raw01) echo "$V1 $HERE/clients/client_raw01.py";; esac; }

RESULTS="$OUT/results.jsonl"; : >"$RESULTS"
for mode in direct gateway; do
  for c in "${CLIENTS[@]}"; do
    for a in "${AGENTS[@]}"; do
      if [ $mode = direct ]; then base="http://127.0.0.1:${PORT[$a]}"
      else base="http://127.0.0.1:$GW/agents/$a"; fi
      line=$(cd "$HERE/clients" && timeout 120 $(client_cmd "$c") "$base" 2>>"$OUT/client-$c-$a-$mode.err" | tail -1)
      [ -n "$line" ] || line='{"card_url":"","ops":{"send":"FAIL: client crashed or timed out"}}'
      printf '{"mode":"%s","client":"%s","agent":"%s","base":"%s","r":%s}\n' \
        "$mode" "$c" "$a" "$base" "$line" >>"$RESULTS"
    done
  done
done

"$PY" "$HERE/matrix.py" "$RESULTS" | tee "$OUT/matrix.md"
n=$(grep -c 'access request_id' "$OUT/gateway.log" 2>/dev/null || true)
echo; echo "gateway access-log lines (requests that went through the gateway): ${n:-0}"
exit 0
