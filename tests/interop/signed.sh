#!/usr/bin/env bash
# Signed cards (issue #66), checked by the official SDK's own verifier:
# a gateway with [card.signing] in front of an a2a-sdk 1.x agent; a2a-sdk
# 1.3.0's card resolver fetches the fleet card and the agent's card at
# /agents/NAME with its signature verifier (keys from the gateway's JWKS),
# and tampered copies are refused (clients/verify_card_v1.py). Loopback
# only. Uses the venv of run.sh, adding the SDK's signing extra (PyJWT,
# pinned) when it is missing. Exit 1 if a check fails, 2 if setup does.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="$HERE/out"; mkdir -p "$OUT"
GW_BIN="${GW_BIN:-$ROOT/target/debug/a2a-gateway}"
SDK1=1.3.0; PYJWT=2.15.1
V1="$HERE/.venv1/bin/python"

PIDS=()
WORK=$(mktemp -d)
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM
die() { echo "SETUP FAILED: $*" >&2; exit 2; }
[ -x "$V1" ] || die "no $V1: run tests/interop/run.sh first (it makes the venv)"
[ -x "$GW_BIN" ] || die "no gateway binary at $GW_BIN (build it first)"
if ! "$V1" -c "import jwt, importlib.metadata as m, sys; sys.exit(m.version('PyJWT') != '$PYJWT')" 2>/dev/null; then
  echo "installing a2a-sdk[signing]==$SDK1 (PyJWT==$PYJWT) into .venv1 ..."
  timeout 600 "$HERE/.venv1/bin/pip" install -q "a2a-sdk[signing]==$SDK1" "PyJWT==$PYJWT" \
    >"$OUT/pip-signing.log" 2>&1 || die "pip install the signing extra (see $OUT/pip-signing.log)"
fi

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

(cd "$HERE/clients" && timeout 120 "$V1" verify_card_v1.py "http://127.0.0.1:$GW" \
  /.well-known/agent-card.json /agents/signed/.well-known/agent-card.json /extendedAgentCard)
