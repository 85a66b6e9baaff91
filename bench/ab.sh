#!/usr/bin/env bash
# Two gateway binaries side by side in one run, for a change's budget: the
# binary before a change (A) and after it (B), in front of the same mock
# upstream, in alternating rounds so that drift on a shared host falls on
# both alike. Writes bench/out/ab/ab.md (a table for RESULTS.md) and
# bench/out/ab/ab.jsonl.
#
#   bash bench/ab.sh OLD_BINARY [NEW_BINARY]
#
# NEW_BINARY defaults to this checkout's shipped build (bench/dist.sh). Per
# row and protocol (HTTP/1.1 and h2c from the client), for each binary:
# - CPU per call at saturation: `message/send` 1 KiB with wrk (HTTP/1.1,
#   32 connections) and h2load (h2c, 4 connections x 8 streams) for
#   AB_SECS, the gateway's utime+stime over the calls answered;
# - CPU per call at a fixed AB_RATE calls a second for AB_SECS, where a
#   gateway that sleeps between calls pays its wake-ups too;
# - added p99: the same run's p99 minus the upstream's own, measured
#   directly at the same rate in the same round;
# - memory per idle stream: AB_IDLE streams held open, RSS during minus
#   before, over the streams (the gateway started fresh for it).
# With nginx installed (Debian's package; AB_NGINX=0 leaves it out), nginx
# as a plain reverse proxy (bench/nginx.conf, without its TLS listener)
# takes its turn in the CPU rows too, as N: the reference a user would
# otherwise pick, measured in the same rounds (its master's and workers'
# CPU).
# Every loop is bounded (AB_ROUNDS rounds, AB_SECS seconds a run) and every
# address is 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."

OLD=${1:?usage: bash bench/ab.sh OLD_BINARY [NEW_BINARY]}
NEW=${2:-}
ROUNDS=${AB_ROUNDS:-3}
RATE=${AB_RATE:-1000}
SECS=${AB_SECS:-8}
IDLE=${AB_IDLE:-2000}
NGINX=${AB_NGINX:-$(command -v nginx >/dev/null && echo 1 || echo 0)}
OUT=bench/out/ab
rm -rf "$OUT"; mkdir -p "$OUT/logs"

if [ -z "$NEW" ]; then
  bash bench/dist.sh --quiet --bin a2a-gateway
  NEW=target/dist/a2a-gateway
fi
cargo build --quiet --locked --release --example bench-upstream
UP=target/release/examples/bench-upstream
for b in "$OLD" "$NEW"; do [ -x "$b" ] || { echo "not an executable: $b" >&2; exit 2; }; done
python3 bench/bodies.py "$OUT" >/dev/null

PIDS=()
cleanup() { local p; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
BASE=${AB_PORT_BASE:-}
if [ -z "$BASE" ]; then
  for b in $(seq 22000 10 22990); do
    if port_free "$b" && port_free $((b + 1)) && port_free $((b + 2)) && port_free $((b + 3)) \
      && port_free $((b + 4)); then BASE=$b; break; fi
  done
fi
[ -n "$BASE" ] || { echo "no free ports" >&2; exit 1; }
UPORT=$BASE; GPORT=$((BASE + 1)); GADMIN=$((BASE + 2)); NGX_H1=$((BASE + 3)); NGX_H2=$((BASE + 4))
wait_http() { # URL SECONDS
  local deadline=$(($(date +%s) + $2))
  until curl -sf -o /dev/null --max-time 1 "$1"; do
    [ "$(date +%s)" -le $deadline ] || return 1
    sleep 0.1
  done
}
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
ticks() { # PID: its utime + stime and its children's (nginx's workers)
  local p sum=0
  for p in "$1" $(pgrep -P "$1" || true); do
    sum=$((sum + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$sum"
}
rss_kb() { awk '$1 == "VmRSS:" {print $2}' "/proc/$1/status"; }
jnum() { sed -n "s/.*\"$2\":\\([0-9.]*\\).*/\\1/p" <<<"$1"; }
CLK_TCK=$(getconf CLK_TCK)

"$UP" serve "$UPORT" 2>>"$OUT/logs/upstream.log" &
UP_PID=$!; PIDS+=("$UP_PID")
wait_http "http://127.0.0.1:$UPORT/.well-known/agent-card.json" 20 || { echo "upstream did not start" >&2; exit 1; }

GW_PID=""
start_gateway() { # BINARY
  "$1" run --config bench/gateway.toml --listen "127.0.0.1:$GPORT" --admin-listen "127.0.0.1:$GADMIN" \
    --upstream "bench=http://127.0.0.1:$UPORT" 2>>"$OUT/logs/gateway.log" &
  GW_PID=$!; PIDS+=("$GW_PID")
  wait_http "http://127.0.0.1:$GADMIN/readyz" 60 || { echo "gateway $1 not ready" >&2; exit 1; }
}

start_nginx() {
  local prefix=$PWD/$OUT/nginx
  mkdir -p "$prefix"
  sed -e "s#@PREFIX@#$prefix#g" -e "s#@UPSTREAM@#127.0.0.1:$UPORT#g" -e "s#@H1@#$NGX_H1#g" \
    -e "s#@H2@#$NGX_H2#g" -e '/@TLS@/d' -e '/ssl_certificate/d' bench/nginx.conf >"$prefix/nginx.conf"
  nginx -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" 2>>"$OUT/logs/nginx.log" &
  GW_PID=$!; PIDS+=("$GW_PID")
  wait_http "http://127.0.0.1:$NGX_H1/.well-known/agent-card.json" 20 || { echo "nginx did not start" >&2; exit 1; }
}

# Starts target NAME (A, B or N) and prints the URL its PROTO is served at.
start_target() { # NAME BINARY PROTO
  if [ "$1" = N ]; then
    start_nginx
    [ "$3" = h2 ] && URL=http://127.0.0.1:$NGX_H2/ || URL=http://127.0.0.1:$NGX_H1/
  else
    start_gateway "$2"; URL=http://127.0.0.1:$GPORT/
  fi
}

rate_run() { # URL PROTO: prints the client's JSON line
  local flag=""; [ "$2" = h2 ] && flag=--h2
  local conns=16; [ "$2" = h2 ] && conns=2
  timeout $((SECS + 30)) "$UP" rate --url "$1" --body "$OUT/send1k.json" --rate "$RATE" --secs "$SECS" \
    --conns $conns $flag 2>>"$OUT/logs/rate.err" | tail -1
}

saturate() { # URL PROTO: prints "requests errors"
  if [ "$2" = h1 ]; then
    BENCH_BODY=$OUT/send1k.json timeout $((SECS + 30)) wrk -t1 -c32 -d"${SECS}s" -s bench/post.lua "$1" \
      >"$OUT/logs/wrk.txt" 2>&1 || true
    local line; line=$(grep '^{"mode":"wrk"' "$OUT/logs/wrk.txt" || echo '{"requests":0,"err_connect":1}')
    echo "$(jnum "$line" requests) $(( $(jnum "$line" err_connect) + $(jnum "$line" err_read) + $(jnum "$line" err_status) + $(jnum "$line" err_timeout) ))"
  else
    timeout $((SECS + 30)) h2load -c4 -m8 -t1 -D "$SECS" -d "$OUT/send1k.json" -H 'content-type: application/json' \
      "$1" >"$OUT/logs/h2load.txt" 2>&1 || true
    awk '/^requests:/ {print $8, $10 + $12 + $14}' "$OUT/logs/h2load.txt"
  fi
}
for tool in wrk h2load; do command -v $tool >/dev/null || { echo "$tool is needed (Debian: wrk, nghttp2-client)" >&2; exit 2; }; done

: >"$OUT/ab.jsonl"
record() { echo "$1" >>"$OUT/ab.jsonl"; }

for round in $(seq "$ROUNDS"); do
  # Alternate which binary goes first.
  order=("A:$OLD" "B:$NEW"); [ $((round % 2)) = 0 ] && order=("B:$NEW" "A:$OLD")
  targets=("${order[@]}"); [ "$NGINX" = 1 ] && targets+=("N:nginx")
  for proto in h1 h2; do
    direct=$(rate_run "http://127.0.0.1:$UPORT/" "$proto")
    record "{\"round\":$round,\"proto\":\"$proto\",\"target\":\"direct\",$(sed 's/^{//' <<<"$direct")"
    for entry in "${targets[@]}"; do
      name=${entry%%:*}; bin=${entry#*:}
      start_target "$name" "$bin" "$proto"
      # Warm-up: connections, lazily built state.
      "$UP" rate --url "$URL" --body "$OUT/send1k.json" --rate 500 --secs 1 --conns 4 >/dev/null 2>&1 || true
      t0=$(ticks "$GW_PID")
      line=$(rate_run "$URL" "$proto")
      t1=$(ticks "$GW_PID")
      calls=$(jnum "$line" ok); calls=${calls:-0}
      cpu_us=$(awk -v t=$((t1 - t0)) -v hz="$CLK_TCK" -v n="$calls" 'BEGIN { printf "%.2f", (n > 0 ? t / hz * 1e6 / n : 0) }')
      record "{\"round\":$round,\"proto\":\"$proto\",\"target\":\"$name\",\"cpu_us_per_call\":$cpu_us,$(sed 's/^{//' <<<"$line")"
      echo "round $round $proto $name: $calls calls, ${cpu_us} µs CPU a call, p99 $(jnum "$line" p99_us) µs (direct $(jnum "$direct" p99_us) µs)"
      t0=$(ticks "$GW_PID")
      read -r requests errors <<<"$(saturate "$URL" "$proto")"
      t1=$(ticks "$GW_PID")
      [ "${errors:-1}" = 0 ] || echo "  saturation $proto $name: $errors errors" >&2
      sat_us=$(awk -v t=$((t1 - t0)) -v hz="$CLK_TCK" -v n="${requests:-0}" 'BEGIN { printf "%.2f", (n > 0 ? t / hz * 1e6 / n : 0) }')
      record "{\"round\":$round,\"proto\":\"$proto\",\"target\":\"$name\",\"sat_requests\":${requests:-0},\"sat_cpu_us_per_call\":$sat_us}"
      echo "round $round $proto $name: saturation ${requests:-0} calls in ${SECS}s, ${sat_us} µs CPU a call"
      stop "$GW_PID"
    done
  done
  for entry in "${order[@]}"; do
    name=${entry%%:*}; bin=${entry#*:}
    start_gateway "$bin"
    "$UP" rate --url "http://127.0.0.1:$GPORT/" --body "$OUT/send1k.json" --rate 200 --secs 0.5 --conns 4 >/dev/null 2>&1 || true
    "$UP" sse --url "http://127.0.0.1:$GPORT/" --body "$OUT/stream.json" --streams 20 --conns 4 --events 10 >/dev/null 2>&1 || true
    sleep 1
    before=$(rss_kb "$GW_PID")
    "$UP" idle --url "http://127.0.0.1:$GPORT/" --body "$OUT/stream.json" --streams "$IDLE" --hold 60 \
      -H 'x-bench-events: hold' >"$OUT/logs/idle.json" 2>>"$OUT/logs/idle.err" &
    idle_pid=$!; PIDS+=("$idle_pid")
    for _ in $(seq 600); do [ -s "$OUT/logs/idle.json" ] && break; sleep 0.1; done
    sleep 1
    during=$(rss_kb "$GW_PID")
    opened=$(jnum "$(head -1 "$OUT/logs/idle.json")" opened); opened=${opened:-0}
    stop "$idle_pid"; rm -f "$OUT/logs/idle.json"
    per=$(awk -v a="$before" -v b="$during" -v n="$opened" 'BEGIN { printf "%.2f", (n > 0 ? (b - a) / n : 0) }')
    record "{\"round\":$round,\"proto\":\"h1\",\"target\":\"$name\",\"idle_streams\":$opened,\"kib_per_idle_stream\":$per}"
    echo "round $round idle $name: $opened streams, $per KiB a stream"
    stop "$GW_PID"
  done
done

python3 - "$OUT/ab.jsonl" "$OLD" "$NEW" >"$OUT/ab.md" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = lambda xs: statistics.median(xs) if xs else float("nan")
def pick(target, proto, key):
    return [r[key] for r in rows if r["target"] == target and r["proto"] == proto and key in r]
print(f"A = `{sys.argv[2]}`, B = `{sys.argv[3]}`; medians of {max(r['round'] for r in rows)} alternating rounds.\n")
nginx = any(r["target"] == "N" for r in rows)
if nginx:
    print("N = nginx, a plain reverse proxy (bench/nginx.conf), in the same rounds.\n")
    print("| measure | proto | A | B | N | B / A | B / N | A / N |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for key, what in (("sat_cpu_us_per_call", "at saturation"), ("cpu_us_per_call", "at the fixed rate")):
        for proto, name in (("h1", "HTTP/1.1"), ("h2", "h2c")):
            a, b, n = (med(pick(t, proto, key)) for t in ("A", "B", "N"))
            print(f"| CPU per `message/send` 1 KiB call {what} (µs) | {name} | {a:.1f} | {b:.1f} | {n:.1f} | {b / a:.2f}× | {b / n:.2f}× | {a / n:.2f}× |")
    print()
print("| measure | proto | A | B | B / A |")
print("|---|---|---:|---:|---:|")
for key, what in (("sat_cpu_us_per_call", "at saturation"), ("cpu_us_per_call", "at the fixed rate")):
    for proto, name in (("h1", "HTTP/1.1"), ("h2", "h2c")):
        a, b = med(pick("A", proto, key)), med(pick("B", proto, key))
        print(f"| CPU per `message/send` 1 KiB call {what} (µs) | {name} | {a:.1f} | {b:.1f} | {b / a:.2f}× |")
for proto, name in (("h1", "HTTP/1.1"), ("h2", "h2c")):
    a, b = med(pick("A", proto, "sat_requests")), med(pick("B", proto, "sat_requests"))
    print(f"| calls answered at saturation | {name} | {a:.0f} | {b:.0f} | {b / a:.2f}× |")
for proto, name in (("h1", "HTTP/1.1"), ("h2", "h2c")):
    added = {}
    for t in ("A", "B"):
        diffs = []
        for r in rows:
            if r["target"] == t and r["proto"] == proto and "p99_us" in r:
                d = [x for x in rows if x["target"] == "direct" and x["round"] == r["round"] and x["proto"] == proto]
                if d:
                    diffs.append(r["p99_us"] - d[0]["p99_us"])
        added[t] = med(diffs)
    print(f"| added p99 at the fixed rate (µs) | {name} | {added['A']:.0f} | {added['B']:.0f} | {added['B'] - added['A']:+.0f} µs |")
a, b = med(pick("A", "h1", "kib_per_idle_stream")), med(pick("B", "h1", "kib_per_idle_stream"))
print(f"| memory per idle stream (KiB) | HTTP/1.1 | {a:.2f} | {b:.2f} | {b / a:.2f}× |")
EOF
cat "$OUT/ab.md"
