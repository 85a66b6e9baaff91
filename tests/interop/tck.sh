#!/usr/bin/env bash
# The official A2A 0.3 conformance suite (a2aproject/a2a-tck, tag 0.3.0.beta4),
# mandatory tests, run twice:
#   A  directly against an agent that speaks 0.3 (a2a-sdk 1.3.0 with 0.3 compat)
#   B  through the gateway at /agents/v1, in front of the same agent in pure
#      1.0 mode, so every call is translated
# and the failures compared: B must fail nothing that A passes. Not run by CI
# (the TCK is not on PyPI; this fetches it from GitHub). Loopback only.
#   bash tests/interop/tck.sh        after run.sh has made .venv1; ~1 min
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$(cd "$HERE/../.." && pwd)"
OUT="$HERE/out/tck"; mkdir -p "$OUT"
TCK="$HERE/.tck"; TAG=0.3.0.beta4
V1="$HERE/.venv1/bin/python"; GW_BIN="${GW_BIN:-$ROOT/target/debug/a2a-gateway}"
[ -x "$V1" ] || { echo "run tests/interop/run.sh first (it makes .venv1)" >&2; exit 2; }
[ -x "$GW_BIN" ] || { echo "no gateway at $GW_BIN: cargo build" >&2; exit 2; }
if [ ! -d "$TCK/.venv" ]; then
  git clone -q --branch "$TAG" https://github.com/a2aproject/a2a-tck "$TCK" || exit 2
  python3 -m venv "$TCK/.venv" && timeout 600 "$TCK/.venv/bin/pip" install -q -e "$TCK" || exit 2
fi
PIDS=(); cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT INT TERM
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 1 60); do curl -fsS -m 1 "$1" >/dev/null 2>&1 && return 0; sleep 0.25; done; echo "no $1" >&2; exit 2; }
PA=$(freeport) PB=$(freeport) GW=$(freeport) GWA=$(freeport)
"$V1" "$HERE/agents/agent_tck.py" --port "$PA" --compat >"$OUT/agent-A.log" 2>&1 & PIDS+=($!)
"$V1" "$HERE/agents/agent_tck.py" --port "$PB" >"$OUT/agent-B.log" 2>&1 & PIDS+=($!)
wait_http "http://127.0.0.1:$PA/.well-known/agent-card.json"
wait_http "http://127.0.0.1:$PB/.well-known/agent-card.json"
"$GW_BIN" run --listen "127.0.0.1:$GW" --admin-listen "127.0.0.1:$GWA" \
  --public-url "http://127.0.0.1:$GW" --upstream "v1=http://127.0.0.1:$PB" >"$OUT/gateway.log" 2>&1 & PIDS+=($!)
wait_http "http://127.0.0.1:$GWA/readyz"
cd "$TCK"
for mode in A B; do
  url="http://127.0.0.1:$PA"; [ $mode = B ] && url="http://127.0.0.1:$GW/agents/v1"
  timeout 900 .venv/bin/python -m pytest tests/mandatory/ --sut-url="$url" --test-scope=all --tb=short -v \
    -m "mandatory or mandatory_jsonrpc or mandatory_protocol" --transports jsonrpc >"$OUT/$mode.txt" 2>&1
  grep '^FAILED' "$OUT/$mode.txt" | sed 's/ - .*//' | sort >"$OUT/$mode.failed"
  echo "$mode: $(tail -1 "$OUT/$mode.txt")"
done
only_b=$(comm -13 "$OUT/A.failed" "$OUT/B.failed")
if [ -n "$only_b" ]; then echo "fail through the gateway only:"; echo "$only_b"; exit 1; fi
echo "no failure through the gateway that the direct run does not have"
