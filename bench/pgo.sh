#!/usr/bin/env bash
# A profile-guided (PGO) release build of the gateway, trained on the bench's
# workloads. The container image is built this way (Dockerfile); a plain
# `cargo build --release` is not. Measured in bench/profile.md ("A build
# guided by a profile").
#
#   bash bench/pgo.sh     -> target/pgo/dist/a2a-gateway (~13 min from scratch on 2 cores)
#
# 1. llvm-profdata from rustup's llvm-tools component (installed if missing:
#    it must match rustc's LLVM, so Debian's llvm will not do).
# 2. An instrumented release build (target/pgo-gen).
# 3. Training on 127.0.0.1, with the bench upstream (bench/upstream.rs) and
#    the bench's own clients (bench/client.rs), in three gateway runs, each
#    configured as bench/run.sh configures it (bench/configs.sh):
#    - plain (bench/gateway.toml): message/send 1 KiB and 64 KiB, tasks/get
#      and message/stream, over HTTP/1.1 and h2c; the card, the metrics, and
#      a sample of the answers to bad calls (parse error, invalid request,
#      unknown method, wrong content type and path);
#    - TLS + JWT: message/send 1 KiB, tasks/get and message/stream over TLS
#      with a verified ES256 token, HTTP/1.1 and h2; calls without a token
#      and with a forged one;
#    - a fleet of nine agents: message/send 1 KiB routed by skill.
#    Bounded: about two minutes. Any failed call stops the build: a profile
#    of error answers would lay out the wrong code as hot.
# 4. The counts merged, and the build that uses them (target/pgo).
#
# The profile fits the code it was taken from, so it is never committed: the
# build takes it afresh. Env: PGO_PORT_BASE (default: a free range from 23400).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/configs.sh

OUT=target/pgo-data
rm -rf "$OUT"
mkdir -p "$OUT/raw"

sysroot=$(rustc --print sysroot)
host=$(rustc -vV | awk '/^host:/ {print $2}')
profdata=$sysroot/lib/rustlib/$host/bin/llvm-profdata
if [ ! -x "$profdata" ]; then
  echo "pgo: installing rustup's llvm-tools (for llvm-profdata)"
  rustup component add llvm-tools
fi

# The instrumented and the final build are the same command apart from
# RUSTFLAGS: built together with the examples, cargo would unify other
# features into the gateway, its functions' hashes would not match the
# profile, and LLVM would drop their counts without a word.
echo "pgo: instrumented build (target/pgo-gen)"
RUSTFLAGS="-Cprofile-generate=$PWD/$OUT/raw" \
  cargo build --quiet --locked --profile dist --bin a2a-gateway --target-dir target/pgo-gen
# The clients and the upstream are not instrumented: only the gateway's
# counts go into the profile.
cargo build --quiet --locked --release --example bench-upstream
UP=target/release/examples/bench-upstream

python3 bench/bodies.py "$OUT"
SECRETS=$PWD/$OUT/secrets
"$UP" secrets "$SECRETS" >/dev/null
TOKEN=$(cat "$SECRETS/token")
FLEET_N=8
tls_config "$SECRETS" >"$OUT/gateway-tls.toml"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
ports_free() { # FIRST COUNT
  local p
  for p in $(seq "$1" $(($1 + $2 - 1))); do port_free "$p" || return 1; done
}
BASE=${PGO_PORT_BASE:-23400}
until ports_free "$BASE" $((3 + FLEET_N)); do BASE=$((BASE + 20)); done
UPORT=$BASE; GPORT=$((BASE + 1)); ADMIN=$((BASE + 2)); FPORT=$((BASE + 3))
fleet_config "$FPORT" "$FLEET_N" >"$OUT/gateway-fleet.toml"

PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true' EXIT
wait_ok() { # URL [curl options]: until it answers 2xx (at most 20 s)
  local url=$1 _
  shift
  for _ in $(seq 100); do
    curl -sf --max-time 2 -o /dev/null "$@" "$url" && return 0
    sleep 0.2
  done
  echo "pgo: $url did not answer" >&2
  return 1
}

"$UP" serve "$UPORT" >"$OUT/upstream.log" 2>&1 &
PIDS+=($!)
"$UP" serve "$FPORT" --fleet "$FLEET_N" >"$OUT/fleet.log" 2>&1 &
PIDS+=($!)
wait_ok "http://127.0.0.1:$UPORT/.well-known/agent-card.json"
wait_ok "http://127.0.0.1:$FPORT/.well-known/agent-card.json"

GW=""
gateway_start() { # CONFIG: the instrumented gateway, ready
  LLVM_PROFILE_FILE="$PWD/$OUT/raw/gateway-%p-%m.profraw" \
    target/pgo-gen/release/a2a-gateway run --config "$1" \
    --listen "127.0.0.1:$GPORT" --admin-listen "127.0.0.1:$ADMIN" \
    --upstream "bench=http://127.0.0.1:$UPORT" >>"$OUT/gateway.log" 2>&1 &
  GW=$!
  PIDS+=("$GW")
  wait_ok "http://127.0.0.1:$ADMIN/readyz"
}
gateway_stop() { # the profile is written when the gateway exits
  kill -TERM "$GW"
  wait "$GW" || true
}
load() { # URL SECS [client options]: every unary workload, then streams
  local url=$1 secs=$2 body
  shift 2
  for body in send1k get send64k; do
    "$UP" rate --url "$url" --body "$OUT/$body.json" --rate 4000 --secs "$secs" --conns 16 "$@" >/dev/null
  done
  "$UP" sse --url "$url" --body "$OUT/stream.json" --streams 2000 --conns 8 --events 10 "$@" >/dev/null
}
answers() { # STATUS URL [curl options]: 50 calls that must answer STATUS
  local want=$1 url=$2 got _
  shift 2
  for _ in $(seq 50); do
    got=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$@" "$url")
    [ "$got" = "$want" ] || { echo "pgo: $url answered $got, not $want" >&2; return 1; }
  done
}

echo "pgo: training, plain HTTP (about a minute)"
gateway_start bench/gateway.toml
U=http://127.0.0.1:$GPORT/
load "$U" 4
load "$U" 4 --h2
answers 200 "$U.well-known/agent-card.json"
answers 200 "http://127.0.0.1:$ADMIN/metrics"
post=(-X POST -H 'content-type: application/json')
answers 200 "$U" "${post[@]}" --data '{"jsonrpc":"2.0","id":1,"method":'
answers 200 "$U" "${post[@]}" --data '{"jsonrpc":"2.0","id":1}'
answers 200 "$U" "${post[@]}" --data '{"jsonrpc":"2.0","id":1,"method":"no/such/method","params":{}}'
answers 415 "$U" -X POST -H 'content-type: text/plain' --data '{}'
answers 404 "${U}no/such/path"
gateway_stop

echo "pgo: training, TLS + JWT (about 30 s)"
gateway_start "$OUT/gateway-tls.toml"
U=https://127.0.0.1:$GPORT/
load "$U" 2 --cacert "$SECRETS/cert.pem" -H "authorization: Bearer $TOKEN"
load "$U" 2 --h2 --cacert "$SECRETS/cert.pem" -H "authorization: Bearer $TOKEN"
answers 401 "$U" --cacert "$SECRETS/cert.pem" "${post[@]}" --data-binary "@$OUT/send1k.json"
# Forged: the signature's first character changed (not its last, whose low
# bits may be padding that a decoder ignores).
sig=${TOKEN##*.}
case ${sig:0:1} in A) first=B ;; *) first=A ;; esac
answers 401 "$U" --cacert "$SECRETS/cert.pem" "${post[@]}" --data-binary "@$OUT/send1k.json" \
  -H "authorization: Bearer ${TOKEN%.*}.$first${sig:1}"
gateway_stop

echo "pgo: training, a fleet routed by skill (about 10 s)"
gateway_start "$OUT/gateway-fleet.toml"
U=http://127.0.0.1:$GPORT/
for proto in "" --h2; do
  "$UP" rate --url "$U" --body "$OUT/fleet1k.json" --rate 4000 --secs 3 --conns 16 $proto \
    --expect '"text":"translate: ' >/dev/null
done
gateway_stop

ls "$OUT"/raw/gateway-*.profraw >/dev/null
"$profdata" merge -o "$OUT/gateway.profdata" "$OUT"/raw/gateway-*.profraw
echo "pgo: build using the profile (target/pgo)"
RUSTFLAGS="-Cprofile-use=$PWD/$OUT/gateway.profdata -Cllvm-args=-pgo-warn-missing-function=false" \
  cargo build --quiet --locked --profile dist --bin a2a-gateway --target-dir target/pgo
echo "pgo: target/pgo/dist/a2a-gateway"
