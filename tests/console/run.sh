#!/usr/bin/env bash
# The console in a real browser (issue #68): Debian's chromium, headless,
# driven over the DevTools Protocol by tests/console/browser.py.
#
# 1. The demo (`a2a-gateway demo`): every view checked against the admin
#    endpoints, "Try it" streaming in 1.0 and 0.3 JSON-RPC, 1.0 HTTP+JSON
#    and 1.0 gRPC, the calls view live, a screenshot of each view.
# 2. A gateway with console sign-in ([console] auth, a basic scheme) in
#    front of the demo's weather agent... and a hostile agent
#    (hostile_agent.py) whose card and skills carry <script>, <img
#    onerror> and <svg onload>: the page must ask to sign in first, then
#    show every hostile string as text, run none of it, and break no CSP.
#
# Screenshots go to $CONSOLE_OUT (default tests/console/out). Loopback
# only; every wait is bounded. Exit 1 if a check fails, 2 if setup does.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
GW_BIN="${GW_BIN:-$ROOT/target/debug/a2a-gateway}"
OUT="${CONSOLE_OUT:-$HERE/out}"
rm -rf "$OUT"; mkdir -p "$OUT"
PIDS=()
WORK=$(mktemp -d)
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM
die() { echo "SETUP FAILED: $*" >&2; exit 2; }
[ -x "$GW_BIN" ] || die "no gateway binary at $GW_BIN (build it first)"
command -v chromium >/dev/null || die "chromium is not installed (apt-get install chromium)"
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 1 80); do curl -fsS -m 1 "$1" >/dev/null 2>&1 && return 0; sleep 0.25; done; die "$2 did not come up ($1)"; }
status=0

echo "== 1: the demo"
DEMO=$(freeport); DEMO_ADMIN=$(freeport)
"$GW_BIN" demo --listen "127.0.0.1:$DEMO" --admin-listen "127.0.0.1:$DEMO_ADMIN" >"$OUT/demo.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$DEMO_ADMIN/readyz" "the demo"
grep -q "http://127.0.0.1:$DEMO_ADMIN/console" "$OUT/demo.log" || { echo "FAIL the demo does not print the console's URL"; status=1; }
timeout 600 python3 "$HERE/browser.py" --admin "http://127.0.0.1:$DEMO_ADMIN" --out "$OUT/demo" \
  --expect-agents weather,travel || status=1

echo "== 2: sign-in, and a hostile agent's card"
EVIL=$(freeport); GW=$(freeport); GW_ADMIN=$(freeport)
python3 "$HERE/hostile_agent.py" --port "$EVIL" --max-seconds 900 & PIDS+=($!)
wait_http "http://127.0.0.1:$EVIL/.well-known/agent-card.json" "the hostile agent"
WEATHER=$(curl -fsS "http://127.0.0.1:$DEMO_ADMIN/admin/fleet" | python3 -c 'import json,sys; print([a for a in json.load(sys.stdin)["agents"] if a["name"] == "weather"][0]["urls"][0])')
# A test-only credential, ops:console-pass (bcrypt, cost 4).
cat >"$WORK/gateway.toml" <<TOML
[server]
listen = "127.0.0.1:$GW"
admin_listen = "127.0.0.1:$GW_ADMIN"

[auth.schemes.ops]
type = "http"
scheme = "basic"
users = [ { name = "ops", password_hash = '\$2b\$04\$PMpaCXIEgwV6IF4g4v2FTuTGTlN8fdaNhGpXMSpcDwAp.d1BmiTIK' } ]

[console]
auth = ["ops"]

[[upstreams]]
name = "weather"
url = "$WEATHER"

[[upstreams]]
name = "evil"
url = "http://127.0.0.1:$EVIL/"
TOML
"$GW_BIN" run --config "$WORK/gateway.toml" >"$OUT/gateway.log" 2>&1 & PIDS+=($!)
wait_http "http://127.0.0.1:$GW_ADMIN/readyz" "the signing-in gateway"
timeout 600 python3 "$HERE/browser.py" --admin "http://127.0.0.1:$GW_ADMIN" --out "$OUT/hostile" \
  --expect-agents weather,evil --hostile evil --sign-in ops:console-pass \
  --try-credential ops=ops:console-pass --try-skill forecast || status=1
echo "console: screenshots in $OUT"
exit $status
