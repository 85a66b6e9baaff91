#!/usr/bin/env bash
# The gRPC binding's budget (docs/grpc.md), measured side by side in one
# run against one gateway (bench/gateway-grpc.toml) in front of two bench
# agents:
#   both   bench-upstream serve --grpc: gRPC 1.0 and JSON-RPC 1.0 (also as
#          `both2`, which the gateway speaks to in HTTP/2 only)
#   rpc    bench-upstream serve --rest: JSON-RPC 1.0 and HTTP+JSON, no gRPC
# Kinds of call, each a 1 KiB SendMessage answered by a completed task:
#   jsonrpc       JSON-RPC client -> both, HTTP/1.1 on both legs
#   jsonrpc-h2    the same, the client's leg h2c (the agent's HTTP/1.1)
#   jsonrpc-h2h2  JSON-RPC client -> both2, h2c on both legs
#   grpc          gRPC client (tenant agents/both) -> both's gRPC (passes through)
#   bridged       gRPC client (tenant agents/rpc) -> rpc's JSON-RPC (HTTP/1.1)
# and the same calls through bench-hyper-floor (a bare hyper proxy, no
# gateway work) for what HTTP/2 itself costs:
#   floor-h1      JSON-RPC, HTTP/1.1 on both legs
#   floor-h2      JSON-RPC, h2c on both legs
#   floor-grpc    gRPC, h2c on both legs
# Rows, the median of the rounds' ratios, each against JSON-RPC pass-through
# on the same transports (gRPC is HTTP/2 only; the HTTP/1.1 ratio is shown too):
#   grpc     vs jsonrpc-h2h2   gateway CPU per call       budget <= 1.2x
#   bridged  vs jsonrpc-h2     gateway CPU per call       budget <= 1.5x
# The kinds' rounds alternate, so drift hits all alike; each row's kind runs
# next to its baseline, in turn before and after it.
#
#   bash bench/grpc.sh          the dist build (bench/dist.sh): bench/out/grpc-full/
#   bash bench/grpc.sh --smoke  debug build, tiny counts: the harness works
set -euo pipefail
cd "$(dirname "$0")/.."

source bench/lib.sh
bench_mode grpc "$@"
bench_build --example bench-hyper-floor
FLOOR=$BIN/examples/bench-hyper-floor
if [ $MODE = smoke ]; then
  RATE=200; SECS=1; ROUNDS=1
else
  RATE=3000; SECS=4; ROUNDS=10
fi
"$UP" grpc-body "$OUT/send1k_v10.json" "$OUT/grpc_both.bin" agents/both
"$UP" grpc-body "$OUT/send1k_v10.json" "$OUT/grpc_rpc.bin" agents/rpc

BPORT=$(freeport); RPORT=$(freeport); GPORT=$(freeport); GADMIN=$(freeport)
F1PORT=$(freeport); F2PORT=$(freeport)
"$UP" serve "$BPORT" --grpc 2>>"$OUT/logs/upstream-both.log" & PIDS+=($!)
"$UP" serve "$RPORT" --rest 2>>"$OUT/logs/upstream-rpc.log" & PIDS+=($!)
wait_http "http://127.0.0.1:$BPORT/.well-known/agent-card.json"
wait_http "http://127.0.0.1:$RPORT/.well-known/agent-card.json"
"$GW" run --config bench/gateway-grpc.toml --listen "127.0.0.1:$GPORT" --admin-listen "127.0.0.1:$GADMIN" \
  --upstream "both=http://127.0.0.1:$BPORT" --upstream "both2=http://127.0.0.1:$BPORT" \
  --upstream "rpc=http://127.0.0.1:$RPORT" \
  2>>"$OUT/logs/gateway.log" & GW_PID=$!; PIDS+=($GW_PID)
"$FLOOR" "$F1PORT" "127.0.0.1:$BPORT" 2>>"$OUT/logs/floor-h1.log" & F1_PID=$!; PIDS+=($F1_PID)
"$FLOOR" "$F2PORT" "127.0.0.1:$BPORT" h2 2>>"$OUT/logs/floor-h2.log" & F2_PID=$!; PIDS+=($F2_PID)
wait_http "http://127.0.0.1:$GADMIN/readyz"
wait_http "http://127.0.0.1:$F1PORT/.well-known/agent-card.json"
wait_http "http://127.0.0.1:$F2PORT/.well-known/agent-card.json"

SEND=/lf.a2a.v1.A2AService/SendMessage
GRPC=(--h2 -H "content-type: application/grpc" -H "te: trailers" --expect "echo: ")
JSON=(-H "a2a-version: 1.0" --expect TASK_STATE_COMPLETED)
# kind -> the rate client's arguments (URL, body, options)
args_of() { case $1 in
  jsonrpc) echo "--url http://127.0.0.1:$GPORT/agents/both --body $OUT/send1k_v10.json";;
  jsonrpc-h2) echo "--url http://127.0.0.1:$GPORT/agents/both --body $OUT/send1k_v10.json --h2";;
  jsonrpc-h2h2) echo "--url http://127.0.0.1:$GPORT/agents/both2 --body $OUT/send1k_v10.json --h2";;
  grpc) echo "--url http://127.0.0.1:$GPORT$SEND --body $OUT/grpc_both.bin";;
  bridged) echo "--url http://127.0.0.1:$GPORT$SEND --body $OUT/grpc_rpc.bin";;
  floor-h1) echo "--url http://127.0.0.1:$F1PORT/ --body $OUT/send1k_v10.json";;
  floor-h2) echo "--url http://127.0.0.1:$F2PORT/ --body $OUT/send1k_v10.json --h2";;
  floor-grpc) echo "--url http://127.0.0.1:$F2PORT$SEND --body $OUT/grpc_both.bin";;
esac; }
pid_of() { case $1 in floor-h1) echo $F1_PID;; floor-*) echo $F2_PID;; *) echo $GW_PID;; esac; }
run_rate() { # kind rate secs conns
  local kind=$1; shift
  case $kind in
    grpc|bridged|floor-grpc) "$UP" rate $(args_of "$kind") --rate "$1" --secs "$2" --conns "$3" "${GRPC[@]}";;
    *) "$UP" rate $(args_of "$kind") --rate "$1" --secs "$2" --conns "$3" "${JSON[@]}";;
  esac
}

# Each row's kind runs next to its baseline.
KINDS=(jsonrpc-h2 bridged jsonrpc-h2h2 grpc jsonrpc floor-h1 floor-h2 floor-grpc)
# Warm-up, every kind, every answer checked.
for kind in "${KINDS[@]}"; do run_rate "$kind" 200 0.5 4 >/dev/null; done

declare -A CPU_US
echo "==> cpu per 1 KiB send ($RATE/s for ${SECS}s, $ROUNDS rounds each)"
for round in $(seq 1 $ROUNDS); do
  # Every other round runs the kinds backwards (A B, then B A): a drift
  # within a round favours neither side of a pair.
  order=("${KINDS[@]}")
  if [ $((round % 2)) = 0 ]; then
    order=(); for ((i = ${#KINDS[@]} - 1; i >= 0; i--)); do order+=("${KINDS[$i]}"); done
  fi
  for kind in "${order[@]}"; do
    pid=$(pid_of "$kind")
    c0=$(cpu "$pid")
    line=$(run_rate "$kind" $RATE $SECS 16 2>>"$OUT/logs/rate.err")
    c1=$(cpu "$pid")
    ok=$(jnum "$line" ok); errors=$(jnum "$line" errors)
    [ "${errors:-1}" = 0 ] || { echo "FAILED: $kind: $line" >&2; exit 1; }
    us=$(cpu_us $((c1 - c0)) "$ok")
    CPU_US[$kind]="${CPU_US[$kind]:-} $us"
    echo "    round $round $kind: $ok calls, $us us CPU/call"
  done
done
med() { median <<<"${CPU_US[$1]}"; }
# The median of the rounds' own ratios: each round's kinds ran back to back,
# so a ratio within a round is less moved by this shared host's drift than
# a ratio of medians taken over different rounds.
ratio() {
  local a=(${CPU_US[$1]}) b=(${CPU_US[$2]}) r="" i
  for i in "${!a[@]}"; do r="$r $(awk -v x="${a[$i]}" -v y="${b[$i]}" 'BEGIN {printf "%.4f", x / y}')"; done
  median <<<"$r" | awk '{printf "%.2f", $1}'
}
row() { # name kind baseline budget
  local r verdict
  r=$(ratio "$2" "$3")
  verdict=$(awk -v v="$r" -v m="$4" 'BEGIN {print (v <= m ? "met" : "MISSED")}')
  echo "| $1 | $3: $(med "$3") µs | $(med "$2") µs | ${r}× | ≤ $4× | $verdict | $(ratio "$2" jsonrpc)× |"
}
{
  echo "| row | JSON-RPC pass-through, same transports | gRPC | result | budget | | vs HTTP/1.1 JSON-RPC ($(med jsonrpc) µs) |"
  echo "|---|---|---|---|---|---|---|"
  row "gRPC client → gRPC agent, CPU per 1 KiB send" grpc jsonrpc-h2h2 1.2
  row "gRPC client → JSON-RPC agent (bridged), CPU per 1 KiB send" bridged jsonrpc-h2 1.5
  echo
  echo "A bare hyper proxy (bench-hyper-floor), CPU per call: HTTP/1.1 $(med floor-h1) µs;"
  echo "JSON-RPC over h2c on both legs $(med floor-h2) µs ($(ratio floor-h2 floor-h1)×);"
  echo "gRPC over h2c on both legs $(med floor-grpc) µs ($(ratio floor-grpc floor-h1)×)."
} | tee "$OUT/results.md"
