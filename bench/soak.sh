#!/usr/bin/env bash
# Bounded soak of a release gateway in front of a mock upstream, on loopback.
#
#   bash bench/soak.sh                     # 10 minutes
#   SOAK_SECONDS=150 bash bench/soak.sh    # shorter
#
# Mixed traffic (bench/soak/drive.py): unary calls and their follow-ups, SSE
# streams, card fetches, bad input of every class (malformed JSON, unknown
# methods, invalid params, batches, wrong media type, oversized bodies,
# wrong HTTP methods) and abandoned connections (mid-head, mid-body, before
# the answer, mid-stream). Every SOAK_INTERVAL seconds the gateway's RSS
# (/proc/PID/status VmRSS), open fds (/proc/PID/fd) and the error counts are
# recorded; at the end the series and a verdict are printed. Exit status 1
# if RSS or fds did not end flat (last-quarter mean within SOAK_RSS_TOLERANCE
# (10 %) / SOAK_FD_SLACK (5) fds of the second-quarter mean; the first
# quarter is warm-up), or if any good request failed.
#
# SOAK_MIX sends only some traffic classes, e.g. SOAK_MIX=stream or
# SOAK_MIX=bad,abandon (classes: unary, stream, card, bad, method, abandon),
# to find which one a trend comes from. SOAK_OUT changes the output directory
# (default bench/out/soak), so soaks of different classes can run side by side.
# SOAK_CONFIG names another gateway config (default bench/soak/gateway.toml).
# Everything it starts is killed on exit; the upstream is bench/upstream.rs
# (`cargo run --release --example bench-upstream -- serve PORT`) when it
# exists, else the stdlib mock in bench/soak/drive.py. Output also goes to
# bench/out/soak/ (gitignored).
set -euo pipefail
cd "$(dirname "$0")/.."

SOAK_SECONDS="${SOAK_SECONDS:-600}"
SOAK_INTERVAL="${SOAK_INTERVAL:-$(( SOAK_SECONDS >= 300 ? 10 : 5 ))}"
SOAK_WORKERS="${SOAK_WORKERS:-6}"
SOAK_RSS_TOLERANCE="${SOAK_RSS_TOLERANCE:-0.10}"
SOAK_FD_SLACK="${SOAK_FD_SLACK:-5}"
SOAK_CONFIG="${SOAK_CONFIG:-bench/soak/gateway.toml}"
SOAK_MIX="${SOAK_MIX:-unary,stream,card,bad,method,abandon}"
OUT="${SOAK_OUT:-bench/out/soak}"
mkdir -p "$OUT"

PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    # Bounded wait, then no mercy.
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

wait_http() { # url seconds
  local deadline=$(( $(date +%s) + $2 ))
  until python3 - "$1" <<'EOF' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=2).read()
EOF
  do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}

echo "==> build (release)"
if [ -f bench/upstream.rs ] && grep -q 'bench-upstream' Cargo.toml; then
  cargo build --quiet --release --bin a2a-gateway --example bench-upstream
  UPSTREAM=(target/release/examples/bench-upstream serve)
  UPSTREAM_NAME="bench/upstream.rs (release)"
else
  cargo build --quiet --release --bin a2a-gateway
  UPSTREAM=(python3 bench/soak/drive.py serve --port)
  UPSTREAM_NAME="bench/soak/drive.py serve (stdlib)"
fi

UPORT=$(free_port); GPORT=$(free_port); GADMIN=$(free_port)
"${UPSTREAM[@]}" "$UPORT" >"$OUT/upstream.log" 2>&1 &
PIDS+=("$!")
wait_http "http://127.0.0.1:$UPORT/.well-known/agent-card.json" 30 \
  || { echo "the upstream did not start (see $OUT/upstream.log)" >&2; exit 1; }

target/release/a2a-gateway run --config "$SOAK_CONFIG" \
  --listen "127.0.0.1:$GPORT" --admin-listen "127.0.0.1:$GADMIN" \
  --upstream "soak=http://127.0.0.1:$UPORT" >"$OUT/gateway.log" 2>&1 &
GW_PID=$!
PIDS+=("$GW_PID")
wait_http "http://127.0.0.1:$GADMIN/readyz" 30 \
  || { echo "the gateway did not become ready (see $OUT/gateway.log)" >&2; exit 1; }

echo "==> soak: ${SOAK_SECONDS}s, ${SOAK_WORKERS} client threads (traffic: $SOAK_MIX), a sample every ${SOAK_INTERVAL}s"
echo "    gateway pid $GW_PID on 127.0.0.1:$GPORT; upstream: $UPSTREAM_NAME on 127.0.0.1:$UPORT"
status=0
python3 bench/soak/drive.py load --gateway "127.0.0.1:$GPORT" --pid "$GW_PID" \
  --seconds "$SOAK_SECONDS" --interval "$SOAK_INTERVAL" --workers "$SOAK_WORKERS" \
  --rss-tolerance "$SOAK_RSS_TOLERANCE" --fd-slack "$SOAK_FD_SLACK" \
  --mix "$SOAK_MIX" --json "$OUT/soak.json" | tee "$OUT/soak.txt" || status=$?

if ! kill -0 "$GW_PID" 2>/dev/null; then
  echo "the gateway died during the soak (see $OUT/gateway.log)" >&2
  status=1
fi
if grep -qiE 'panicked|internal gateway error' "$OUT/gateway.log"; then
  echo "the gateway log reports a panic or an internal error:" >&2
  grep -iE 'panicked|internal gateway error' "$OUT/gateway.log" | head -n 5 >&2
  status=1
fi
exit "$status"
