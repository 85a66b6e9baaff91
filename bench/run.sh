#!/usr/bin/env bash
# Benchmark harness for a2a-gateway: the same workloads, in one run, against
#   direct   the mock upstream itself (bench/upstream.rs: the floor),
#   gateway  a2a-gateway (the shipped dist build, bench/gateway.toml) in front of it,
#   nginx    nginx as a plain reverse proxy in front of it (bench/nginx.conf),
#   haproxy, caddy  two more plain reverse proxies a user might pick
#            (bench/haproxy.cfg, bench/Caddyfile), in the unary saturation
#            rows of "Other proxies" only,
# all on 127.0.0.1, and writes bench/RESULTS.md. `message/send` 1 KiB is also
# measured over TLS: the gateway with TLS and JWT auth on (gateway-tls), and
# nginx terminating TLS (nginx-tls), with a fresh certificate and token; and
# through a fleet (gateway-fleet): the gateway in front of nine agents, routing
# each call by skill, against the chosen agent called directly (direct-fleet).
# The gateway runs at [log] level = "warn" (no access line), as nginx runs with
# access_log off; instructions per call are also counted at the shipped level,
# info (gateway-info).
#
#   bash bench/run.sh            full run (~18 min after the builds): RESULTS.md
#   bash bench/run.sh --smoke    every workload for ~1 s (debug builds, no nginx
#                                install): checks the harness works; fails if
#                                any request fails. Report: bench/out/smoke/
#   BENCH_GATEWAY=PATH bash bench/run.sh   the same, measuring a gateway binary
#                                built elsewhere (e.g. bench/pgo.sh's; a path from the
#                                checkout's root)
#   bash bench/run.sh --profile  where the gateway spends CPU (perf sampling, or
#                                callgrind where perf cannot record) under
#                                message/send and stream load, and its heap with
#                                1,000 idle streams (massif): bench/out/profile/
#
# Tools: wrk (HTTP/1.1 saturation), h2load (HTTP/2 saturation), nginx,
# haproxy and caddy, from Debian's packages, installed when missing (as root,
# with apt-get; on a host with systemd, Debian's packages also start their own
# services, as nginx's does); the
# fixed-rate latency, SSE and idle-stream clients are subcommands of the
# bench-upstream example (bench/client.rs). Every process the script starts
# is stopped on exit. Ports: BENCH_PORT_BASE (default: a free range from 20000).
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=full
case "${1:-}" in
  "") ;;
  --smoke) MODE=smoke ;;
  --profile) MODE=profile ;;
  *) echo "usage: bash bench/run.sh [--smoke|--profile]" >&2; exit 2 ;;
esac

# One run at a time in a checkout: runs share bench/out/ and would skew each
# other's numbers. A second run waits for the first (bounded), then goes on.
mkdir -p bench/out
exec 9>bench/out/.lock
if command -v flock >/dev/null 2>&1 && ! flock -n 9; then
  echo "bench: another bench/run.sh is running in this checkout; waiting for it (at most 20 min)"
  flock -w 1200 9 || { echo "bench: still busy after 20 min; giving up" >&2; exit 1; }
fi

OUT=bench/out/$MODE
rm -rf "$OUT"
mkdir -p "$OUT/logs"
RESULTS=$OUT/results.jsonl
: >"$RESULTS"
FAILURES=0
STARTED=$(date +%s)

say() { printf '\n==> [%ss] %s\n' "$(($(date +%s) - STARTED))" "$*"; }
note() { printf '    %s\n' "$*"; }
fail() { printf '    FAILED: %s\n' "$*"; FAILURES=$((FAILURES + 1)); }

# ---------------------------------------------------------------- settings
if [ "$MODE" = smoke ]; then
  # wrk/h2load run for send1k only (their minimum is 1 s); the other
  # workloads go through the fixed-rate client, which checks every answer.
  SAT_SECS=1; SAT_WORKLOADS="send1k"; RATES="200"; RATE_SECS=0.3; SSE_LAT=30; SSE_TPUT=60
  IDLE_H1=200; IDLE_H2=200; SOAK=0; PAUSE=0.2; LAT_ROUNDS=1; SETTLE=0
elif [ "$MODE" = full ]; then
  SAT_SECS=5; SAT_WORKLOADS="send1k send64k get"; RATES="1000 5000"; RATE_SECS=""
  SSE_LAT=1000; SSE_TPUT=5000; IDLE_H1=10000; IDLE_H2=10000; SOAK=1; PAUSE=1; LAT_ROUNDS=3
  # Idle streams: RSS is read again this long after they closed, past the
  # gateway's release_memory_interval (10 s by default).
  SETTLE=11
fi
LAT_ROUNDS=${LAT_ROUNDS:-1}
SETTLE=${SETTLE:-0}
WRK_FAIL='{"mode":"wrk","requests":0,"duration_us":1,"err_connect":1,"err_read":0,"err_write":0,"err_status":0,"err_timeout":0}'
WRK_CONNS=32          # wrk: 1 thread, 32 keep-alive connections
H2_CONNS=4; H2_STREAMS=8   # h2load: 4 connections x 8 concurrent streams
RATE_CONNS_H1=16; RATE_CONNS_H2=2
SSE_CONNS=8

# Open files: 10,000 idle streams through a proxy take 20,000 sockets in it.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
NOFILE=$(ulimit -n)
if [ "$MODE" = full ] && [ $((NOFILE - 1000)) -lt $((IDLE_H1 * 2)) ]; then
  IDLE_H1=$(((NOFILE - 1000) / 2))
fi

# ---------------------------------------------------------------- processes
PIDS=()
forget_pid() { local keep=() p; for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done; PIDS=("${keep[@]}"); }
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for _ in $(seq 30); do
    local alive=0
    for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

STOP_WAIT=50   # tenths of a second between TERM and KILL
stop_pid() { # PID: TERM, wait, then KILL; the PID is forgotten (never killed twice)
  local pid=$1
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq $STOP_WAIT); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
  forget_pid "$pid"
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
. bench/configs.sh
FLEET_N=8   # agents with skills of their own (bench-upstream serve --fleet)
BASE=${BENCH_PORT_BASE:-}
if [ -z "$BASE" ]; then
  for b in $(seq 20000 100 21900); do
    ok=1
    for p in $(seq "$b" $((b + 9 + FLEET_N))); do port_free "$p" || ok=0; done
    if [ $ok = 1 ]; then BASE=$b; break; fi
  done
fi
[ -n "$BASE" ] || { echo "no free port range found" >&2; exit 1; }
UPORT=$BASE; GPORT=$((BASE + 1)); GADMIN=$((BASE + 2)); NH1=$((BASE + 3)); NH2=$((BASE + 4))
NTLS=$((BASE + 5)); FPORT=$((BASE + 6))   # the fleet: FPORT … FPORT+FLEET_N-1
FLPORT=$((BASE + 6 + FLEET_N))               # hyper-floor
HAH1=$((FLPORT + 1)); HAH2=$((FLPORT + 2))  # haproxy: HTTP/1.1, h2c
CAH1=$((FLPORT + 3))                         # caddy: HTTP/1.1 and h2c on one port

wait_http() { # URL SECONDS: until it answers 2xx
  local deadline=$(($(date +%s) + $2))
  while [ "$(date +%s)" -le $deadline ]; do
    curl -sf -o /dev/null --max-time 1 "$1" && return 0
    sleep 0.1
  done
  return 1
}

# ---------------------------------------------------------------- tools
if [ "$MODE" = full ]; then want=(wrk h2load nginx valgrind haproxy caddy); else want=(wrk h2load); fi
[ "$MODE" = profile ] && want=(perf valgrind wrk)
missing=()
for t in "${want[@]}"; do command -v "$t" >/dev/null 2>&1 || missing+=("$t"); done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  pkgs=()
  for t in "${missing[@]}"; do
    case $t in h2load) pkgs+=(nghttp2-client) ;; perf) pkgs+=(linux-perf) ;; *) pkgs+=("$t") ;; esac
  done
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    timeout 240 apt-get install -y -qq "${pkgs[@]}" >"$OUT/logs/apt.log" 2>&1 ||
      { timeout 240 apt-get update -qq >>"$OUT/logs/apt.log" 2>&1 &&
        timeout 240 apt-get install -y -qq "${pkgs[@]}" >>"$OUT/logs/apt.log" 2>&1; } ||
      note "apt-get could not install ${pkgs[*]} (see $OUT/logs/apt.log)"
  else
    note "apt-get unavailable (or not root): cannot install ${pkgs[*]}"
  fi
fi
have() { command -v "$1" >/dev/null 2>&1; }
for t in "${want[@]}"; do have "$t" || note "$t not available: its measurements are skipped"; done
if [ "$MODE" = profile ] && ! have valgrind && ! have perf; then echo "--profile needs perf or valgrind" >&2; exit 1; fi

# ---------------------------------------------------------------- build
say "build ($MODE)"
if [ "$MODE" = smoke ]; then
  cargo build --quiet --bin a2a-gateway --example bench-upstream --example bench-hyper-floor
  BIN=target/debug
else
  # The shipped build (the image's flags, without PGO).
  bash bench/dist.sh --quiet --bin a2a-gateway --example bench-upstream --example bench-hyper-floor
  BIN=target/dist
fi
GW=$BIN/a2a-gateway
# BENCH_GATEWAY: measure another gateway binary (e.g. bench/pgo.sh's) in the
# same harness; the report names it.
if [ -n "${BENCH_GATEWAY:-}" ]; then
  [ -x "$BENCH_GATEWAY" ] || { echo "BENCH_GATEWAY=$BENCH_GATEWAY is not an executable" >&2; exit 2; }
  GW=$BENCH_GATEWAY
fi
UP=$BIN/examples/bench-upstream
FLOOR=$BIN/examples/bench-hyper-floor
note "gateway: $GW, upstream + clients: $UP"

# ---------------------------------------------------------------- bodies
python3 bench/bodies.py "$OUT"

# ---------------------------------------------------------------- TLS + JWT
# A fresh self-signed certificate and ES256 token (bench/secrets.rs), and the
# gateway's config for the TLS rows: bench/gateway.toml plus [tls] and a
# bearer scheme that verifies the token's signature, issuer and audience.
SECRETS=$PWD/$OUT/secrets
"$UP" secrets "$SECRETS" || { echo "bench-upstream secrets failed" >&2; exit 1; }
TOKEN=$(cat "$SECRETS/token")
tls_config "$SECRETS" >"$OUT/gateway-tls.toml"
# Both TLS targets get the same request bytes: the token goes to nginx too
# (which passes it on), and the client trusts the bench certificate.
CLIENT_TLS=(--cacert "$SECRETS/cert.pem" -H "authorization: Bearer $TOKEN")
client_extra() { # target: sets EXTRA, the load client's options for it
  EXTRA=()
  case $1 in *-tls) EXTRA=("${CLIENT_TLS[@]}") ;; esac
}

# ---------------------------------------------------------------- start / stop
UP_PID=""; GW_PID=""; NGX_PID=""; FLEET_PID=""; HAP_PID=""; CADDY_PID=""
start_upstream() {
  "$UP" serve "$UPORT" 2>>"$OUT/logs/upstream.log" &
  UP_PID=$!; PIDS+=("$UP_PID")
  wait_http "http://127.0.0.1:$UPORT/.well-known/agent-card.json" 20 || { echo "upstream did not start" >&2; exit 1; }
}
GW_CONFIG=bench/gateway.toml
start_gateway() { # [wrapper...]: e.g. valgrind; GW_CONFIG picks the config
  "$@" "$GW" run --config "$GW_CONFIG" \
    --listen "127.0.0.1:$GPORT" --admin-listen "127.0.0.1:$GADMIN" \
    --upstream "bench=http://127.0.0.1:$UPORT" 2>>"$OUT/logs/gateway.log" &
  GW_PID=$!; PIDS+=("$GW_PID")
  wait_http "http://127.0.0.1:$GADMIN/readyz" 120 || { echo "gateway not ready (see $OUT/logs/gateway.log)" >&2; exit 1; }
}
start_nginx() {
  local prefix=$PWD/$OUT/nginx
  mkdir -p "$prefix"
  sed -e "s#@PREFIX@#$prefix#g" -e "s#@UPSTREAM@#127.0.0.1:$UPORT#g" \
      -e "s#@H1@#$NH1#g" -e "s#@H2@#$NH2#g" -e "s#@TLS@#$NTLS#g" \
      -e "s#@CERT@#$SECRETS/cert.pem#g" -e "s#@KEY@#$SECRETS/key.pem#g" bench/nginx.conf >"$prefix/nginx.conf"
  nginx -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" 2>>"$OUT/logs/nginx.log" &
  NGX_PID=$!; PIDS+=("$NGX_PID")
  wait_http "http://127.0.0.1:$NH1/.well-known/agent-card.json" 20 || { echo "nginx did not start (see $prefix/error.log)" >&2; exit 1; }
}
start_haproxy() {
  local dir=$OUT/haproxy
  mkdir -p "$dir"
  sed -e "s#@UPSTREAM@#127.0.0.1:$UPORT#g" -e "s#@H1@#$HAH1#g" -e "s#@H2@#$HAH2#g" bench/haproxy.cfg >"$dir/haproxy.cfg"
  haproxy -f "$dir/haproxy.cfg" 2>>"$OUT/logs/haproxy.log" &
  HAP_PID=$!; PIDS+=("$HAP_PID")
  wait_http "http://127.0.0.1:$HAH1/.well-known/agent-card.json" 20 || { fail "haproxy did not start (see $OUT/logs/haproxy.log)"; stop_haproxy; return 1; }
}
start_caddy() {
  local dir=$PWD/$OUT/caddy
  mkdir -p "$dir"
  sed -e "s#@UPSTREAM@#127.0.0.1:$UPORT#g" -e "s#@H1@#$CAH1#g" bench/Caddyfile >"$dir/Caddyfile"
  # Its data and config directories in the run's own folder, not $HOME's.
  XDG_DATA_HOME=$dir XDG_CONFIG_HOME=$dir caddy run --config "$dir/Caddyfile" --adapter caddyfile \
    >>"$OUT/logs/caddy.log" 2>&1 &
  CADDY_PID=$!; PIDS+=("$CADDY_PID")
  wait_http "http://127.0.0.1:$CAH1/.well-known/agent-card.json" 20 || { fail "caddy did not start (see $OUT/logs/caddy.log)"; stop_caddy; return 1; }
}
stop_haproxy() { [ -n "$HAP_PID" ] && stop_pid "$HAP_PID"; HAP_PID=""; }
stop_caddy() { [ -n "$CADDY_PID" ] && stop_pid "$CADDY_PID"; CADDY_PID=""; }
FLOOR_PID=""
start_floor() { # [wrapper...]: e.g. valgrind; FLOOR_MODE=own for hyper's own connections in a list
  "$@" "$FLOOR" "$FLPORT" "127.0.0.1:$UPORT" ${FLOOR_MODE:-} 2>>"$OUT/logs/floor.log" &
  FLOOR_PID=$!; PIDS+=("$FLOOR_PID")
  wait_http "http://127.0.0.1:$FLPORT/.well-known/agent-card.json" 120 || { echo "hyper-floor did not start" >&2; exit 1; }
}
stop_floor() { [ -n "$FLOOR_PID" ] && stop_pid "$FLOOR_PID"; FLOOR_PID=""; }
stop_upstream() { [ -n "$UP_PID" ] && stop_pid "$UP_PID"; UP_PID=""; }
stop_gateway() { [ -n "$GW_PID" ] && stop_pid "$GW_PID"; GW_PID=""; }
stop_nginx() { [ -n "$NGX_PID" ] && stop_pid "$NGX_PID"; NGX_PID=""; }

# ---------------------------------------------------------------- /proc readings
CLK_TCK=$(getconf CLK_TCK)
pids_of() { # target: the PIDs whose CPU and memory are the target's own
  case $1 in
    direct) echo "$UP_PID" ;;
    gateway | gateway-h2c | gateway-tls | gateway-fleet) echo "$GW_PID" ;;
    direct-fleet) echo "$FLEET_PID" ;;
    hyper-floor) echo "$FLOOR_PID" ;;
    nginx | nginx-tls) echo "$NGX_PID $(pgrep -P "$NGX_PID" | tr '\n' ' ')" ;;
    haproxy) echo "$HAP_PID" ;;
    caddy) echo "$CADDY_PID" ;;
  esac
}
cpu_ticks() { # PIDs: utime + stime
  local t=0 p
  for p in "$@"; do
    [ -r "/proc/$p/stat" ] && t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
  done
  echo $t
}
user_ticks() { # PIDs: utime alone (the rest of cpu_ticks is the kernel's)
  local t=0 p
  for p in "$@"; do
    [ -r "/proc/$p/stat" ] && t=$((t + $(awk '{print $14}' "/proc/$p/stat")))
  done
  echo $t
}
status_kb() { # FIELD PIDs: sum of a /proc/PID/status field, in kB
  local f=$1 s=0 p v; shift
  for p in "$@"; do
    v=$(awk -v f="$f:" '$1 == f {print $2}' "/proc/$p/status" 2>/dev/null || true)
    s=$((s + ${v:-0}))
  done
  echo $s
}
reset_hwm() { local p; for p in "$@"; do echo 5 >"/proc/$p/clear_refs" 2>/dev/null || true; done; }
fds_of() { local n=0 p; for p in "$@"; do n=$((n + $(ls "/proc/$p/fd" 2>/dev/null | wc -l))); done; echo $n; }

url_of() { # target proto
  case $1/$2 in
    direct/*) echo "http://127.0.0.1:$UPORT/" ;;
    gateway/* | gateway-h2c/* | gateway-fleet/* | gateway-info/*) echo "http://127.0.0.1:$GPORT/" ;;
    direct-fleet/*) echo "http://127.0.0.1:$FPORT/" ;;   # the translate agent
    hyper-floor/* | hyper-floor-own/*) echo "http://127.0.0.1:$FLPORT/" ;;
    nginx/h1) echo "http://127.0.0.1:$NH1/" ;;
    nginx/h2) echo "http://127.0.0.1:$NH2/" ;;
    gateway-tls/*) echo "https://127.0.0.1:$GPORT/" ;;
    nginx-tls/*) echo "https://127.0.0.1:$NTLS/" ;;
    haproxy/h1) echo "http://127.0.0.1:$HAH1/" ;;
    haproxy/h2) echo "http://127.0.0.1:$HAH2/" ;;
    caddy/*) echo "http://127.0.0.1:$CAH1/" ;;
  esac
}
expect_of() {
  case $1 in
    send*) echo '"state":"completed"' ;;
    get) echo '"bench-task-42"' ;;
    fleet1k) echo '"text":"translate: ' ;; # answered by the translate agent
  esac
}
upstream_pid_of() { case $1 in *-fleet) echo "$FLEET_PID" ;; *) echo "$UP_PID" ;; esac; }
answers() { # target proto workload: a few calls, every answer checked; a failure is recorded
  local flag=""; [ "$2" = h2 ] && flag=--h2
  client_extra "$1"
  "$UP" rate --url "$(url_of "$1" "$2")" --body "$OUT/$3.json" --rate 50 --secs 0.2 --conns 2 $flag \
    --expect "$(expect_of "$3")" ${EXTRA[@]+"${EXTRA[@]}"} >/dev/null 2>"$OUT/logs/sanity.err" ||
    { fail "$1 $2 $3: $(tail -1 "$OUT/logs/sanity.err")"; return 1; }
}

record() { # phase workload proto target JSON-from-a-tool [extra "k":v pairs]
  local json=$5 extra=${6:-}
  [ -n "$extra" ] && extra="$extra,"
  echo "{\"phase\":\"$1\",\"workload\":\"$2\",\"proto\":\"$3\",\"target\":\"$4\",$extra${json#\{}" >>"$RESULTS"
}
jnum() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" <<<"$1"; } # JSON KEY

TARGETS=(direct gateway)
[ "$MODE" != profile ] && have nginx && TARGETS+=(nginx)

# ---------------------------------------------------------------- profile mode
# CPU: perf sampling on the cpu-clock software event when perf can record
# (hardware counters are not needed for it; `perf stat -e instructions` may
# say "not supported" in a VM), else callgrind. Memory per idle stream:
# valgrind's massif with 1,000 idle streams open.
if [ "$MODE" = profile ]; then
  U=$(url_of gateway h1)
  start_upstream
  if have perf && perf record -q -e cpu-clock -o "$OUT/perf.probe" -- true >/dev/null 2>&1; then
    say "profile: perf record -e cpu-clock (sampling the release gateway)"
    start_gateway
    for w in send1k send64k stream; do
      if [ $w = stream ]; then
        "$UP" sse --url "$U" --body "$OUT/stream.json" --streams 100000 --conns 8 --events 10 \
          >"$OUT/load-$w.json" 2>&1 &
      else
        BENCH_BODY=$OUT/$w.json timeout 30 wrk -t1 -c$WRK_CONNS -d8s -s bench/post.lua "$U" \
          >"$OUT/load-$w.json" 2>&1 &
      fi
      load=$!; PIDS+=("$load")
      sleep 1
      perf record -q -e cpu-clock -F 499 --call-graph dwarf,32768 -p "$GW_PID" \
        -o "$OUT/perf-$w.data" -- sleep 4 >/dev/null 2>&1 || note "perf record failed for $w"
      stop_pid "$load"
      perf report -i "$OUT/perf-$w.data" --stdio --children --sort symbol --percent-limit 0.7 -g none 2>/dev/null |
        grep -v '^#' | grep -v '^$' | cut -c1-220 | sed 's/[[:space:]]*$//' >"$OUT/perf-$w-inclusive.txt" || true
      perf report -i "$OUT/perf-$w.data" --stdio --no-children --sort dso,symbol --percent-limit 0.5 -g none 2>/dev/null |
        grep -v '^#' | grep -v '^$' | cut -c1-220 | sed 's/[[:space:]]*$//' >"$OUT/perf-$w-self.txt" || true
      note "$w: $OUT/perf-$w-inclusive.txt, $OUT/perf-$w-self.txt"
    done
    stop_gateway
  else
    say "profile: callgrind (perf cannot record here)"
    STOP_WAIT=300
    start_gateway valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out" --dump-instr=no
    "$UP" rate --url "$U" --body "$OUT/send1k.json" --rate 150 --secs 10 --conns 8 --expect '"completed"' >"$OUT/load-send1k.json"
    "$UP" sse --url "$U" --body "$OUT/stream.json" --streams 300 --conns 4 --events 10 >"$OUT/load-stream.json"
    stop_gateway
    callgrind_annotate --inclusive=yes "$OUT/callgrind.out" 2>/dev/null | head -120 >"$OUT/callgrind-inclusive.txt" || true
    note "top functions: $OUT/callgrind-inclusive.txt"
  fi
  if have valgrind && have ms_print; then
    say "profile: heap of 1,000 idle SSE streams (valgrind massif)"
    STOP_WAIT=300
    start_gateway valgrind --tool=massif --massif-out-file="$OUT/massif.out" --depth=40 --threshold=0.5
    "$UP" idle --url "$U" --body "$OUT/stream.json" --streams 1000 --hold 120 -H 'x-bench-events: hold' \
      >"$OUT/idle.json" 2>&1 &
    idle=$!; PIDS+=("$idle")
    for _ in $(seq 600); do [ -s "$OUT/idle.json" ] && break; sleep 0.1; done
    sleep 5 # massif takes snapshots on its own schedule
    stop_pid "$idle"; sleep 2
    stop_gateway
    ms_print "$OUT/massif.out" >"$OUT/massif.txt" 2>/dev/null || true
    note "heap at the peak: $OUT/massif.txt"
  fi
  exit 0
fi

# ---------------------------------------------------------------- meta
# The measured build's settings: Cargo.toml's `dist` profile (over
# `release`), and the rustflags bench/dist.sh gives it (RUSTFLAGS, when set,
# replaces them).
release_profile() {
  python3 - <<'PY' 2>/dev/null || echo unknown
import os, re, tomllib
profiles = tomllib.load(open("Cargo.toml", "rb")).get("profile", {})
r = {**profiles.get("release", {}), **profiles.get("dist", {})}
if "RUSTFLAGS" in os.environ:
    flags = os.environ["RUSTFLAGS"].split()
else:
    m = re.search(r'RUSTFLAGS:-([^}"]*)', open("bench/dist.sh").read())
    flags = m.group(1).split() if m else []
print("dist: LTO %s, %s codegen unit(s), rustflags: %s"
      % (r.get("lto", "off"), r.get("codegen-units", "default"), " ".join(flags) or "none"))
PY
}
BUSY_RE='^(rustc|cargo|cc1|cc1plus|ld|clippy-driver|cargo-nextest)$'
{
  echo "{"
  # Versions are read with awk alone: `| head -1` closes the pipe early, and
  # under pipefail a program killed by it fails the probe, which then adds
  # "absent" on a second line and breaks the JSON.
  echo "\"mode\":\"$MODE\","
  echo "\"command\":\"bash bench/run.sh${1:+ $1}\","
  echo "\"date\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\","
  echo "\"nproc\":$(nproc),"
  echo "\"cpu\":\"$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)\","
  echo "\"mem\":\"$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)\","
  echo "\"kernel\":\"$(uname -r)\","
  echo "\"rustc\":\"$(rustc -V)\","
  echo "\"git\":\"$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- src Cargo.toml Cargo.lock bench/dist.sh 2>/dev/null || echo '  + uncommitted changes')\","
  echo "\"gateway_binary\":\"${BENCH_GATEWAY:-}\","
  echo "\"release_profile\":\"$(release_profile)\","
  echo "\"nginx\":\"$(have nginx && nginx -v 2>&1 | sed 's/.*: //' || echo absent)\","
  echo "\"haproxy\":\"$(have haproxy && haproxy -v 2>&1 | awk 'NR == 1 {print $3}' || echo absent)\","
  echo "\"caddy\":\"$(have caddy && caddy version 2>&1 | awk 'NR == 1 {print $1}' || echo absent)\","
  echo "\"wrk\":\"$(have wrk && { wrk -v 2>&1 || true; } | awk 'NR == 1 {print $1, $2}' || echo absent)\","
  echo "\"h2load\":\"$(have h2load && h2load --version 2>&1 | awk 'NR == 1 {print $2, $3}' || echo absent)\","
  echo "\"nofile\":$NOFILE,"
  echo "\"load_before\":\"$(cut -d' ' -f1-3 /proc/loadavg)\","
  echo "\"busy_before\":\"$(ps -eo comm= | grep -cE "$BUSY_RE" || true)\""
  echo "}"
} >"$OUT/meta.json"

# Other work on the machine skews the numbers: every 5 s, sample the load,
# the compilers running, and the gateways / load generators that this run
# did not start (another benchmark or soak in a second checkout or session).
# "Started by this run" means descended from this script: a process group
# would not do, because `timeout` (which runs wrk) makes a group of its own.
# haproxy and caddy are left out: another run is seen by its gateway and load
# generators anyway, and on a host with systemd Debian's packages leave both
# running as idle services, which would be counted in every sample.
( me=$$
  while :; do
    others=$(ps -eo pid=,ppid=,comm= | awk -v me="$me" '
      { parent[$1] = $2; comm[$1] = $3 }
      END {
        for (p in comm) {
          if (comm[p] !~ /^(a2a-gateway|bench-upstream|wrk|h2load|nginx)$/) continue
          q = p; ours = 0
          for (hops = 0; hops < 64 && q > 1; hops++) { if (q == me) { ours = 1; break } q = parent[q] }
          if (!ours) n++
        }
        print n + 0
      }')
    # The last two: the CPUs' steal and total ticks so far (/proc/stat): on a
    # shared VM, time the host gave to other guests slows every target alike.
    echo "$(cut -d' ' -f1 /proc/loadavg) $(ps -eo comm= | grep -cE "$BUSY_RE" || true) $others" \
      "$(awk '/^cpu / { t = 0; for (i = 2; i <= 9; i++) t += $i; print $9, t }' /proc/stat)"
    sleep 5
  done ) >"$OUT/busy.txt" 2>/dev/null &
PIDS+=("$!")

say "mode $MODE; ports: upstream $UPORT, gateway $GPORT (admin $GADMIN), nginx $NH1 (h1) / $NH2 (h2c); open files $NOFILE"

# ---------------------------------------------------------------- idle streams
# Each proxy is started fresh for each count, so memory freed by earlier
# work cannot hide what the streams cost. The upstream stream never ends.
idle_test() { # target proto count
  local target=$1 proto=$2 n=$3 pids before fds_before out line during fds_during after opened
  read -r -a pids <<<"$(pids_of "$target")"
  local u; u=$(url_of "$target" "$proto")
  # Warm-up: a few calls and streams, so lazily built state is not counted.
  "$UP" rate --url "$u" --body "$OUT/send1k.json" --rate 200 --secs 0.2 --conns 4 >/dev/null 2>&1 || true
  "$UP" sse --url "$u" --body "$OUT/stream.json" --streams 20 --conns 4 --events 10 >/dev/null 2>&1 || true
  sleep $PAUSE
  read -r -a pids <<<"$(pids_of "$target")"
  before=$(status_kb VmRSS "${pids[@]}"); fds_before=$(fds_of "${pids[@]}")
  out=$OUT/logs/idle-$target-$proto.json
  local flag=""; [ "$proto" = h2 ] && flag=--h2
  # The client holds the streams until it is stopped (at most 120 s).
  "$UP" idle --url "$u" --body "$OUT/stream.json" --streams "$n" --hold 120 $flag \
    -H 'x-bench-events: hold' >"$out" 2>"$OUT/logs/idle-$target-$proto.err" &
  local idle_pid=$!; PIDS+=("$idle_pid")
  for _ in $(seq 900); do [ -s "$out" ] && break; kill -0 $idle_pid 2>/dev/null || break; sleep 0.1; done
  line=$(head -1 "$out" 2>/dev/null || true)
  sleep $PAUSE
  during=$(status_kb VmRSS "${pids[@]}"); fds_during=$(fds_of "${pids[@]}")
  stop_pid $idle_pid
  sleep $PAUSE
  after=$(status_kb VmRSS "${pids[@]}")
  local later=$after
  if [ "$SETTLE" -gt 0 ]; then sleep "$SETTLE"; later=$(status_kb VmRSS "${pids[@]}"); fi
  [ -n "$line" ] || line='{"opened":0,"errors":1}'
  opened=$(jnum "$line" opened)
  [ "$(jnum "$line" errors)" = 0 ] && [ "$opened" = "$n" ] ||
    fail "idle $target $proto: $opened of $n streams opened: $(tail -1 "$OUT/logs/idle-$target-$proto.err")"
  record idle stream "$proto" "$target" "$line" \
    "\"rss_before_kb\":$before,\"rss_during_kb\":$during,\"rss_after_kb\":$after,\"rss_later_kb\":$later,\"later_s\":$SETTLE,\"fds_before\":$fds_before,\"fds_during\":$fds_during"
  local retried; retried=$(jnum "$line" retried); retried=${retried:-0}
  note "idle $target $proto: $opened streams, RSS ${before} -> ${during} kB ($(( (during - before) / (opened > 0 ? opened : 1) )) kB/stream), fds $fds_before -> $fds_during$([ "$retried" = 0 ] || echo "; $retried connection(s) reset before an answer, opened again")"
}

say "idle SSE streams (h1: $IDLE_H1, h2: $IDLE_H2 in $((IDLE_H2 / 100)) connections)"
for proto in h1 h2; do
  n=$IDLE_H1; [ $proto = h2 ] && n=$IDLE_H2
  start_upstream; idle_test direct $proto "$n"; stop_upstream
done
start_upstream
for proto in h1 h2; do
  n=$IDLE_H1; [ $proto = h2 ] && n=$IDLE_H2
  start_gateway; idle_test gateway $proto "$n"; stop_gateway
  # The same, with the gateway speaking h2c to the upstream (one connection
  # for every stream instead of one HTTP/1.1 connection each).
  GW_CONFIG=bench/gateway-h2c.toml start_gateway; idle_test gateway-h2c $proto "$n"; stop_gateway
  if have nginx; then start_nginx; idle_test nginx $proto "$n"; stop_nginx; fi
done
stop_upstream # a fresh upstream for the load tests: its memory after 20,000 streams is no floor

# ---------------------------------------------------------------- unary load
start_upstream
start_gateway
have nginx && start_nginx

[ "$MODE" = full ] && say "sanity: every workload answers through every target"
[ "$MODE" = full ] && for target in "${TARGETS[@]}"; do
  for proto in h1 h2; do
    u=$(url_of "$target" "$proto"); flag=""; [ $proto = h2 ] && flag=--h2
    for w in send1k send64k get; do answers "$target" "$proto" "$w" || true; done
    "$UP" sse --url "$u" --body "$OUT/stream.json" --streams 5 --conns 1 --events 10 $flag >/dev/null 2>"$OUT/logs/sanity.err" ||
      fail "$target $proto stream: $(tail -1 "$OUT/logs/sanity.err")"
  done
done
[ $FAILURES = 0 ] || { echo "sanity checks failed: not measuring" >&2; exit 1; }

saturate() { # workload proto target
  local w=$1 proto=$2 target=$3 pids u line c0 u0 c1 u1 k0 k1 ku0 ku1 hwm requests errors up_pid
  read -r -a pids <<<"$(pids_of "$target")"
  u=$(url_of "$target" "$proto")
  up_pid=$(upstream_pid_of "$target")
  reset_hwm "${pids[@]}"
  c0=$(cpu_ticks "${pids[@]}"); u0=$(cpu_ticks "$up_pid"); k0=$(user_ticks "${pids[@]}"); ku0=$(user_ticks "$up_pid")
  if [ $proto = h1 ]; then
    have wrk || return 0
    local auth=""; [[ $target = *-tls ]] && auth="Bearer $TOKEN"
    BENCH_BODY=$OUT/$w.json BENCH_AUTH=$auth timeout $((SAT_SECS + 30)) wrk -t1 -c$WRK_CONNS -d${SAT_SECS}s \
      -s bench/post.lua "$u" >"$OUT/logs/wrk-$w-$target.txt" 2>&1 || true
    line=$(grep '^{"mode":"wrk"' "$OUT/logs/wrk-$w-$target.txt" || echo "$WRK_FAIL")
    requests=$(jnum "$line" requests)
    errors=$(($(jnum "$line" err_connect) + $(jnum "$line" err_read) + $(jnum "$line" err_write) + $(jnum "$line" err_status) + $(jnum "$line" err_timeout)))
    local secs; secs=$(awk -v d="$(jnum "$line" duration_us)" 'BEGIN {print d / 1e6}')
  else
    have h2load || return 0
    local auth=(); [[ $target = *-tls ]] && auth=(-H "authorization: Bearer $TOKEN")
    timeout $((SAT_SECS + 30)) h2load -c$H2_CONNS -m$H2_STREAMS -t1 -D "$SAT_SECS" -d "$OUT/$w.json" \
      -H 'content-type: application/json' ${auth[@]+"${auth[@]}"} "$u" >"$OUT/logs/h2load-$w-$target.txt" 2>&1 || true
    local f=$OUT/logs/h2load-$w-$target.txt secs
    secs=$(awk '/^finished in/ {gsub("s,", "", $3); print $3}' "$f")
    # requests: N total, N started, N done, N succeeded, N failed, N errored, N timeout
    requests=$(awk '/^requests:/ {print $8}' "$f")
    errors=$(awk '/^requests:/ {print $10 + $12 + $14}' "$f")
    # status codes: N 2xx, N 3xx, N 4xx, N 5xx
    local non2xx; non2xx=$(awk '/^status codes:/ {print $5 + $7 + $9}' "$f")
    requests=${requests:-0}; errors=$(( ${errors:-1} + ${non2xx:-0} )); secs=${secs:-$SAT_SECS}
    line="{\"mode\":\"h2load\",\"requests\":$requests,\"duration_us\":$(awk -v s="$secs" 'BEGIN {printf "%d", s * 1e6}')}"
  fi
  c1=$(cpu_ticks "${pids[@]}"); u1=$(cpu_ticks "$up_pid"); k1=$(user_ticks "${pids[@]}"); ku1=$(user_ticks "$up_pid")
  hwm=$(status_kb VmHWM "${pids[@]}")
  record "${SAT_PHASE:-sat}" "$w" "$proto" "$target" "$line" \
    "\"rps\":$(awk -v r="$requests" -v s="$secs" 'BEGIN {printf "%.1f", (s > 0 ? r / s : 0)}'),\"errors\":$errors,\"cpu_s\":$(awk -v t=$((c1 - c0)) -v k="$CLK_TCK" 'BEGIN {print t / k}'),\"upstream_cpu_s\":$(awk -v t=$((u1 - u0)) -v k="$CLK_TCK" 'BEGIN {print t / k}'),\"user_cpu_s\":$(awk -v t=$((k1 - k0)) -v k="$CLK_TCK" 'BEGIN {print t / k}'),\"upstream_user_cpu_s\":$(awk -v t=$((ku1 - ku0)) -v k="$CLK_TCK" 'BEGIN {print t / k}'),\"hwm_kb\":$hwm"
  [ "$errors" = 0 ] && [ "${requests:-0}" -gt 0 ] || fail "saturation $w $proto $target: $requests requests, $errors errors"
  note "saturation $w $proto $target: $(awk -v r="$requests" -v s="$secs" 'BEGIN {printf "%.0f", (s > 0 ? r / s : 0)}') req/s, $errors errors"
}

fixed_rate() { # workload proto target rate
  local w=$1 proto=$2 target=$3 rate=$4 u secs flag="" conns=$RATE_CONNS_H1 line
  u=$(url_of "$target" "$proto")
  [ $proto = h2 ] && { flag=--h2; conns=$RATE_CONNS_H2; }
  secs=${RATE_SECS:-$([ "$rate" -le 1000 ] && echo 10 || echo 5)}
  client_extra "$target"
  if line=$("$UP" rate --url "$u" --body "$OUT/$w.json" --rate "$rate" --secs "$secs" --conns $conns $flag \
       --expect "$(expect_of "$w")" ${EXTRA[@]+"${EXTRA[@]}"} 2>"$OUT/logs/rate.err"); then :; else
    fail "rate $w $proto $target $rate: $(tail -1 "$OUT/logs/rate.err")"
  fi
  [ -n "$line" ] && record rate "$w" "$proto" "$target" "$line" "${ROUND:+\"round\":$ROUND}"
  note "rate $rate $w $proto $target${ROUND:+ (round $ROUND)}: p50 $(jnum "$line" p50_us) us, p99 $(jnum "$line" p99_us) us, p99.9 $(jnum "$line" p999_us) us"
}

sse_run() { # phase proto target streams conns
  local phase=$1 proto=$2 target=$3 n=$4 conns=$5 pids u flag="" c0 c1 line
  read -r -a pids <<<"$(pids_of "$target")"
  u=$(url_of "$target" "$proto"); [ $proto = h2 ] && flag=--h2
  reset_hwm "${pids[@]}"
  c0=$(cpu_ticks "${pids[@]}")
  if line=$("$UP" sse --url "$u" --body "$OUT/stream.json" --streams "$n" --conns "$conns" --events 10 $flag 2>"$OUT/logs/sse.err"); then :; else
    fail "sse $phase $proto $target: $(tail -1 "$OUT/logs/sse.err")"
  fi
  c1=$(cpu_ticks "${pids[@]}")
  [ -n "$line" ] && record "$phase" stream "$proto" "$target" "$line" \
    "\"cpu_s\":$(awk -v t=$((c1 - c0)) -v k="$CLK_TCK" 'BEGIN {print t / k}'),\"hwm_kb\":$(status_kb VmHWM "${pids[@]}")"
  note "sse $phase $proto $target: $(jnum "$line" streams_per_s) streams/s, first event p50 $(jnum "$line" ttfe_p50_us) us p99 $(jnum "$line" ttfe_p99_us) us"
}

for w in send1k send64k get; do
  for proto in h1 h2; do
    say "$w $proto"
    if [[ " $SAT_WORKLOADS " = *" $w "* ]]; then
      for target in "${TARGETS[@]}"; do saturate "$w" "$proto" "$target"; done
    fi
    for rate in $RATES; do
      for target in "${TARGETS[@]}"; do fixed_rate "$w" "$proto" "$target" "$rate"; done
    done
  done
done

# The added-p99 target is the difference of two tails on a shared 2-core
# machine, and one 10 s run of each moves by more than the target itself.
# So `message/send` 1 KiB at 1k rps runs LAT_ROUNDS times in all (the run
# above is round 1), the targets taking turns within each round; the report
# gives every round and takes the median of the per-round differences.
if [ "$LAT_ROUNDS" -gt 1 ] && [[ " $RATES " = *" 1000 "* ]]; then
  for proto in h1 h2; do
    say "send1k $proto at 1k rps: rounds 2 to $LAT_ROUNDS"
    for round in $(seq 2 "$LAT_ROUNDS"); do
      for target in "${TARGETS[@]}"; do ROUND=$round fixed_rate send1k "$proto" "$target" 1000; done
    done
  done
fi

for proto in h1 h2; do
  say "message/stream, 10 events, $proto"
  for target in "${TARGETS[@]}"; do sse_run sse_lat "$proto" "$target" "$SSE_LAT" 1; done
  for target in "${TARGETS[@]}"; do sse_run sse_tput "$proto" "$target" "$SSE_TPUT" "$SSE_CONNS"; done
done

# ---------------------------------------------------------------- the HTTP stack's floor
# hyper-floor (bench/hyper_floor.rs): a bare reverse proxy on the gateway's
# own HTTP libraries (hyper-util's server and legacy client on tokio) and
# nothing else. What separates it from direct is the HTTP stack; what
# separates the gateway from it is the gateway's own work. Saturation beside
# the gateway and nginx (taking turns), then user-space instructions per call
# under callgrind: a count, not a time, so it does not move with the
# machine's load as every other figure here does.
say "the HTTP stack's floor: hyper-floor beside the gateway"
start_floor
FLOOR_TARGETS=(gateway hyper-floor); [ -n "$NGX_PID" ] && FLOOR_TARGETS+=(nginx)
for w in $([ "$MODE" = full ] && echo "send1k get" || echo send1k); do
  for proto in h1 h2; do
    for target in "${FLOOR_TARGETS[@]}"; do SAT_PHASE=floor_sat saturate "$w" "$proto" "$target"; done
  done
done
stop_floor

# ---------------------------------------------------------------- other proxies
# Two more plain reverse proxies a user might pick instead, HAProxy (C, like
# nginx) and Caddy (Go), in the same saturation rows as the gateway and nginx,
# all four taking turns on the same upstream. Unary only: nginx stays the
# reference for every other figure.
if [ "$MODE" = full ]; then
  OTHERS=(gateway); [ -n "$NGX_PID" ] && OTHERS+=(nginx)
  have haproxy && start_haproxy && OTHERS+=(haproxy)
  have caddy && start_caddy && OTHERS+=(caddy)
  if [ ${#OTHERS[@]} -gt 2 ]; then
    say "other proxies: ${OTHERS[*]} taking turns"
    measured=()
    for target in "${OTHERS[@]}"; do
      ok=1
      for proto in h1 h2; do
        for w in send1k send64k get; do answers "$target" "$proto" "$w" || ok=0; done
      done
      [ $ok = 1 ] && measured+=("$target")
    done
    for w in $SAT_WORKLOADS; do
      for proto in h1 h2; do
        for target in "${measured[@]}"; do SAT_PHASE=others_sat saturate "$w" "$proto" "$target"; sleep $PAUSE; done
      done
    done
  fi
  stop_haproxy; stop_caddy
fi
# ---------------------------------------------------------------- soak
# wrk in 20 s rounds until 1,000,000 requests have been answered (at most
# SOAK_MAX_SECS), while RSS and open files are sampled every 5 s.
SOAK_TARGET=1000000; SOAK_MAX_SECS=${BENCH_SOAK_MAX_SECS:-420}
if [ "$SOAK" = 1 ] && have wrk; then
  say "soak: message/send 1 KiB through the gateway until $SOAK_TARGET requests (at most ${SOAK_MAX_SECS}s)"
  read -r -a pids <<<"$(pids_of gateway)"
  ( t=0
    while [ $t -le $((SOAK_MAX_SECS + 60)) ]; do
      echo "{\"phase\":\"soak_sample\",\"t\":$t,\"rss_kb\":$(status_kb VmRSS "${pids[@]}"),\"fds\":$(fds_of "${pids[@]}")}"
      sleep 5; t=$((t + 5))
    done ) >"$OUT/soak-samples.jsonl" &
  sampler=$!; PIDS+=("$sampler")
  soak_start=$(date +%s); total=0; errors=0; dur=0; round=0
  while [ $total -lt $SOAK_TARGET ] && [ $(($(date +%s) - soak_start)) -lt "$SOAK_MAX_SECS" ]; do
    round=$((round + 1))
    BENCH_BODY=$OUT/send1k.json timeout 60 wrk -t1 -c$WRK_CONNS -d20s \
      -s bench/post.lua "$(url_of gateway h1)" >"$OUT/logs/wrk-soak-$round.txt" 2>&1 || true
    line=$(grep '^{"mode":"wrk"' "$OUT/logs/wrk-soak-$round.txt" || echo "$WRK_FAIL")
    total=$((total + $(jnum "$line" requests)))
    dur=$((dur + $(jnum "$line" duration_us)))
    errors=$((errors + $(jnum "$line" err_connect) + $(jnum "$line" err_read) + $(jnum "$line" err_write) + $(jnum "$line" err_status) + $(jnum "$line" err_timeout)))
  done
  sleep 1
  stop_pid "$sampler"
  cat "$OUT/soak-samples.jsonl" >>"$RESULTS"
  echo "{\"phase\":\"soak_sample\",\"t\":$(($(date +%s) - soak_start)),\"rss_kb\":$(status_kb VmRSS "${pids[@]}"),\"fds\":$(fds_of "${pids[@]}"),\"after\":true}" >>"$RESULTS"
  record soak send1k h1 gateway "{\"mode\":\"wrk\",\"requests\":$total,\"duration_us\":$dur,\"rounds\":$round}" "\"errors\":$errors"
  [ "$errors" = 0 ] || fail "soak: $errors errors"
  note "soak: $total requests in $round rounds, $errors errors"
fi

# ---------------------------------------------------------------- fleet
# message/send 1 KiB through a gateway in front of nine agents: the bench
# agent and FLEET_N agents with skills of their own (bench-upstream serve
# --fleet), so every call is scored against the skills (BM25) and the task
# and conversation it starts are learned, as in a real fleet. The message
# must reach the translate agent (its answers say so); direct-fleet is that
# agent called directly. nginx cannot route by skill: it has no row here.
say "message/send 1 KiB through a fleet of $((FLEET_N + 1)) agents (routing by skill)"
"$UP" serve "$FPORT" --fleet "$FLEET_N" 2>>"$OUT/logs/fleet.log" &
FLEET_PID=$!; PIDS+=("$FLEET_PID")
wait_http "http://127.0.0.1:$FPORT/.well-known/agent-card.json" 20 || { echo "fleet agents did not start" >&2; exit 1; }
fleet_config "$FPORT" "$FLEET_N" >"$OUT/gateway-fleet.toml"
stop_gateway
GW_CONFIG=$OUT/gateway-fleet.toml start_gateway
fleet_ok=1
for target in direct-fleet gateway-fleet; do
  for proto in h1 h2; do answers "$target" "$proto" fleet1k || fleet_ok=0; done
done
if [ $fleet_ok = 1 ]; then
  for proto in h1 h2; do
    for target in direct-fleet gateway-fleet; do saturate fleet1k "$proto" "$target"; done
    for rate in $RATES; do
      for target in direct-fleet gateway-fleet; do fixed_rate fleet1k "$proto" "$target" "$rate"; done
    done
  done
  # How the gateway placed the calls, from its own metrics.
  routed=$(curl -sf "http://127.0.0.1:$GADMIN/metrics" | awk '/^a2a_gateway_routing_decisions_total\{/ {
      split($1, a, "\""); n[a[2]] = $2 } END { printf "\"match\":%d,\"other\":%d", n["match"], n["path"] + n["affinity"] + n["hint"] + n["default"] + n["none"] }')
  echo "{\"phase\":\"fleet_routing\",\"target\":\"gateway-fleet\",$routed}" >>"$RESULTS"
  note "fleet routing: $routed"
fi
stop_pid "$FLEET_PID"; FLEET_PID=""

# ---------------------------------------------------------------- TLS + JWT
# message/send 1 KiB again, over TLS: the gateway with TLS and JWT auth on (a
# fresh process), nginx terminating TLS on a listener of its own. First the
# gateway must refuse a call without the token, so auth is known to be on.
stop_gateway
GW_CONFIG=$OUT/gateway-tls.toml start_gateway
SECURE=(gateway-tls); [ -n "$NGX_PID" ] && SECURE+=(nginx-tls)
say "message/send 1 KiB over TLS (${SECURE[*]})"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$SECRETS/cert.pem" -X POST \
  -H 'content-type: application/json' --data-binary "@$OUT/send1k.json" "$(url_of gateway-tls h1)" || true)
[ "$code" = 401 ] || fail "gateway-tls answered $code, not 401, to a call without a token"
for target in "${SECURE[@]}"; do
  for proto in h1 h2; do answers "$target" "$proto" send1k || true; done
done
if [ $FAILURES = 0 ]; then
  for proto in h1 h2; do
    for target in "${SECURE[@]}"; do saturate send1k "$proto" "$target"; done
    for rate in $RATES; do
      for target in "${SECURE[@]}"; do fixed_rate send1k "$proto" "$target" "$rate"; done
    done
  done
fi

# ---------------------------------------------------------------- instructions per call
# Last, so the soak above ran in the gateway that served every workload.
CG_CALLS=$([ "$MODE" = full ] && echo 3000 || echo 100)
instructions() { # target: user-space instructions per send1k call (HTTP/1.1, 4 connections)
  local target=$1 pid out=$OUT/callgrind-$1.out u
  STOP_WAIT=300
  if [ "$target" = gateway ]; then
    start_gateway valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out"; pid=$GW_PID
  elif [ "$target" = gateway-info ]; then
    GW_CONFIG=$OUT/gateway-info.toml start_gateway valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out"; pid=$GW_PID
  elif [ "$target" = hyper-floor-own ]; then
    FLOOR_MODE=own start_floor valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out"; pid=$FLOOR_PID
  else
    start_floor valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out"; pid=$FLOOR_PID
  fi
  u=$(url_of "$target" h1)
  # Warm-up uncounted: connections, pools and lazily built state.
  "$UP" rate --url "$u" --body "$OUT/send1k.json" --rate 100 --secs 1 --conns 4 >/dev/null 2>&1 || true
  callgrind_control -i on "$pid" >/dev/null 2>&1 || { fail "callgrind_control could not reach $target"; return 0; }
  h2load --h1 -n "$CG_CALLS" -c 4 -t 1 -d "$OUT/send1k.json" -H 'content-type: application/json' "$u" \
    >"$OUT/logs/h2load-callgrind-$target.txt" 2>&1 || true
  callgrind_control -i off "$pid" >/dev/null 2>&1 || true
  case $target in gateway*) stop_gateway ;; *) stop_floor ;; esac
  STOP_WAIT=50
  local done total
  done=$(awk '/^status codes:/ {print $3}' "$OUT/logs/h2load-callgrind-$target.txt")
  total=$(awk '/^totals:/ {print $2}' "$out" 2>/dev/null)
  [ "${done:-0}" = "$CG_CALLS" ] && [ -n "$total" ] || { fail "callgrind $target: ${done:-0} of $CG_CALLS calls answered 2xx"; return 0; }
  callgrind_annotate --inclusive=yes "$out" 2>/dev/null | head -80 >"$OUT/callgrind-$target-inclusive.txt" || true
  echo "{\"phase\":\"instructions\",\"workload\":\"send1k\",\"proto\":\"h1\",\"target\":\"$target\",\"calls\":$CG_CALLS,\"instructions\":$total}" >>"$RESULTS"
  note "callgrind $target: $((total / CG_CALLS)) instructions per call ($OUT/callgrind-$target-inclusive.txt)"
}
if have valgrind && have callgrind_control && have h2load; then
  say "instructions per call (callgrind, $CG_CALLS calls of message/send 1 KiB)"
  stop_gateway
  GW_CONFIG=bench/gateway.toml
  # gateway-info: at the shipped log level, info, which writes an access line
  # a call (every other row runs at warn, as nginx runs with access_log off).
  sed 's/^level = "warn"/level = "info"/' bench/gateway.toml >"$OUT/gateway-info.toml"
  # hyper-floor-own: the floor without hyper-util's legacy client (bench/own_pool.rs).
  for target in gateway gateway-info hyper-floor hyper-floor-own; do instructions "$target"; done
fi

# ---------------------------------------------------------------- report
sed -i "s/^}$/,\"load_after\":\"$(cut -d' ' -f1-3 /proc/loadavg)\",\"busy_after\":\"$(ps -eo comm= | grep -cE "$BUSY_RE" || true)\",\"secs\":$(($(date +%s) - STARTED)),\"failures\":$FAILURES}/" "$OUT/meta.json"
if [ "$MODE" = full ]; then report=bench/RESULTS.md; else report=$OUT/RESULTS.md; fi
python3 bench/report.py "$OUT" "$report"
say "report: $report ($(($(date +%s) - STARTED)) s)"
if [ $FAILURES -gt 0 ]; then
  echo "bench: $FAILURES measurement(s) failed" >&2
  exit 1
fi
echo "bench: all requests answered"
