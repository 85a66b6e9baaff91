#!/usr/bin/env bash
# The push relay's memory with 10,000 notifications queued (issue #67,
# docs/push-relay.md). A gateway with [push_relay] whose queues hold
# 10,000 (one destination), and a client webhook that never takes them:
# its port accepts no connection, and the first delivery waits out a
# long back-off, so every later notification stays queued. Posted as the
# agent would, 1 KiB each, to the callback:
#   queued   10,000 posted: the gateway's resident memory grows by about
#            the notifications' own bytes (budget <= 3x their bodies)
#   bounded  6 x 10,000 more: the oldest are dropped and counted, and
#            resident memory stays bounded: no round more above the
#            10,000-queued figure than those 10,000 took. (malloc's arenas
#            grow over a few rounds, at moments that differ from run to run:
#            new jobs are made before the oldest are freed, on either worker
#            thread. The last rounds against the first are shown, not gated.)
# The CPU a relayed notification costs is the ledger's push-relayed row
# (bench/ledger.sh, budget <= 2x jsonrpc-1.0).
#
#   bash bench/push.sh           release build (target/release, as the ledger)
#   BIN=DIR bash bench/push.sh   binaries from DIR (no build)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=bench/out/push
rm -rf "$OUT"; mkdir -p "$OUT/logs"
if [ -z "${BIN:-}" ]; then
  cargo build --quiet --locked --release --bin a2a-gateway --example bench-upstream
  BIN=target/release
fi
GW=$BIN/a2a-gateway; UP=$BIN/examples/bench-upstream
source bench/lib.sh
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM
rss() { awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$1/status"; }
metric() { curl -fsS -m 2 "$ADMIN_URL/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

AGENT=$(freeport); CLOSED=$(freeport); PORT=$(freeport); ADMIN=$(freeport)
"$UP" serve "$AGENT" 2>"$OUT/logs/agent.log" & PIDS+=($!)
wait_http "http://127.0.0.1:$AGENT/.well-known/agent-card.json"
openssl rand -base64 32 >"$OUT/relay.key"
cat >"$OUT/gateway.toml" <<EOF
[log]
level = "warn"
[push_guard]
allow_http = true
allow_cidrs = ["127.0.0.0/8"]
[push_relay]
enabled = true
callback_base = "http://127.0.0.1:$PORT"
per_config_per_second = 1000000
queue_per_destination = 10000
max_queued = 10000
backoff = "60s"
max_backoff = "60s"
max_attempts = 2
[[push_relay.keys]]
kid = "bench"
file = "$OUT/relay.key"
[[upstreams]]
name = "agent"
url = "http://127.0.0.1:$AGENT/"
EOF
"$GW" run --config "$OUT/gateway.toml" --listen "127.0.0.1:$PORT" \
  --admin-listen "127.0.0.1:$ADMIN" 2>"$OUT/logs/gateway.log" & PIDS+=($!)
GW_PID=$!
ADMIN_URL="http://127.0.0.1:$ADMIN"
wait_http "$ADMIN_URL/readyz"
read -r ID TOKEN <<<"$("$UP" push-callback "$OUT/relay.key" bench "http://127.0.0.1:$CLOSED/hook")"
python3 - "$OUT/push.json" <<'EOF'
import json, sys
text = "x" * 900
body = {"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {
    "state": "TASK_STATE_WORKING", "message": {"messageId": "m", "role": "ROLE_AGENT",
    "parts": [{"text": text}]}}}}
open(sys.argv[1], "w").write(json.dumps(body))
EOF
BODY=$(stat -c %s "$OUT/push.json")
post() { # calls
  "$UP" seq --url "http://127.0.0.1:$PORT/push/$ID" --body "$OUT/push.json" \
    -H "x-a2a-notification-token:$TOKEN" --expect queued --calls "$1" \
    >>"$OUT/logs/seq.log" 2>>"$OUT/logs/seq.err"
}
# Warm-up: the connection, the first delivery (now waiting out its back-off).
post 100
sleep 0.5
before=$(rss "$GW_PID")
post 10000
sleep 0.5
queued=$(metric a2a_gateway_push_relay_queued)
after=$(rss "$GW_PID")
# Three rounds more: the first may find malloc's arenas short (new jobs are
# made before the oldest are freed, on whichever thread); the later ones
# must find the memory the first left.
rounds=""
for _ in 1 2 3 4 5 6; do
  post 10000
  sleep 0.5
  rounds="$rounds $(rss "$GW_PID")"
done
echo "resident after 10,000 queued: $after; after each 10,000 more:$rounds" >"$OUT/logs/rounds.txt"
dropped=$(metric a2a_gateway_push_relay_dropped_total)
python3 - "$before" "$after" "$queued" "$dropped" "$BODY" $rounds <<'EOF' | tee "$OUT/results.md"
import sys
before, after, queued, dropped, body = (float(v or 0) for v in sys.argv[1:6])
rounds = [float(v) for v in sys.argv[6:]]
grew, more = after - before, max(rounds) - after
first, last = max(rounds[:3]), max(rounds[3:])
per = grew / 10000
print("| what | value | budget |")
print("|---|---:|---:|")
print(f"| notification body | {body:.0f} B | |")
print(f"| queued after 10,000 posts | {queued:.0f} | 10,000 |")
print(f"| resident memory for them | {grew / 2**20:.1f} MiB ({per:.0f} B each) | <= 3x the bodies |")
print(f"| dropped after 60,000 more | {dropped:.0f} | about 60,000 |")
print(f"| resident memory, peak of all rounds | {more / 2**20:+.1f} MiB ({more * 100 / max(after, 1):+.1f} %) | <= what the 10,000 took |")
print(f"| last three rounds against the first three | {(last - first) * 100 / first:+.1f} % | (shown) |")
ok = (queued >= 9900 and per <= 3 * body and dropped >= 59000
      and more <= grew)
print("push relay memory:", "within budget" if ok else "OVER BUDGET")
sys.exit(0 if ok else 1)
EOF
