#!/usr/bin/env bash
# The version bridge's budget (docs/version-bridge.md), measured side by side
# in one run against one gateway in front of the bench agent, which speaks
# A2A 0.3 (bench/upstream.rs):
#   pass        a 0.3 client: message/send, message/stream (bytes pass through)
#   translated  a 1.0 client: SendMessage, SendStreamingMessage (translated to
#               0.3 and back)
# Rows, each a ratio or difference within the run:
#   cpu   gateway CPU per message/send of 1 KiB at a fixed rate     budget <= 1.5x
#   ttfe  stream time to first event, p99, one stream at a time     budget <= +0.2 ms
#         (latency, as bench/run.sh's sse_lat rows: under saturation it
#         would measure queueing for the CPU, which the cpu row covers)
#   idle  gateway memory per idle stream (1,000 held open)          budget <= 2x
# Pass and translated rounds alternate, so drift hits both alike.
#
#   bash bench/bridge.sh          the dist build (bench/dist.sh): bench/out/bridge/
#   bash bench/bridge.sh --smoke  debug build, tiny counts: the harness works
set -euo pipefail
cd "$(dirname "$0")/.."

source bench/lib.sh
bench_mode bridge "$@"
bench_build
if [ $MODE = smoke ]; then
  RATE=200; SECS=1; ROUNDS=1; STREAMS=30; IDLE=50
else
  RATE=3000; SECS=8; ROUNDS=3; STREAMS=1000; IDLE=1000
fi
rss() { awk '$1 == "VmRSS:" {print $2}' "/proc/$1/status"; }

UPORT=$(freeport); GPORT=$(freeport); GADMIN=$(freeport)
"$UP" serve "$UPORT" 2>>"$OUT/logs/upstream.log" & PIDS+=($!)
wait_http "http://127.0.0.1:$UPORT/.well-known/agent-card.json"
start_gateway() {
  "$GW" run --config bench/gateway.toml --listen "127.0.0.1:$GPORT" --admin-listen "127.0.0.1:$GADMIN" \
    --upstream "bench=http://127.0.0.1:$UPORT" 2>>"$OUT/logs/gateway.log" & GW_PID=$!; PIDS+=($GW_PID)
  wait_http "http://127.0.0.1:$GADMIN/readyz"
}
stop_gateway() { kill "$GW_PID"; wait "$GW_PID" 2>/dev/null || true; }
start_gateway
URL="http://127.0.0.1:$GPORT/"
V1=(-H "a2a-version: 1.0")

# kind -> body, expected answer text, extra client options
body_of() { [ "$1" = pass ] && echo "$OUT/$2.json" || echo "$OUT/${2}_v10.json"; }
expect_of() { [ "$1" = pass ] && echo '"completed"' || echo 'TASK_STATE_COMPLETED'; }

# Warm-up, both ways, every answer checked.
for kind in pass translated; do
  extra=(); [ $kind = translated ] && extra=("${V1[@]}")
  "$UP" rate --url "$URL" --body "$(body_of $kind send1k)" --rate 200 --secs 0.5 --conns 4 \
    --expect "$(expect_of $kind)" "${extra[@]}" >/dev/null
done

declare -A CPU_US
echo "==> cpu per message/send 1 KiB ($RATE/s for ${SECS}s, $ROUNDS rounds each)"
for round in $(seq 1 $ROUNDS); do
  for kind in pass translated; do
    extra=(); [ $kind = translated ] && extra=("${V1[@]}")
    c0=$(cpu $GW_PID)
    line=$("$UP" rate --url "$URL" --body "$(body_of $kind send1k)" --rate $RATE --secs $SECS --conns 16 \
      --expect "$(expect_of $kind)" "${extra[@]}" 2>>"$OUT/logs/rate.err")
    c1=$(cpu $GW_PID)
    ok=$(jnum "$line" ok); errors=$(jnum "$line" errors)
    [ "${errors:-1}" = 0 ] || { echo "FAILED: $kind: $line" >&2; exit 1; }
    us=$(cpu_us $((c1 - c0)) "$ok")
    CPU_US[$kind]="${CPU_US[$kind]:-} $us"
    echo "    round $round $kind: $ok calls, $us us CPU/call"
  done
done
cpu_pass=$(median <<<"${CPU_US[pass]}"); cpu_tr=$(median <<<"${CPU_US[translated]}")
cpu_ratio=$(awk -v a="$cpu_tr" -v b="$cpu_pass" 'BEGIN {printf "%.2f", a / b}')

declare -A TTFE
echo "==> stream time to first event ($STREAMS streams one at a time, $ROUNDS rounds each)"
for round in $(seq 1 $ROUNDS); do
  for kind in pass translated; do
    extra=(); [ $kind = translated ] && extra=("${V1[@]}")
    line=$("$UP" sse --url "$URL" --body "$(body_of $kind stream)" --streams $STREAMS --conns 1 --events 10 \
      "${extra[@]}" 2>>"$OUT/logs/sse.err")
    [ "$(jnum "$line" errors)" = 0 ] || { echo "FAILED: sse $kind: $line" >&2; exit 1; }
    p99=$(jnum "$line" ttfe_p99_us)
    TTFE[$kind]="${TTFE[$kind]:-} $p99"
    echo "    round $round $kind: first event p50 $(jnum "$line" ttfe_p50_us) us, p99 $p99 us"
  done
done
ttfe_pass=$(median <<<"${TTFE[pass]}"); ttfe_tr=$(median <<<"${TTFE[translated]}")
ttfe_diff=$(awk -v a="$ttfe_tr" -v b="$ttfe_pass" 'BEGIN {printf "%.3f", (a - b) / 1000}')

declare -A IDLE_KB
# Each kind gets a fresh gateway, warmed up the same way, so memory the
# other kind's run left in the allocator cannot hide what streams cost.
echo "==> memory per idle stream ($IDLE held open, a fresh gateway each)"
for kind in pass translated; do
  extra=(); [ $kind = translated ] && extra=("${V1[@]}")
  stop_gateway; start_gateway
  "$UP" rate --url "$URL" --body "$(body_of $kind send1k)" --rate 200 --secs 0.5 --conns 4 \
    --expect "$(expect_of $kind)" "${extra[@]}" >/dev/null
  "$UP" sse --url "$URL" --body "$(body_of $kind stream)" --streams 20 --conns 4 --events 10 \
    "${extra[@]}" >/dev/null
  sleep 1
  before=$(rss $GW_PID)
  "$UP" idle --url "$URL" --body "$(body_of $kind stream)" --streams $IDLE --hold 120 \
    -H 'x-bench-events: hold' "${extra[@]}" >"$OUT/idle-$kind.json" 2>>"$OUT/logs/idle.err" & idle=$!
  for _ in $(seq 600); do [ -s "$OUT/idle-$kind.json" ] && break; sleep 0.1; done
  sleep 1
  during=$(rss $GW_PID)
  kill $idle 2>/dev/null || true; wait $idle 2>/dev/null || true
  opened=$(jnum "$(cat "$OUT/idle-$kind.json")" opened)
  [ "${opened:-0}" = "$IDLE" ] || { echo "FAILED: idle $kind opened ${opened:-0} of $IDLE" >&2; exit 1; }
  IDLE_KB[$kind]=$(awk -v a="$during" -v b="$before" -v n="$IDLE" 'BEGIN {printf "%.2f", (a - b) / n}')
  echo "    $kind: RSS $before -> $during kB, ${IDLE_KB[$kind]} kB/stream"
done
idle_ratio=$(awk -v a="${IDLE_KB[translated]}" -v b="${IDLE_KB[pass]}" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')

verdict() { awk -v v="$1" -v l="$2" 'BEGIN {print (v <= l ? "met" : "MISSED")}'; }
{
  echo "| row | pass-through | translated | result | budget | |"
  echo "|---|---|---|---|---|---|"
  echo "| CPU per message/send 1 KiB | ${cpu_pass} µs | ${cpu_tr} µs | ${cpu_ratio}× | ≤ 1.5× | $(verdict "$cpu_ratio" 1.5) |"
  echo "| stream first event, p99 | ${ttfe_pass} µs | ${ttfe_tr} µs | +${ttfe_diff} ms | ≤ +0.2 ms | $(verdict "$ttfe_diff" 0.2) |"
  echo "| memory per idle stream | ${IDLE_KB[pass]} kB | ${IDLE_KB[translated]} kB | ${idle_ratio}× | ≤ 2× | $(verdict "$idle_ratio" 2) |"
} | tee "$OUT/results.md"
