#!/usr/bin/env bash
# Signed cards (issue #66), checked by the official SDKs' own verifiers:
# a gateway with [card.signing] in front of an a2a-sdk 1.x agent; a2a-sdk
# 1.3.0's and 0.3.26's card resolvers fetch the fleet card, the agent's
# card at /agents/NAME and the extended card with their signature
# verifiers (keys from the gateway's JWKS), and tampered copies are refused
# (clients/verify_card.py, run in each SDK's venv). Loopback only.
# Uses the venvs of run.sh, adding the SDKs' signing extra (PyJWT, pinned)
# when it is missing. Exit 1 if a check fails, 2 if setup does.
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

# An ES256 key, made here (PKCS#8 PEM, as the gateway reads it).
"$V1" - "$WORK/card.pem" <<'PY' || die "cannot make a key"
import sys
from cryptography.hazmat.primitives import serialization as s
from cryptography.hazmat.primitives.asymmetric import ec
key = ec.generate_private_key(ec.SECP256R1())
open(sys.argv[1], "wb").write(key.private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption()))
PY

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
(cd "$HERE/clients" && timeout 120 "$V1" verify_card.py "http://127.0.0.1:$GW" "${PATHS[@]}") || failed=1
(cd "$HERE/clients" && timeout 120 "$V03" verify_card.py "http://127.0.0.1:$GW" "${PATHS[@]}") || failed=1
exit $failed
