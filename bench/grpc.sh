#!/usr/bin/env bash
# The gRPC binding's budget (docs/grpc.md), measured side by side in one
# run against one gateway in front of two bench agents:
#   both  bench-upstream serve --grpc: gRPC 1.0 and JSON-RPC 1.0
#   rpc   bench-upstream serve --rest: JSON-RPC 1.0 and HTTP+JSON, no gRPC
# Kinds of call, each a 1 KiB SendMessage answered by a completed task:
#   jsonrpc     JSON-RPC 1.0 client -> both, HTTP/1.1 (passes through)
#   jsonrpc-h2  the same over h2c (shown, the same transport as gRPC)
#   grpc        gRPC client (tenant agents/both) -> both's gRPC interface
#   bridged     gRPC client (tenant agents/rpc) -> rpc's JSON-RPC
# Rows, ratios within the run, against `jsonrpc`:
#   grpc     gateway CPU per call at a fixed rate      budget <= 1.2x
#   bridged  gateway CPU per call at a fixed rate      budget <= 1.5x
# The kinds' rounds alternate, so drift hits all alike.
#
#   bash bench/grpc.sh          the dist build (bench/dist.sh): bench/out/grpc-full/
#   bash bench/grpc.sh --smoke  debug build, tiny counts: the harness works
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=full
case "${1:-}" in
  "") ;;
  --smoke) MODE=smoke ;;
  *) echo "usage: bash bench/grpc.sh [--smoke]" >&2; exit 2 ;;
esac
OUT=bench/out/grpc-$MODE
rm -rf "$OUT"; mkdir -p "$OUT/logs"
if [ $MODE = smoke ]; then
  cargo build --quiet --bin a2a-gateway --example bench-upstream
  BIN=target/debug; RATE=200; SECS=1; ROUNDS=1
else
  bash bench/dist.sh --quiet --bin a2a-gateway --example bench-upstream
  BIN=target/dist; RATE=3000; SECS=8; ROUNDS=5
fi
GW=$BIN/a2a-gateway; UP=$BIN/examples/bench-upstream
python3 bench/bodies.py "$OUT"
"$UP" grpc-body "$OUT/send1k_v10.json" "$OUT/grpc_both.bin" agents/both
"$UP" grpc-body "$OUT/send1k_v10.json" "$OUT/grpc_rpc.bin" agents/rpc
CLK_TCK=$(getconf CLK_TCK)

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM
source bench/lib.sh

BPORT=$(freeport); RPORT=$(freeport); GPORT=$(freeport); GADMIN=$(freeport)
"$UP" serve "$BPORT" --grpc 2>>"$OUT/logs/upstream-both.log" & PIDS+=($!)
"$UP" serve "$RPORT" --rest 2>>"$OUT/logs/upstream-rpc.log" & PIDS+=($!)
wait_http "http://127.0.0.1:$BPORT/.well-known/agent-card.json"
wait_http "http://127.0.0.1:$RPORT/.well-known/agent-card.json"
"$GW" run --config bench/gateway.toml --listen "127.0.0.1:$GPORT" --admin-listen "127.0.0.1:$GADMIN" \
  --upstream "both=http://127.0.0.1:$BPORT" --upstream "rpc=http://127.0.0.1:$RPORT" \
  2>>"$OUT/logs/gateway.log" & GW_PID=$!; PIDS+=($GW_PID)
wait_http "http://127.0.0.1:$GADMIN/readyz"

GRPC_URL="http://127.0.0.1:$GPORT/lf.a2a.v1.A2AService/SendMessage"
GRPC=(--h2 -H "content-type: application/grpc" -H "te: trailers" --expect "echo: ")
JSON=(-H "a2a-version: 1.0" --expect TASK_STATE_COMPLETED)
# kind -> the rate client's arguments (URL, body, options)
args_of() { case $1 in
  jsonrpc) echo "--url http://127.0.0.1:$GPORT/agents/both --body $OUT/send1k_v10.json";;
  jsonrpc-h2) echo "--url http://127.0.0.1:$GPORT/agents/both --body $OUT/send1k_v10.json --h2";;
  grpc) echo "--url $GRPC_URL --body $OUT/grpc_both.bin";;
  bridged) echo "--url $GRPC_URL --body $OUT/grpc_rpc.bin";;
esac; }
opts_of() { case $1 in jsonrpc*) echo json;; *) echo grpc;; esac; }
run_rate() { # kind rate secs conns
  local kind=$1; shift
  if [ "$(opts_of "$kind")" = json ]; then
    "$UP" rate $(args_of "$kind") --rate "$1" --secs "$2" --conns "$3" "${JSON[@]}"
  else
    "$UP" rate $(args_of "$kind") --rate "$1" --secs "$2" --conns "$3" "${GRPC[@]}"
  fi
}

KINDS=(jsonrpc jsonrpc-h2 grpc bridged)
# Warm-up, every kind, every answer checked.
for kind in "${KINDS[@]}"; do run_rate "$kind" 200 0.5 4 >/dev/null; done

declare -A CPU_US
echo "==> cpu per 1 KiB send ($RATE/s for ${SECS}s, $ROUNDS rounds each)"
for round in $(seq 1 $ROUNDS); do
  for kind in "${KINDS[@]}"; do
    c0=$(cpu $GW_PID)
    line=$(run_rate "$kind" $RATE $SECS 16 2>>"$OUT/logs/rate.err")
    c1=$(cpu $GW_PID)
    ok=$(jnum "$line" ok); errors=$(jnum "$line" errors)
    [ "${errors:-1}" = 0 ] || { echo "FAILED: $kind: $line" >&2; exit 1; }
    us=$(awk -v t=$((c1 - c0)) -v k="$CLK_TCK" -v n="$ok" 'BEGIN {printf "%.2f", t / k * 1e6 / n}')
    CPU_US[$kind]="${CPU_US[$kind]:-} $us"
    echo "    round $round $kind: $ok calls, $us us CPU/call"
  done
done
base=$(median <<<"${CPU_US[jsonrpc]}"); base_h2=$(median <<<"${CPU_US[jsonrpc-h2]}")
row() { # name kind budget
  local v r verdict
  v=$(median <<<"${CPU_US[$2]}")
  r=$(awk -v a="$v" -v b="$base" 'BEGIN {printf "%.2f", a / b}')
  verdict=$(awk -v v="$r" -v m="$3" 'BEGIN {print (v <= m ? "met" : "MISSED")}')
  echo "| $1 | ${base} µs | ${v} µs | ${r}× | ≤ $3× | $verdict |"
}
{
  echo "| row | JSON-RPC pass-through (HTTP/1.1) | gRPC | result | budget | |"
  echo "|---|---|---|---|---|---|"
  row "gRPC client → gRPC agent, CPU per 1 KiB send" grpc 1.2
  row "gRPC client → JSON-RPC agent (bridged), CPU per 1 KiB send" bridged 1.5
  echo
  echo "JSON-RPC pass-through over h2c, for the transport's share: ${base_h2} µs."
} | tee "$OUT/results.md"
