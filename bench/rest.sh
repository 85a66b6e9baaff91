#!/usr/bin/env bash
# The HTTP+JSON binding's budget (docs/rest.md), measured side by side in
# one run against one gateway in front of the bench agent on two bindings
# (bench-upstream serve --rest: JSON-RPC 1.0 at /, HTTP+JSON 1.0 at /rest):
#   jsonrpc  a 1.0 JSON-RPC client: SendMessage (passes through to JSON-RPC)
#   rest     a 1.0 REST client: POST /message:send (passes through to REST)
# Row, a ratio within the run:
#   cpu   gateway CPU per 1 KiB send at a fixed rate       budget <= 1.2x
# The two kinds' rounds alternate, so drift hits both alike.
#
#   bash bench/rest.sh          the dist build (bench/dist.sh): bench/out/rest-full/
#   bash bench/rest.sh --smoke  debug build, tiny counts: the harness works
set -euo pipefail
cd "$(dirname "$0")/.."

source bench/lib.sh
bench_mode rest "$@"
bench_build
if [ $MODE = smoke ]; then
  RATE=200; SECS=1; ROUNDS=1
else
  RATE=3000; SECS=8; ROUNDS=5
fi

UPORT=$(freeport); GPORT=$(freeport); GADMIN=$(freeport)
"$UP" serve "$UPORT" --rest 2>>"$OUT/logs/upstream.log" & PIDS+=($!)
wait_http "http://127.0.0.1:$UPORT/.well-known/agent-card.json"
"$GW" run --config bench/gateway.toml --listen "127.0.0.1:$GPORT" --admin-listen "127.0.0.1:$GADMIN" \
  --upstream "bench=http://127.0.0.1:$UPORT" 2>>"$OUT/logs/gateway.log" & GW_PID=$!; PIDS+=($GW_PID)
wait_http "http://127.0.0.1:$GADMIN/readyz"

# kind -> URL, body, extra client options
url_of() { [ "$1" = rest ] && echo "http://127.0.0.1:$GPORT/message:send" || echo "http://127.0.0.1:$GPORT/"; }
body_of() { [ "$1" = rest ] && echo "$OUT/send1k_rest.json" || echo "$OUT/send1k_v10.json"; }
V1=(-H "a2a-version: 1.0")

# Warm-up, both ways, every answer checked.
for kind in jsonrpc rest; do
  "$UP" rate --url "$(url_of $kind)" --body "$(body_of $kind)" --rate 200 --secs 0.5 --conns 4 \
    --expect TASK_STATE_COMPLETED "${V1[@]}" >/dev/null
done

declare -A CPU_US
echo "==> cpu per 1 KiB send ($RATE/s for ${SECS}s, $ROUNDS rounds each)"
for round in $(seq 1 $ROUNDS); do
  for kind in jsonrpc rest; do
    c0=$(cpu $GW_PID)
    line=$("$UP" rate --url "$(url_of $kind)" --body "$(body_of $kind)" --rate $RATE --secs $SECS \
      --conns 16 --expect TASK_STATE_COMPLETED "${V1[@]}" 2>>"$OUT/logs/rate.err")
    c1=$(cpu $GW_PID)
    ok=$(jnum "$line" ok); errors=$(jnum "$line" errors)
    [ "${errors:-1}" = 0 ] || { echo "FAILED: $kind: $line" >&2; exit 1; }
    us=$(cpu_us $((c1 - c0)) "$ok")
    CPU_US[$kind]="${CPU_US[$kind]:-} $us"
    echo "    round $round $kind: $ok calls, $us us CPU/call"
  done
done
cpu_rpc=$(median <<<"${CPU_US[jsonrpc]}"); cpu_rest=$(median <<<"${CPU_US[rest]}")
ratio=$(awk -v a="$cpu_rest" -v b="$cpu_rpc" 'BEGIN {printf "%.2f", a / b}')
verdict=$(awk -v v="$ratio" 'BEGIN {print (v <= 1.2 ? "met" : "MISSED")}')
{
  echo "| row | JSON-RPC pass-through | REST pass-through | result | budget | |"
  echo "|---|---|---|---|---|---|"
  echo "| CPU per 1 KiB send | ${cpu_rpc} µs | ${cpu_rest} µs | ${ratio}× | ≤ 1.2× | $verdict |"
} | tee "$OUT/results.md"
