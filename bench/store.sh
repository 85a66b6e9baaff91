#!/usr/bin/env bash
# The cost of sharing rate limits through Redis (issue #65,
# docs/rate-limit-store.md), side by side in one run: two gateways in front
# of one bench agent, both with one per-caller limit that is never hit, one
# keeping it in memory and one in a redis-server on loopback (Debian's
# package; the store's default per-call timeout, 5 ms). Both get the same
# 0.3 message/send of 1 KiB at 1,000 calls/s; their rounds alternate, so
# drift hits both alike. Rows, within the run:
#   cpu   gateway CPU per call                     budget <= 1.15x
#   p99   latency p99 at 1,000/s                   budget <= +0.3 ms
# and who decided: a round trip to the store, a lease this gateway held
# (docs/rate-limit-store.md, "Leases"), or the fallback (a late answer).
#
#   bash bench/store.sh          the dist build (bench/dist.sh): bench/out/store-full/
#   bash bench/store.sh --smoke  debug build, tiny counts: the harness works
set -euo pipefail
cd "$(dirname "$0")/.."

source bench/lib.sh
bench_mode store "$@"
command -v redis-server >/dev/null || { echo "bench/store.sh needs redis-server (apt-get install redis-server)" >&2; exit 1; }
bench_build
if [ $MODE = smoke ]; then
  RATE=100; SECS=1; ROUNDS=1
else
  RATE=1000; SECS=10; ROUNDS=5
fi

UPORT=$(freeport); RPORT=$(freeport)
"$UP" serve "$UPORT" 2>>"$OUT/logs/upstream.log" & PIDS+=($!)
redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no --loglevel warning \
  >>"$OUT/logs/redis.log" 2>&1 & RPID=$!; PIDS+=($RPID)
wait_http "http://127.0.0.1:$UPORT/.well-known/agent-card.json"

# The same config, with the limit in memory or in the store.
LIMIT='[rate_limits]
per_caller = { per_second = 1000000 }'
{ cat bench/gateway.toml; echo "$LIMIT"; } >"$OUT/memory.toml"
{ cat bench/gateway.toml; echo "$LIMIT"; printf '[rate_limits.store]\nurl = "redis://127.0.0.1:%s"\n' "$RPORT"; } >"$OUT/redis.toml"

declare -A PORT ADMIN PID
start_gateway() { # kind
  local kind=$1
  PORT[$kind]=$(freeport); ADMIN[$kind]=$(freeport)
  "$GW" run --config "$OUT/$kind.toml" --listen "127.0.0.1:${PORT[$kind]}" \
    --admin-listen "127.0.0.1:${ADMIN[$kind]}" --upstream "bench=http://127.0.0.1:$UPORT" \
    2>>"$OUT/logs/gateway-$kind.log" &
  PID[$kind]=$!; PIDS+=($!)
  wait_http "http://127.0.0.1:${ADMIN[$kind]}/readyz"
}
start_gateway memory
start_gateway redis

url_of() { echo "http://127.0.0.1:${PORT[$1]}/"; }
for kind in memory redis; do
  "$UP" rate --url "$(url_of $kind)" --body "$OUT/send1k.json" --rate 200 --secs 0.5 --conns 4 \
    --expect '"completed"' >/dev/null
done

declare -A CPU_US P99_US
REDIS_US=""
echo "==> $RATE calls/s for ${SECS}s, $ROUNDS rounds each"
for round in $(seq 1 $ROUNDS); do
  for kind in memory redis; do
    c0=$(cpu "${PID[$kind]}"); r0=$(cpu "$RPID")
    line=$("$UP" rate --url "$(url_of $kind)" --body "$OUT/send1k.json" --rate $RATE --secs $SECS \
      --conns 16 --expect '"completed"' 2>>"$OUT/logs/rate.err")
    c1=$(cpu "${PID[$kind]}"); r1=$(cpu "$RPID")
    ok=$(jnum "$line" ok); errors=$(jnum "$line" errors); p99=$(jnum "$line" p99_us)
    [ "${errors:-1}" = 0 ] || { echo "FAILED: $kind: $line" >&2; exit 1; }
    us=$(cpu_us $((c1 - c0)) "$ok")
    CPU_US[$kind]="${CPU_US[$kind]:-} $us"; P99_US[$kind]="${P99_US[$kind]:-} $p99"
    if [ $kind = redis ]; then
      REDIS_US="$REDIS_US $(cpu_us $((r1 - r0)) "$ok")"
    fi
    echo "    round $round $kind: $ok calls, $us us CPU/call, p99 $p99 us"
  done
done

metric() { curl -fsS "http://127.0.0.1:${ADMIN[redis]}/metrics" | sed -n "s/^a2a_gateway_rate_limit_decisions_total{result=\"allowed\",source=\"$1\"} //p"; }
by_store=$(metric store); by_lease=$(metric lease); by_local=$(metric local)
[ -n "$by_store" ] && [ "${by_store%.*}" -gt 0 ] || { echo "FAILED: the store decided nothing" >&2; exit 1; }

cpu_mem=$(median <<<"${CPU_US[memory]}"); cpu_red=$(median <<<"${CPU_US[redis]}")
p99_mem=$(median <<<"${P99_US[memory]}"); p99_red=$(median <<<"${P99_US[redis]}")
redis_us=$(median <<<"$REDIS_US")
ratio=$(awk -v a="$cpu_red" -v b="$cpu_mem" 'BEGIN {printf "%.2f", a / b}')
added=$(awk -v a="$p99_red" -v b="$p99_mem" 'BEGIN {printf "%+.3f", (a - b) / 1000}')
v_cpu=$(awk -v v="$ratio" 'BEGIN {print (v <= 1.15 ? "met" : "MISSED")}')
v_p99=$(awk -v v="$added" 'BEGIN {print (v <= 0.3 ? "met" : "MISSED")}')
{
  echo "| row | limit in memory | limit in Redis (loopback) | result | budget | |"
  echo "|---|---|---|---|---|---|"
  echo "| gateway CPU per 1 KiB send at $RATE/s | ${cpu_mem} µs | ${cpu_red} µs | ${ratio}× | ≤ 1.15× | $v_cpu |"
  echo "| p99 at $RATE/s | ${p99_mem} µs | ${p99_red} µs | ${added} ms | ≤ +0.3 ms | $v_p99 |"
  echo "| redis-server CPU per call | | ${redis_us} µs | | (not the gateway's) | |"
  echo "| decisions: round trips / lease units / fallback (late answers) | | ${by_store} / ${by_lease:-0} / ${by_local:-0} | | | |"
} | tee "$OUT/results.md"
