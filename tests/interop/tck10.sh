#!/usr/bin/env bash
# The official A2A conformance suite for 1.0 (a2aproject/a2a-tck at the
# commit pinned below, main after the 1.0 proto), mandatory tests, over
# JSON-RPC and over HTTP+JSON (REST), each run three ways:
#   A  directly against an agent serving 1.0 JSON-RPC and 1.0 REST
#      (agent_tck.py --rest)
#   B  through a gateway at /agents/rpc, in front of the same agent
#      serving JSON-RPC only: REST calls are bridged to JSON-RPC
#   C  through another gateway at /agents/rest, in front of agent A: REST
#      calls pass through to its REST interface
# (one agent a gateway: some of the suite's clients call the origin's card
# and URL, which a fleet of one routes to its agent)
# and the failures compared: B and C must fail nothing that A passes, and
# skip no more than A (the card offers REST, so REST tests run). Not run by
# CI (the TCK is not on PyPI; this fetches it from GitHub, or TCK_SRC, a
# clone of it). Loopback only.
#   bash tests/interop/tck10.sh      after run.sh has made .venv1; ~3 min
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$(cd "$HERE/../.." && pwd)"
OUT="$HERE/out/tck10"; mkdir -p "$OUT"
TCK="$HERE/.tck10"; COMMIT=410ba92e1b264df895e1fe6eccfe22db7aeaab06
V1="$HERE/.venv1/bin/python"; GW_BIN="${GW_BIN:-$ROOT/target/debug/a2a-gateway}"
[ -x "$V1" ] || { echo "run tests/interop/run.sh first (it makes .venv1)" >&2; exit 2; }
[ -x "$GW_BIN" ] || { echo "no gateway at $GW_BIN: cargo build" >&2; exit 2; }
if [ ! -d "$TCK/.venv" ]; then
  rm -rf "$TCK"
  git clone -q "${TCK_SRC:-https://github.com/a2aproject/a2a-tck}" "$TCK" &&
    git -C "$TCK" checkout -q "$COMMIT" || exit 2
  python3 -m venv "$TCK/.venv" && timeout 600 "$TCK/.venv/bin/pip" install -q -e "$TCK" || exit 2
fi
PIDS=(); cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT INT TERM
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 1 60); do curl -fsS -m 1 "$1" >/dev/null 2>&1 && return 0; sleep 0.25; done; echo "no $1" >&2; exit 2; }
PA=$(freeport) PB=$(freeport) GB=$(freeport) GBA=$(freeport) GC=$(freeport) GCA=$(freeport)
"$V1" "$HERE/agents/agent_tck.py" --port "$PA" --rest >"$OUT/agent-rest.log" 2>&1 & PIDS+=($!)
"$V1" "$HERE/agents/agent_tck.py" --port "$PB" >"$OUT/agent-rpc.log" 2>&1 & PIDS+=($!)
wait_http "http://127.0.0.1:$PA/.well-known/agent-card.json"
wait_http "http://127.0.0.1:$PB/.well-known/agent-card.json"
# The agents are up before the gateways start: they read the cards at once.
gateway() { # port admin name agent-port
  "$GW_BIN" run --listen "127.0.0.1:$1" --admin-listen "127.0.0.1:$2" --public-url "http://127.0.0.1:$1" \
    --upstream "$3=http://127.0.0.1:$4" >"$OUT/gateway-$3.log" 2>&1 & PIDS+=($!)
  wait_http "http://127.0.0.1:$2/readyz"
}
gateway "$GB" "$GBA" rpc "$PB"
gateway "$GC" "$GCA" rest "$PA"
cd "$TCK"
status=0
for transport in jsonrpc rest; do
  for mode in A B C; do
    case $mode in
      A) url="http://127.0.0.1:$PA";;
      B) url="http://127.0.0.1:$GB/agents/rpc";;
      C) url="http://127.0.0.1:$GC/agents/rest";;
    esac
    log="$OUT/$transport-$mode.txt"
    timeout 900 .venv/bin/python -m pytest tests/mandatory/ --sut-url="$url" --test-scope=all --tb=short -v \
      -m "mandatory or mandatory_jsonrpc or mandatory_protocol" --transports "$transport" >"$log" 2>&1
    grep -E '^(FAILED|ERROR) tests' "$log" | sed 's/ - .*//' | sort >"$OUT/$transport-$mode.failed"
    echo "$transport $mode: $(tail -1 "$log")"
  done
  for mode in B C; do
    only=$(comm -13 "$OUT/$transport-A.failed" "$OUT/$transport-$mode.failed")
    if [ -n "$only" ]; then echo "$transport: fail through the gateway ($mode) only:"; echo "$only"; status=1; fi
    skipped() { sed -n 's/.* \([0-9]*\) skipped.*/\1/p' "$OUT/$transport-$1.txt" | tail -1; }
    if [ "$(skipped "$mode")" -gt "$(skipped A)" ]; then
      echo "$transport: more skipped through the gateway ($mode): $(skipped "$mode") > $(skipped A)"; status=1
    fi
  done
done
[ $status = 0 ] && echo "no failure or skip through the gateway that the direct run does not have"
exit $status
