#!/usr/bin/env bash
# Interop harness: official A2A SDK clients x official SDK agents, directly,
# through one a2a-gateway at /agents/NAME, and through the gateway's fleet
# endpoint (routed by skill). Loopback only. See README.md.
#
#   bash tests/interop/run.sh [--expect FILE]
#
# Exit 0 unless setup fails (2). With --expect FILE (or INTEROP_EXPECT=FILE),
# exit 1 if any cell listed in FILE ("mode client agent op" per line) failed.
# INTEROP_CLIENTS="sdk1 js ..." runs only those clients; INTEROP_BUDGET (s,
# default 600) bounds the client runs, cells not reached count as failed.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="$HERE/out"; mkdir -p "$OUT"
GW_BIN="${GW_BIN:-$ROOT/target/debug/a2a-gateway}"
SDK1=1.3.0; SDK03=0.3.26
PY="${PYTHON:-python3}"
EXPECT="${INTEROP_EXPECT:-}"
BUDGET="${INTEROP_BUDGET:-600}"
read -ra CLIENTS <<<"${INTEROP_CLIENTS:-sdk1 sdk03 raw01 js js10 sdk1rest sdk03rest jsrest sdk1grpc sdk03grpc}"

while [ $# -gt 0 ]; do
  case $1 in
    --expect) EXPECT="${2:?--expect needs a file}"; shift 2;;
    --expect=*) EXPECT="${1#--expect=}"; shift;;
    -h|--help) sed -n '2,11p' "$0"; exit 0;;
    *) echo "unknown argument: $1" >&2; exit 2;;
  esac
done

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT INT TERM
die() { echo "SETUP FAILED: $*" >&2; exit 2; }
[ -z "$EXPECT" ] || [ -f "$EXPECT" ] || die "no expect file $EXPECT"
rm -f "$OUT"/client-*.err

# --- venvs (ignored folders), pinned SDKs ---------------------------------
mkvenv() { # dir pin
  local d="$HERE/$1"
  if ! "$d/bin/python" -c "import grpc, importlib.metadata as m, sys; sys.exit(m.version('a2a-sdk') != '$2')" 2>/dev/null; then
    echo "installing a2a-sdk==$2 into $1 ..."
    "$PY" -m venv --clear "$d" || die "venv $1 (on Debian: apt-get install python3-venv)"
    timeout 600 "$d/bin/pip" install -q "a2a-sdk[http-server,grpc]==$2" uvicorn httpx \
      >"$OUT/pip-$1.log" 2>&1 || die "pip install a2a-sdk==$2 (see $OUT/pip-$1.log)"
  fi
}
mkvenv .venv1 "$SDK1"
mkvenv .venv03 "$SDK03"
V1="$HERE/.venv1/bin/python"; V03="$HERE/.venv03/bin/python"

# --- @a2a-js/sdk (ignored node_modules), pinned by package-lock.json -------
case " ${CLIENTS[*]} " in *" js"*)
  command -v node >/dev/null && command -v npm >/dev/null ||
    die "the js clients need node and npm (or set INTEROP_CLIENTS without js)"
  JS_PIN=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['packages']['node_modules/@a2a-js/sdk']['version'])" \
    "$HERE/package-lock.json") || die "cannot read the @a2a-js/sdk pin from package-lock.json"
  JS_HAVE=$(node -p "require('$HERE/node_modules/@a2a-js/sdk/package.json').version" 2>/dev/null || true)
  if [ "$JS_HAVE" != "$JS_PIN" ]; then
    echo "installing @a2a-js/sdk@$JS_PIN into node_modules (npm ci) ..."
    (cd "$HERE" && timeout 600 npm ci --no-audit --no-fund) >"$OUT/npm.log" 2>&1 ||
      die "npm ci (see $OUT/npm.log)"
  fi;;
esac
[ -x "$GW_BIN" ] || die "no gateway binary at $GW_BIN (build it first)"

# --- processes ------------------------------------------------------------
freeport() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { # url name
  for _ in $(seq 1 60); do curl -fsS -m 1 "$1" >/dev/null 2>&1 && return 0; sleep 0.25; done
  die "$2 did not come up ($1)"
}
start() { # logname cmd...
  local log="$OUT/$1.log"; shift
  "$@" >"$log" 2>&1 & PIDS+=($!)
}

# Each agent has its own skill id (echo-NAME), so the fleet can route to it,
# and signs its echoes "(by echo-NAME)".
AGENTS=(v1 v1compat v03 v1rest v03rest v1grpc v03grpc)
declare -A PORT
for a in "${AGENTS[@]}"; do PORT[$a]=$(freeport); done
start agent-v1       "$V1"  "$HERE/agents/agent_v1.py"  --port "${PORT[v1]}" --skill echo-v1
start agent-v1compat "$V1"  "$HERE/agents/agent_v1.py"  --port "${PORT[v1compat]}" --compat --skill echo-v1compat
start agent-v03      "$V03" "$HERE/agents/agent_v03.py" --port "${PORT[v03]}" --skill echo-v03
start agent-v1rest   "$V1"  "$HERE/agents/agent_v1.py"  --port "${PORT[v1rest]}" --rest --skill echo-v1rest
start agent-v03rest  "$V03" "$HERE/agents/agent_v03.py" --port "${PORT[v03rest]}" --rest --skill echo-v03rest
start agent-v1grpc   "$V1"  "$HERE/agents/agent_v1.py"  --port "${PORT[v1grpc]}" --grpc --skill echo-v1grpc
start agent-v03grpc  "$V03" "$HERE/agents/agent_v03.py" --port "${PORT[v03grpc]}" --grpc --skill echo-v03grpc
for a in "${AGENTS[@]}"; do wait_http "http://127.0.0.1:${PORT[$a]}/.well-known/agent-card.json" "agent $a"; done

GW=$(freeport); GWA=$(freeport)
UP=(); for a in "${AGENTS[@]}"; do UP+=(--upstream "$a=http://127.0.0.1:${PORT[$a]}"); done
start gateway "$GW_BIN" run --listen "127.0.0.1:$GW" --admin-listen "127.0.0.1:$GWA" \
  --public-url "http://127.0.0.1:$GW" "${UP[@]}"
wait_http "http://127.0.0.1:$GWA/readyz" "gateway"

# Fleet: the skill id each agent has in the published fleet card (the card
# renames ids two agents share to NAME/ID, so look them up, do not assume).
curl -fsS -m 5 "http://127.0.0.1:$GW/.well-known/agent-card.json" >"$OUT/fleet-card.json" ||
  die "no fleet card at http://127.0.0.1:$GW/.well-known/agent-card.json"
declare -A SKILL
for a in "${AGENTS[@]}"; do
  SKILL[$a]=$("$PY" -c '
import json, sys
ids = [s["id"] for s in json.load(open(sys.argv[1])).get("skills", [])]
want = "echo-" + sys.argv[2]
print(next(i for i in ids if i == want or i.endswith("/" + want)))' \
    "$OUT/fleet-card.json" "$a") || die "fleet card has no skill echo-$a (see $OUT/fleet-card.json)"
done

# --- clients x agents -----------------------------------------------------
client_cmd() { case $1 in
  sdk1) echo "$V1 $HERE/clients/client_v1.py";;
  sdk03) echo "$V03 $HERE/clients/client_v03.py";;
  raw01) echo "$V1 $HERE/clients/client_raw01.py";;
  js) echo "node $HERE/clients/client_js.mjs";;
  js10) echo "node $HERE/clients/client_js.mjs --no-compat";;
  sdk1rest) echo "$V1 $HERE/clients/client_v1.py --rest --trace";;
  sdk1grpc) echo "$V1 $HERE/clients/client_v1.py --grpc";;
  sdk03grpc) echo "$V03 $HERE/clients/client_v03.py --grpc";;
  sdk03rest) echo "$V03 $HERE/clients/client_v03.py --rest";;
  jsrest) echo "node $HERE/clients/client_js.mjs --rest --trace";;
  *) return 1;; esac; }
for c in "${CLIENTS[@]}"; do client_cmd "$c" >/dev/null || die "unknown client $c"; done

RESULTS="$OUT/results.jsonl"; : >"$RESULTS"
deadline=$((SECONDS + BUDGET))
for mode in direct gateway fleet; do
  for c in "${CLIENTS[@]}"; do
    for a in "${AGENTS[@]}"; do
      # Directly, a REST client needs the agent's HTTP+JSON interface,
      # which only the REST agents serve, and a gRPC client the gRPC agent's
      # (the gateway's cards offer every binding for every agent).
      case $mode/$c/$a in
        direct/*rest/*rest) ;;
        direct/*rest/*) continue;;
        direct/*grpc/*grpc) ;;
        direct/*grpc/*) continue;;
      esac
      extra=()
      case $mode in
        direct) base="http://127.0.0.1:${PORT[$a]}";;
        gateway) base="http://127.0.0.1:$GW/agents/$a";;
        fleet) base="http://127.0.0.1:$GW"; extra=(--skill "${SKILL[$a]}");;
      esac
      left=$((deadline - SECONDS))
      if [ $left -le 0 ]; then
        line='{"card_url":"","ops":{"send":"FAIL: not run, INTEROP_BUDGET exhausted"}}'
      else
        [ $left -gt 120 ] && left=120
        line=$(cd "$HERE/clients" && timeout "$left" $(client_cmd "$c") "$base" "${extra[@]}" \
          2>>"$OUT/client-$c-$a-$mode.err" | tail -1)
        [ -n "$line" ] || line='{"card_url":"","ops":{"send":"FAIL: client crashed or timed out"}}'
      fi
      printf '{"mode":"%s","client":"%s","agent":"%s","base":"%s","r":%s}\n' \
        "$mode" "$c" "$a" "$base" "$line" >>"$RESULTS"
    done
  done
done

"$PY" "$HERE/matrix.py" "$RESULTS" | tee "$OUT/matrix.md"
n=$(grep -c 'access request_id' "$OUT/gateway.log" 2>/dev/null || true)
echo; echo "gateway access-log lines (requests that went through the gateway): ${n:-0}"
[ -z "$EXPECT" ] && exit 0
"$PY" "$HERE/matrix.py" "$RESULTS" --expect "$EXPECT"
