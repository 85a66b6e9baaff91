#!/usr/bin/env bash
# The cost of traces (issue #52, docs/traces.md), measured side by side in
# one run: two gateways in front of one bench agent, one without traces and
# one exporting every call's spans (OTEL_TRACES_SAMPLER=always_on) over
# OTLP/HTTP to a receiver that keeps up (bench-upstream sink). Both get the
# same 0.3 message/send of 1 KiB at 1,000 calls/s; their rounds alternate,
# so drift hits both alike. Rows, within the run:
#   cpu   gateway CPU per call (the export thread included)   budget <= 1.15x
#   p99   latency p99 at 1,000/s                              budget <= +0.1 ms
# and the exporter's own count: every span exported, none dropped.
#
#   bash bench/traces.sh          the dist build (bench/dist.sh): bench/out/traces-full/
#   bash bench/traces.sh --smoke  debug build, tiny counts: the harness works
set -euo pipefail
cd "$(dirname "$0")/.."

source bench/lib.sh
bench_mode traces "$@"
bench_build
if [ $MODE = smoke ]; then
  RATE=100; SECS=1; ROUNDS=1
else
  RATE=1000; SECS=10; ROUNDS=5
fi

UPORT=$(freeport); SINK=$(freeport)
"$UP" serve "$UPORT" 2>>"$OUT/logs/upstream.log" & PIDS+=($!)
"$UP" sink "$SINK" 2>>"$OUT/logs/sink.log" & PIDS+=($!)
wait_http "http://127.0.0.1:$UPORT/.well-known/agent-card.json"

declare -A PORT ADMIN PID
start_gateway() { # kind, then env assignments
  local kind=$1; shift
  PORT[$kind]=$(freeport); ADMIN[$kind]=$(freeport)
  env "$@" "$GW" run --config bench/gateway.toml --listen "127.0.0.1:${PORT[$kind]}" \
    --admin-listen "127.0.0.1:${ADMIN[$kind]}" --upstream "bench=http://127.0.0.1:$UPORT" \
    2>>"$OUT/logs/gateway-$kind.log" &
  PID[$kind]=$!; PIDS+=($!)
  wait_http "http://127.0.0.1:${ADMIN[$kind]}/readyz"
}
start_gateway off OTEL_SDK_DISABLED=true
start_gateway on OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$SINK" \
  OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf OTEL_TRACES_SAMPLER=always_on

url_of() { echo "http://127.0.0.1:${PORT[$1]}/"; }
for kind in off on; do
  "$UP" rate --url "$(url_of $kind)" --body "$OUT/send1k.json" --rate 200 --secs 0.5 --conns 4 \
    --expect '"completed"' >/dev/null
done

declare -A CPU_US P99_US
echo "==> $RATE calls/s for ${SECS}s, $ROUNDS rounds each"
for round in $(seq 1 $ROUNDS); do
  for kind in off on; do
    c0=$(cpu "${PID[$kind]}")
    line=$("$UP" rate --url "$(url_of $kind)" --body "$OUT/send1k.json" --rate $RATE --secs $SECS \
      --conns 16 --expect '"completed"' 2>>"$OUT/logs/rate.err")
    c1=$(cpu "${PID[$kind]}")
    ok=$(jnum "$line" ok); errors=$(jnum "$line" errors); p99=$(jnum "$line" p99_us)
    [ "${errors:-1}" = 0 ] || { echo "FAILED: $kind: $line" >&2; exit 1; }
    us=$(cpu_us $((c1 - c0)) "$ok")
    CPU_US[$kind]="${CPU_US[$kind]:-} $us"; P99_US[$kind]="${P99_US[$kind]:-} $p99"
    echo "    round $round $kind: $ok calls, $us us CPU/call, p99 $p99 us"
  done
done

# The batch goes out every 5 s: wait for it, then read the exporter's count.
sleep 6
metric() { curl -fsS "http://127.0.0.1:${ADMIN[on]}/metrics" | sed -n "s/^a2a_gateway_trace_spans_total{result=\"$1\"} //p"; }
exported=$(metric exported); full=$(metric queue_full); failed=$(metric export_failed)
[ -n "$exported" ] && [ "${exported%.*}" -gt 0 ] || { echo "FAILED: no span was exported" >&2; exit 1; }

cpu_off=$(median <<<"${CPU_US[off]}"); cpu_on=$(median <<<"${CPU_US[on]}")
p99_off=$(median <<<"${P99_US[off]}"); p99_on=$(median <<<"${P99_US[on]}")
ratio=$(awk -v a="$cpu_on" -v b="$cpu_off" 'BEGIN {printf "%.2f", a / b}')
added=$(awk -v a="$p99_on" -v b="$p99_off" 'BEGIN {printf "%+.3f", (a - b) / 1000}')
v_cpu=$(awk -v v="$ratio" 'BEGIN {print (v <= 1.15 ? "met" : "MISSED")}')
v_p99=$(awk -v v="$added" 'BEGIN {print (v <= 0.1 ? "met" : "MISSED")}')
v_lost=$([ "${full:-0}" = 0 ] && [ "${failed:-0}" = 0 ] && echo met || echo MISSED)
{
  echo "| row | traces off | traces on, every call sampled | result | budget | |"
  echo "|---|---|---|---|---|---|"
  echo "| gateway CPU per 1 KiB send at $RATE/s | ${cpu_off} µs | ${cpu_on} µs | ${ratio}× | ≤ 1.15× | $v_cpu |"
  echo "| p99 at $RATE/s | ${p99_off} µs | ${p99_on} µs | ${added} ms | ≤ +0.1 ms | $v_p99 |"
  echo "| spans exported / dropped (queue full, export failed) | | ${exported} / ${full:-0}, ${failed:-0} | | none dropped | $v_lost |"
} | tee "$OUT/results.md"
