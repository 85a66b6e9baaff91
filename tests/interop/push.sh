#!/usr/bin/env bash
# Push notifications through the gateway's push relay (issue #67), with the
# official SDKs on both sides.
#
#   bash tests/interop/push.sh [--direct] [--no-replicas]
#
# A webhook (receiver.py) records every POST. Two agents with --push, one on
# a2a-sdk 1.3.0 (agents/agent_v1.py) and one on 0.3.26 (agents/agent_v03.py),
# push with their SDK's own sender. One gateway, with [push_guard] letting
# loopback http webhooks through and [push_relay] on (callback_base: the
# gateway itself), serves both at /agents/v1 and /agents/v03. Four pairs,
# client SDK -> agent: 1.0->1.0, 1.0->0.3, 0.3->1.0, 0.3->0.3. Each client
# (clients/push_client.py, in its SDK's venv) sends a message with a push
# config (webhook /hook/PAIR, its own token and Authorization credentials),
# reads the config back (get and list must show its webhook, not the
# gateway's callback), and waits for the completed task at its webhook: the
# client's token in X-A2A-Notification-Token, its Authorization, the body in
# the CLIENT's version (0.3: a Task, "kind": "task"; 1.0: a StreamResponse).
# Then, in the agent's venv, push_client.py --agent-side checks that the agent
# holds the gateway's callback (http://GW/push/...) with a token of its own.
#
# Then a replica killed between the config being set and the delivery (skip
# it with --no-replicas). Two more gateways, A and B, share the relay key and
# the upstreams, and both have callback_base = B (B plays the Service in front
# of the replicas that survive). Two more agents, 1.3.0 and 0.3.26, run with
# --push-delay (PUSH_DELAY, default 10 s: each task waits that long before it
# completes). For the four pairs at once, the client sends through A,
# NON-blocking (push_client.py --send-only: the task comes back not yet
# completed; get and list through A show its webhook), and the agent must hold
# a callback under B (--agent-side). Then A gets SIGKILL and must be gone, and
# each client's completed task must reach its webhook within 15 s, after the
# kill (so through B), with its token, Authorization and version's shape
# (push_client.py --wait-only TASK --after T, T the receiver's clock at the
# kill).
#
# --direct: no gateway; the same clients straight to the agents, same-version
# pairs only (the baseline: the agents push, the checks are right; the 1.0
# pair also checks Authorization, which a2a-sdk 0.3.26's sender never sends).
# No replica part.
#
# Loopback only; every wait is bounded. Uses the venvs of run.sh. Logs, the
# gateway configs and the receiver's records are in out/push*. Prints
# "push: N passed, M failed"; exit 1 if a check fails, 2 if setup does.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="$HERE/out"; mkdir -p "$OUT"
GW_BIN="${GW_BIN:-$ROOT/target/debug/a2a-gateway}"
V1="$HERE/.venv1/bin/python"; V03="$HERE/.venv03/bin/python"
MODE=gateway; REPLICAS=1
PUSH_DELAY="${PUSH_DELAY:-10}"
while [ $# -gt 0 ]; do
  case $1 in
    --direct) MODE=direct; shift;;
    --no-replicas) REPLICAS=0; shift;;
    -h|--help) sed -n '2,43p' "$0"; exit 0;;
    *) echo "unknown argument: $1" >&2; exit 2;;
  esac
done

PIDS=()
WORK=$(mktemp -d)
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM
die() { echo "SETUP FAILED: $*" >&2; exit 2; }
for py in "$V1" "$V03"; do
  [ -x "$py" ] || die "no $py: run tests/interop/run.sh first (it makes the venvs)"
done
[ $MODE = direct ] || [ -x "$GW_BIN" ] || die "no gateway binary at $GW_BIN (build it first)"
[ $MODE = gateway ] || REPLICAS=0
rm -f "$OUT"/push-*

freeport() { "$V1" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 1 60); do curl -fsS -m 1 "$1" >/dev/null 2>&1 && return 0; sleep 0.25; done; die "$2 did not come up ($1)"; }

# --- the webhook and the agents ----------------------------------------------
RECV=$(freeport)
"$V1" "$HERE/receiver.py" "$RECV" >"$OUT/push-receiver.log" 2>&1 & PIDS+=($!)
wait_http "http://127.0.0.1:$RECV/received" "the receiver (see $OUT/push-receiver.log)"

declare -A APORT APY
APORT[v1]=$(freeport); APORT[v03]=$(freeport); APY[v1]=$V1; APY[v03]=$V03
"$V1"  "$HERE/agents/agent_v1.py"  --port "${APORT[v1]}"  --push --skill push-v1  >"$OUT/push-agent-v1.log" 2>&1 & PIDS+=($!)
"$V03" "$HERE/agents/agent_v03.py" --port "${APORT[v03]}" --push --skill push-v03 >"$OUT/push-agent-v03.log" 2>&1 & PIDS+=($!)
# The replica part's agents, late to complete (started now, used last).
declare -A DPORT
if [ $REPLICAS = 1 ]; then
  DPORT[v1]=$(freeport); DPORT[v03]=$(freeport)
  "$V1"  "$HERE/agents/agent_v1.py"  --port "${DPORT[v1]}"  --push --push-delay "$PUSH_DELAY" \
    --skill push-late-v1  >"$OUT/push-replica-agent-v1.log" 2>&1 & PIDS+=($!)
  "$V03" "$HERE/agents/agent_v03.py" --port "${DPORT[v03]}" --push --push-delay "$PUSH_DELAY" \
    --skill push-late-v03 >"$OUT/push-replica-agent-v03.log" 2>&1 & PIDS+=($!)
fi
for a in v1 v03; do
  wait_http "http://127.0.0.1:${APORT[$a]}/.well-known/agent-card.json" "agent $a (see $OUT/push-agent-$a.log)"
done

passed=0; failed=0
count() { # log -> adds its PASS/FAIL lines to the totals
  local p f
  p=$(grep -c '^PASS' "$1"); f=$(grep -c '^FAIL' "$1")
  passed=$((passed + p)); failed=$((failed + f))
}
fail() { echo "FAIL  $*"; failed=$((failed + 1)); }
pass() { echo "PASS  $*"; passed=$((passed + 1)); }
# report LOG RC WHAT: prints and counts LOG's PASS/FAIL lines; a non-zero RC
# with no FAIL line is a failure of its own.
report() {
  grep -E '^(PASS|FAIL)' "$1"
  count "$1"
  if [ "$2" != 0 ] && ! grep -q '^FAIL' "$1"; then
    fail "$3 exited $2 without a FAIL line (see ${1%.log}.err)"
  fi
}
summary() {
  curl -sS -m 5 "http://127.0.0.1:$RECV/received" >"$OUT/push-received.json" 2>/dev/null
  echo "push: $passed passed, $failed failed ($MODE mode; logs in $OUT/push-*)"
  [ $failed = 0 ]; exit $?
}

# --- the gateway ---------------------------------------------------------------
# gw_config PORT ADMIN_PORT CALLBACK_BASE V1_PORT V03_PORT > FILE
gw_config() {
  cat <<TOML
[server]
listen = "127.0.0.1:$1"
admin_listen = "127.0.0.1:$2"
public_url = "http://127.0.0.1:$1"

[push_guard]
allow_http = true
allow_cidrs = ["127.0.0.0/8"]

[push_relay]
enabled = true
callback_base = "$3"
[[push_relay.keys]]
kid = "k1"
file = "$WORK/relay.key"

[[upstreams]]
name = "v1"
url = "http://127.0.0.1:$4"

[[upstreams]]
name = "v03"
url = "http://127.0.0.1:$5"
TOML
}
# gw_up PID ADMIN_PORT WHAT CONFIG LOG: waits (bounded) for its /readyz; if it
# does not come up, that fails the test (not setup) and ends the run.
gw_up() {
  for _ in $(seq 1 60); do
    kill -0 "$1" 2>/dev/null || break
    curl -fsS -m 1 -o /dev/null "http://127.0.0.1:$2/readyz" 2>/dev/null && return 0
    sleep 0.25
  done
  fail "$3 did not come up (config $4); its log ends:"
  tail -n 20 "$5" | sed 's/^/      /'
  summary
}
if [ $MODE = gateway ]; then
  GW=$(freeport); GWA=$(freeport)
  # The sealing key: 32 random bytes, base64.
  "$V1" -c 'import base64, os, sys; open(sys.argv[1], "w").write(base64.b64encode(os.urandom(32)).decode())' \
    "$WORK/relay.key" || die "cannot make the relay key"
  gw_config "$GW" "$GWA" "http://127.0.0.1:$GW" "${APORT[v1]}" "${APORT[v03]}" >"$WORK/gateway.toml"
  cp "$WORK/gateway.toml" "$OUT/push-gateway.toml"
  "$GW_BIN" run --config "$WORK/gateway.toml" >"$OUT/push-gateway.log" 2>&1 & GWPID=$!; PIDS+=($GWPID)
  gw_up "$GWPID" "$GWA" "the gateway" "$OUT/push-gateway.toml" "$OUT/push-gateway.log"
  for a in v1 v03; do
    wait_http "http://127.0.0.1:$GW/agents/$a/.well-known/agent-card.json" "the gateway's card for $a"
  done
  PAIRS=(v1:v1 v1:v03 v03:v1 v03:v03)
else
  PAIRS=(v1:v1 v03:v03)
fi

# --- the pairs -----------------------------------------------------------------
for pair in "${PAIRS[@]}"; do
  c=${pair%:*}; a=${pair#*:}; name="$MODE $c->$a"; log="$OUT/push-client-$c-$a.log"
  token="tok-$c-$a-$RANDOM$RANDOM"
  webhook="http://127.0.0.1:$RECV/hook/$c-$a"
  if [ $MODE = gateway ]; then base="http://127.0.0.1:$GW/agents/$a"; else base="http://127.0.0.1:${APORT[$a]}"; fi
  # The client's version is the shape it must receive (directly, the agent's
  # own, which is the same).
  shape=1.0; [ $c = v03 ] && shape=0.3
  auth=(); { [ $MODE = gateway ] || [ $a = v1 ]; } && auth=(--auth "Bearer:cred-$c-$a-$RANDOM")
  echo "== $name: $base"
  (cd "$HERE/clients" && timeout 90 "${APY[$c]}" push_client.py "$base" "$webhook" "$token" \
    --shape "$shape" --name "$name" "${auth[@]}") >"$log" 2>"${log%.log}.err"
  report "$log" $? "$name: the client"
  tid=$(sed -n 's/^TASK //p' "$log" | head -1)
  if [ $MODE = gateway ] && [ -n "$tid" ]; then
    alog="$OUT/push-agent-side-$c-$a.log"
    (cd "$HERE/clients" && timeout 60 "${APY[$a]}" push_client.py --agent-side \
      "http://127.0.0.1:${APORT[$a]}" "$tid" "http://127.0.0.1:$GW/push/" "$token" \
      --name "$name (agent side)") >"$alog" 2>"${alog%.log}.err"
    report "$alog" $? "$name: the agent-side check"
  fi
done
[ $REPLICAS = 1 ] || summary

# --- a replica killed between the config being set and the delivery -----------
# A and B: the same key and upstreams (the late agents), callback_base = B.
RA=$(freeport); RAA=$(freeport); RB=$(freeport); RBA=$(freeport)
for g in a b; do
  if [ $g = a ]; then port=$RA; admin=$RAA; else port=$RB; admin=$RBA; fi
  gw_config "$port" "$admin" "http://127.0.0.1:$RB" "${DPORT[v1]}" "${DPORT[v03]}" \
    >"$OUT/push-replica-$g.toml"
done
"$GW_BIN" run --config "$OUT/push-replica-a.toml" >"$OUT/push-replica-a.log" 2>&1 & APID=$!; PIDS+=($APID)
"$GW_BIN" run --config "$OUT/push-replica-b.toml" >"$OUT/push-replica-b.log" 2>&1 & BPID=$!; PIDS+=($BPID)
gw_up "$APID" "$RAA" "replica A" "$OUT/push-replica-a.toml" "$OUT/push-replica-a.log"
gw_up "$BPID" "$RBA" "replica B" "$OUT/push-replica-b.toml" "$OUT/push-replica-b.log"
for a in v1 v03; do
  wait_http "http://127.0.0.1:${DPORT[$a]}/.well-known/agent-card.json" \
    "late agent $a (see $OUT/push-replica-agent-$a.log)"
  wait_http "http://127.0.0.1:$RA/agents/$a/.well-known/agent-card.json" "replica A's card for $a"
done
RPAIRS=(v1:v1 v1:v03 v03:v1 v03:v03)
echo "== replicas: clients -> A (127.0.0.1:$RA), callbacks -> B (127.0.0.1:$RB), agents complete after ${PUSH_DELAY} s"
# 1. The sends through A, all at once (each returns at once, the task working).
declare -A RTOKEN RAUTH RTID
jobs_=()
for pair in "${RPAIRS[@]}"; do
  c=${pair%:*}; a=${pair#*:}; shape=1.0; [ $c = v03 ] && shape=0.3
  RTOKEN[$pair]="tok-replica-$c-$a-$RANDOM$RANDOM"; RAUTH[$pair]="Bearer:cred-replica-$c-$a-$RANDOM"
  (cd "$HERE/clients" && timeout 60 "${APY[$c]}" push_client.py "http://127.0.0.1:$RA/agents/$a" \
    "http://127.0.0.1:$RECV/hook/replica-$c-$a" "${RTOKEN[$pair]}" --shape "$shape" \
    --auth "${RAUTH[$pair]}" --name "replica $c->$a (send via A)" --send-only) \
    >"$OUT/push-replica-send-$c-$a.log" 2>"$OUT/push-replica-send-$c-$a.err" & jobs_+=($!)
done
i=0
for pair in "${RPAIRS[@]}"; do
  c=${pair%:*}; a=${pair#*:}; log="$OUT/push-replica-send-$c-$a.log"
  wait "${jobs_[$i]}"; report "$log" $? "replica $c->$a: the client (send)"; i=$((i + 1))
  RTID[$pair]=$(sed -n 's/^TASK //p' "$log" | head -1)
done
# 2. The agents hold callbacks under B.
jobs_=()
for pair in "${RPAIRS[@]}"; do
  c=${pair%:*}; a=${pair#*:}
  [ -n "${RTID[$pair]}" ] || { jobs_+=(""); continue; }
  (cd "$HERE/clients" && timeout 60 "${APY[$a]}" push_client.py --agent-side \
    "http://127.0.0.1:${DPORT[$a]}" "${RTID[$pair]}" "http://127.0.0.1:$RB/push/" "${RTOKEN[$pair]}" \
    --name "replica $c->$a (agent side)") \
    >"$OUT/push-replica-agent-side-$c-$a.log" 2>"$OUT/push-replica-agent-side-$c-$a.err" & jobs_+=($!)
done
i=0
for pair in "${RPAIRS[@]}"; do
  c=${pair%:*}; a=${pair#*:}
  if [ -n "${jobs_[$i]}" ]; then
    wait "${jobs_[$i]}"
    report "$OUT/push-replica-agent-side-$c-$a.log" $? "replica $c->$a: the agent-side check"
  fi
  i=$((i + 1))
done
# 3. SIGKILL to A: it must be gone (the process and its port), B still ready.
# (wait reaps it: SIGKILL cannot be caught, so the wait is short; a zombie
# would still answer kill -0.)
kill -9 "$APID" 2>/dev/null
wait "$APID" 2>/dev/null
gone=0
for _ in $(seq 1 20); do
  kill -0 "$APID" 2>/dev/null || { gone=1; break; }
  sleep 0.25
done
keep=(); for p in "${PIDS[@]}"; do [ "$p" = "$APID" ] || keep+=("$p"); done; PIDS=("${keep[@]}")
KILLED_AT=$(curl -fsS -m 2 "http://127.0.0.1:$RECV/now" | sed -n 's/.*"t": *\([0-9.]*\).*/\1/p')
if [ $gone = 1 ] && ! curl -sS -m 1 -o /dev/null "http://127.0.0.1:$RAA/readyz" 2>/dev/null \
   && ! curl -sS -m 1 -o /dev/null "http://127.0.0.1:$RA/agents/v1/.well-known/agent-card.json" 2>/dev/null; then
  pass "replicas: gateway A (pid $APID) is gone after SIGKILL (no process, its ports refuse)"
else
  fail "replicas: gateway A (pid $APID) is still there after SIGKILL (process gone: $gone)"
fi
if curl -fsS -m 2 -o /dev/null "http://127.0.0.1:$RBA/readyz" 2>/dev/null; then
  pass "replicas: gateway B is still ready"
else
  fail "replicas: gateway B is not ready (see $OUT/push-replica-b.log)"
fi
[ -n "$KILLED_AT" ] || { fail "replicas: no time from the receiver's /now"; KILLED_AT=0; }
# 4. The completed tasks reach the webhooks, after the kill: through B.
jobs_=()
for pair in "${RPAIRS[@]}"; do
  c=${pair%:*}; a=${pair#*:}; shape=1.0; [ $c = v03 ] && shape=0.3
  [ -n "${RTID[$pair]}" ] || { jobs_+=(""); continue; }
  (cd "$HERE/clients" && timeout 30 "${APY[$c]}" push_client.py "http://127.0.0.1:$RA/agents/$a" \
    "http://127.0.0.1:$RECV/hook/replica-$c-$a" "${RTOKEN[$pair]}" --shape "$shape" \
    --auth "${RAUTH[$pair]}" --name "replica $c->$a (A killed, via B)" --wait 15 \
    --wait-only "${RTID[$pair]}" --after "$KILLED_AT") \
    >"$OUT/push-replica-wait-$c-$a.log" 2>"$OUT/push-replica-wait-$c-$a.err" & jobs_+=($!)
done
i=0
for pair in "${RPAIRS[@]}"; do
  c=${pair%:*}; a=${pair#*:}
  if [ -n "${jobs_[$i]}" ]; then
    wait "${jobs_[$i]}"
    report "$OUT/push-replica-wait-$c-$a.log" $? "replica $c->$a: the client (wait)"
  fi
  i=$((i + 1))
done
summary
