#!/usr/bin/env bash
# Signed cards (issue #66), with the official SDKs on both sides.
#
# Part 1, the gateway signs: a gateway with [card.signing] in front of an
# a2a-sdk 1.x agent; a2a-sdk 1.3.0's and 0.3.26's card resolvers fetch the
# fleet card, the agent's card at /agents/NAME and the extended card with
# their signature verifiers (keys from the gateway's JWKS), and tampered
# copies are refused (clients/verify_card.py, run in each SDK's venv).
#
# Part 2, the gateway verifies: a second gateway in front of five SDK agents
# that sign their own cards with their SDK's own signer (agents/*.py
# --sign-key), checked per upstream (card_signature, [upstreams.card_trust]
# with a JWKS file that trusts key T only): trusted1 (a2a-sdk 1.3.0, key T,
# required), trusted03 (a2a-sdk 0.3.26, key T, required), untrusted (1.3.0,
# key U, required) and unsigned (1.3.0, no signature, verify). The fleet card
# must leave out only untrusted's skill, /readyz must report each card's
# signature state, and calls must reach trusted1 but not untrusted (503).
#
# Loopback only. Keys are made here (keys.py). Uses the venvs of run.sh,
# adding the SDKs' signing extra (PyJWT, pinned) when it is missing. Logs
# and the documents checked are in out/signed*.  Exit 1 if a check fails,
# 2 if setup does.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="$HERE/out"; mkdir -p "$OUT"
GW_BIN="${GW_BIN:-$ROOT/target/debug/a2a-gateway}"
SDK1=1.3.0; SDK03=0.3.26; PYJWT=2.15.1
V1="$HERE/.venv1/bin/python"; V03="$HERE/.venv03/bin/python"

PIDS=()
WORK=$(mktemp -d)
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM
die() { echo "SETUP FAILED: $*" >&2; exit 2; }
[ -x "$GW_BIN" ] || die "no gateway binary at $GW_BIN (build it first)"
signing_extra() { # venv sdk-pin
  local py="$HERE/$1/bin/python"
  [ -x "$py" ] || die "no $py: run tests/interop/run.sh first (it makes the venv)"
  if ! "$py" -c "import jwt, importlib.metadata as m, sys; sys.exit(m.version('PyJWT') != '$PYJWT')" 2>/dev/null; then
    echo "installing a2a-sdk[signing]==$2 (PyJWT==$PYJWT) into $1 ..."
    timeout 600 "$HERE/$1/bin/pip" install -q "a2a-sdk[signing]==$2" "PyJWT==$PYJWT" \
      >"$OUT/pip-signing-$1.log" 2>&1 || die "pip install the signing extra (see $OUT/pip-signing-$1.log)"
  fi
}
signing_extra .venv1 "$SDK1"
signing_extra .venv03 "$SDK03"

freeport() { "$V1" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 1 60); do curl -fsS -m 1 "$1" >/dev/null 2>&1 && return 0; sleep 0.25; done; die "$2 did not come up ($1)"; }


# ===========================================================================
# Part 1: the gateway signs, the SDKs verify.
# ===========================================================================
echo "== part 1: cards the gateway signs, verified by the SDKs"
# An ES256 key, made here (PKCS#8 PEM, as the gateway reads it).
"$V1" "$HERE/keys.py" pem "$WORK/card.pem" || die "cannot make a key"

AGENT=$(freeport); GW=$(freeport); GWA=$(freeport)
"$V1" "$HERE/agents/agent_v1.py" --port "$AGENT" --compat --skill echo-signed >"$OUT/signed-agent.log" 2>&1 & PIDS+=($!)
wait_http "http://127.0.0.1:$AGENT/.well-known/agent-card.json" "the agent"
cat >"$WORK/gateway.toml" <<TOML
[card]
extended_card = true
[card.signing]
active = "interop-1"
[[card.signing.keys]]
kid = "interop-1"
alg = "ES256"
file = "$WORK/card.pem"
[[upstreams]]
name = "signed"
url = "http://127.0.0.1:$AGENT"
TOML
"$GW_BIN" run --config "$WORK/gateway.toml" --listen "127.0.0.1:$GW" --admin-listen "127.0.0.1:$GWA" \
  --public-url "http://127.0.0.1:$GW" >"$OUT/signed-gateway.log" 2>&1 & PIDS+=($!)
wait_http "http://127.0.0.1:$GWA/readyz" "the gateway"

PATHS=(/.well-known/agent-card.json /agents/signed/.well-known/agent-card.json /extendedAgentCard)
failed=0
(cd "$HERE/clients" && timeout 120 "$V1" verify_card.py "http://127.0.0.1:$GW" "${PATHS[@]}") || failed=$((failed + 1))
(cd "$HERE/clients" && timeout 120 "$V03" verify_card.py "http://127.0.0.1:$GW" "${PATHS[@]}") || failed=$((failed + 1))

# ===========================================================================
# Part 2: the agents sign (each with its SDK's own signer), the gateway
# verifies them per upstream.
# ===========================================================================
echo "== part 2: agents' own signed cards, verified by the gateway"
pass() { echo "PASS  $*"; }
fail() { echo "FAIL  $*"; failed=$((failed + 1)); }

# Keys: T is trusted (its public JWK is the whole jwks_file), U is not. U
# signs under T's kid, so the gateway finds a key for the kid and has to
# check the signature itself to refuse it.
KID=interop-trusted
"$V1" "$HERE/keys.py" pem "$WORK/T.pem" || die "cannot make key T"
"$V1" "$HERE/keys.py" pem "$WORK/U.pem" || die "cannot make key U"
"$V1" "$HERE/keys.py" jwks "$WORK/trusted.jwks.json" "$KID=$WORK/T.pem" || die "cannot write the JWKS"
cp "$WORK/trusted.jwks.json" "$OUT/signed2-trusted.jwks.json"

# The agents: name -> port, and how each is started. 0.3.26 has its own
# signer too (a2a.utils.signing, like 1.3.0's), so trusted03 is in. Note: it
# signs the card without members at their default value (protocolVersion
# "0.3.0", preferredTransport "JSONRPC"), which its served card does carry.
declare -A APORT
for a in trusted1 trusted1c trusted03 untrusted unsigned; do APORT[$a]=$(freeport); done
start_agent() { # name python script args...
  local name=$1; shift
  "$@" --port "${APORT[$name]}" >"$OUT/signed2-agent-$name.log" 2>&1 & PIDS+=($!)
}
start_agent trusted1  "$V1"  "$HERE/agents/agent_v1.py"  --skill sig-trusted-v1  --sign-key "$WORK/T.pem" --sign-kid "$KID"
# With --compat the 1.x agent also serves the 0.3 members its signature
# does not cover: the gateway verifies its 1.0 reading, as the SDK does.
start_agent trusted1c "$V1"  "$HERE/agents/agent_v1.py"  --skill sig-trusted-v1c --sign-key "$WORK/T.pem" --sign-kid "$KID" --compat
start_agent trusted03 "$V03" "$HERE/agents/agent_v03.py" --skill sig-trusted-v03 --sign-key "$WORK/T.pem" --sign-kid "$KID"
start_agent untrusted "$V1"  "$HERE/agents/agent_v1.py"  --skill sig-untrusted   --sign-key "$WORK/U.pem" --sign-kid "$KID"
start_agent unsigned  "$V1"  "$HERE/agents/agent_v1.py"  --skill sig-unsigned
for a in trusted1 trusted1c trusted03 untrusted unsigned; do
  wait_http "http://127.0.0.1:${APORT[$a]}/.well-known/agent-card.json" "agent $a (see $OUT/signed2-agent-$a.log)"
done

# Baseline, without the gateway: each SDK's own verifier, with the same JWKS
# file, accepts trusted1's and trusted03's cards and refuses untrusted's. If
# one of these fails, the agents are wrong, not the gateway.
direct() { # python name -> exit status of verify_card.py on that agent's card
  (cd "$HERE/clients" && timeout 60 "$1" verify_card.py --jwks "$WORK/trusted.jwks.json" \
    "http://127.0.0.1:${APORT[$2]}" /.well-known/agent-card.json) >"$OUT/signed2-direct-$2.log" 2>&1
}
if direct "$V1" trusted1; then pass "direct: a2a-sdk $SDK1 verifies trusted1's own card"
else fail "direct: a2a-sdk $SDK1 does not verify trusted1's own card (see $OUT/signed2-direct-trusted1.log)"; fi
if direct "$V03" trusted03; then pass "direct: a2a-sdk $SDK03 verifies trusted03's own card"
else fail "direct: a2a-sdk $SDK03 does not verify trusted03's own card (see $OUT/signed2-direct-trusted03.log)"; fi
if direct "$V1" untrusted; then fail "direct: a2a-sdk $SDK1 verifies untrusted's card with the trusted JWKS"
else pass "direct: a2a-sdk $SDK1 refuses untrusted's card"; fi

# The second gateway. A short card refresh, so that the cards (and their
# signatures) are checked again soon after start-up.
GW2=$(freeport); GWA2=$(freeport)
cat >"$WORK/gateway2.toml" <<TOML
[card_refresh]
interval = "1s"
timeout = "5s"

[[upstreams]]
name = "trusted1"
url = "http://127.0.0.1:${APORT[trusted1]}"
card_signature = "required"
[upstreams.card_trust]
jwks_file = "$WORK/trusted.jwks.json"

[[upstreams]]
name = "trusted1c"
url = "http://127.0.0.1:${APORT[trusted1c]}"
card_signature = "required"
[upstreams.card_trust]
jwks_file = "$WORK/trusted.jwks.json"

[[upstreams]]
name = "trusted03"
url = "http://127.0.0.1:${APORT[trusted03]}"
card_signature = "required"
[upstreams.card_trust]
jwks_file = "$WORK/trusted.jwks.json"

[[upstreams]]
name = "untrusted"
url = "http://127.0.0.1:${APORT[untrusted]}"
card_signature = "required"
[upstreams.card_trust]
jwks_file = "$WORK/trusted.jwks.json"

[[upstreams]]
name = "unsigned"
url = "http://127.0.0.1:${APORT[unsigned]}"
card_signature = "verify"
[upstreams.card_trust]
jwks_file = "$WORK/trusted.jwks.json"
TOML
cp "$WORK/gateway2.toml" "$OUT/signed2-gateway.toml"
"$GW_BIN" run --config "$WORK/gateway2.toml" --listen "127.0.0.1:$GW2" --admin-listen "127.0.0.1:$GWA2" \
  --public-url "http://127.0.0.1:$GW2" >"$OUT/signed2-gateway.log" 2>&1 & GW2PID=$!; PIDS+=($GW2PID)

# Up? (Not a setup failure: a gateway that refuses the config fails part 2.)
up=0
for _ in $(seq 1 60); do
  kill -0 "$GW2PID" 2>/dev/null || break
  curl -sS -m 1 -o /dev/null "http://127.0.0.1:$GWA2/readyz" 2>/dev/null && { up=1; break; }
  sleep 0.25
done
if [ $up = 0 ]; then
  fail "the second gateway did not come up (config $OUT/signed2-gateway.toml); its log ends:"
  tail -n 20 "$OUT/signed2-gateway.log" | sed 's/^/      /'
  echo "$failed check(s) failed"
  exit 1
fi

# /readyz: upstreams.NAME.card_signature.state, or "(none)"; with "all",
# the whole card_signature object.
READYZ="$OUT/signed2-readyz.json"
readyz() { curl -sS -m 2 "http://127.0.0.1:$GWA2/readyz" >"$READYZ" 2>/dev/null; }
sig_state() { # name [all]
  "$V1" - "$READYZ" "$@" <<'PY'
import json, sys
try:
    signature = json.load(open(sys.argv[1]))["upstreams"][sys.argv[2]]["card_signature"]
    print(json.dumps(signature) if sys.argv[3:] == ["all"] else signature["state"])
except Exception:
    print("(none)")
PY
}
# Wait (at most 15 s) until trusted1 shows "valid" and every upstream has
# been checked once.
for _ in $(seq 1 60); do
  readyz
  if [ "$(sig_state trusted1)" = valid ]; then
    settled=1
    for a in trusted1c trusted03 untrusted unsigned; do
      case $(sig_state "$a") in "(none)"|unchecked) settled=0;; esac
    done
    [ $settled = 1 ] && break
  fi
  sleep 0.25
done
readyz

# /readyz states.
for want in trusted1=valid trusted1c=valid trusted03=valid untrusted=invalid unsigned=unsigned; do
  a=${want%=*}; expect=${want#*=}; got=$(sig_state "$a")
  if [ "$got" = "$expect" ]; then pass "readyz: $a card_signature.state is $expect"
  else fail "readyz: $a card_signature.state is $got, not $expect: $(sig_state "$a" all)"; fi
done
# What each signature was found to cover: the card as served (1.x without
# compat members), the 1.0 reading (1.x with them), the 0.3 reading (0.3.x).
for want in trusted1=jcs trusted1c=a2a-1.0 trusted03=a2a-0.3; do
  a=${want%=*}; expect=${want#*=}
  got=$(sig_state "$a" all | "$V1" -c 'import json,sys; print(json.load(sys.stdin).get("covers"))' 2>/dev/null)
  if [ "$got" = "$expect" ]; then pass "readyz: $a's signature covers $expect"
  else fail "readyz: $a's signature covers $got, not $expect"; fi
done

# The fleet card: every skill but untrusted's.
FLEET="$OUT/signed2-fleet-card.json"
curl -sS -m 5 "http://127.0.0.1:$GW2/.well-known/agent-card.json" >"$FLEET" 2>/dev/null || : >"$FLEET"
has_skill() { # id -> exit 0 if the fleet card lists it (also as NAME/id)
  "$V1" - "$FLEET" "$1" <<'PY'
import json, sys
try:
    ids = [s["id"] for s in json.load(open(sys.argv[1])).get("skills", [])]
except Exception:
    sys.exit(2)
want = sys.argv[2]
sys.exit(0 if any(i == want or i.endswith("/" + want) for i in ids) else 1)
PY
}
for skill in sig-trusted-v1 sig-trusted-v1c sig-trusted-v03 sig-unsigned; do
  if has_skill "$skill"; then pass "fleet card lists $skill"
  else fail "fleet card does not list $skill (see $FLEET)"; fi
done
has_skill sig-untrusted; rc=$?
case $rc in
  0) fail "fleet card lists sig-untrusted (see $FLEET)";;
  1) pass "fleet card leaves out sig-untrusted";;
  *) fail "no fleet card to read (see $FLEET)";;
esac

# Calls: a JSON-RPC message/send (A2A 0.3) to each agent through the gateway.
send() { # name -> prints the HTTP status; the answer is in out/signed2-send-NAME.json
  curl -sS -m 10 -o "$OUT/signed2-send-$1.json" -w '%{http_code}' \
    -H 'content-type: application/json' \
    -d '{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"signed2-'"$1"'","parts":[{"kind":"text","text":"hello"}]}}}' \
    "http://127.0.0.1:$GW2/agents/$1/" 2>/dev/null || true
}
# Each admitted agent answers, read from the part of its card its signature
# covers (trusted03's 0.3 reading leaves out the defaults it was served with).
for want in trusted1=sig-trusted-v1 trusted1c=sig-trusted-v1c trusted03=sig-trusted-v03; do
  a=${want%=*}; skill=${want#*=}
  code=$(send "$a")
  if [ "$code" = 200 ] && grep -q "echo: hello (by $skill)" "$OUT/signed2-send-$a.json"; then
    pass "message/send to /agents/$a/ is answered by the agent"
  else fail "message/send to /agents/$a/: HTTP ${code:-none}, no echo (see $OUT/signed2-send-$a.json)"; fi
done
code=$(send untrusted)
if [ "$code" = 503 ]; then pass "message/send to /agents/untrusted/ is refused with 503"
else fail "message/send to /agents/untrusted/: HTTP ${code:-none}, not 503 (see $OUT/signed2-send-untrusted.json)"; fi

if [ $failed != 0 ]; then echo "$failed check(s) failed"; exit 1; fi
echo "all checks passed"
