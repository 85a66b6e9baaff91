#!/usr/bin/env bash
# A profile-guided (PGO) release build of the gateway, trained on the bench's
# workloads. Optional: the default build (cargo build --release, the
# Dockerfile) does not use it. Measured in bench/profile.md ("A build guided
# by a profile").
#
#   bash bench/pgo.sh     -> target/pgo/release/a2a-gateway (~15 min on 2 cores)
#
# 1. llvm-profdata from rustup's llvm-tools component (installed if missing:
#    it must match rustc's LLVM, so Debian's llvm will not do).
# 2. An instrumented release build (target/pgo-gen).
# 3. Training on 127.0.0.1: the bench upstream (bench/upstream.rs) and the
#    instrumented gateway (bench/gateway.toml); message/send 1 KiB and
#    64 KiB, tasks/get and message/stream, over HTTP/1.1 and h2c, with the
#    bench's own clients (bench/client.rs), then the card. Bounded: about a
#    minute.
# 4. The counts merged, and the build that uses them (target/pgo).
#
# The profile fits the code it was taken from: re-run after any change.
set -euo pipefail
cd "$(dirname "$0")/.."

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

echo "pgo: instrumented build (target/pgo-gen)"
RUSTFLAGS="-Cprofile-generate=$PWD/$OUT/raw" \
  cargo build --quiet --release --bin a2a-gateway --target-dir target/pgo-gen
# The clients and the upstream are not instrumented: only the gateway's
# counts go into the profile.
cargo build --quiet --release --example bench-upstream
UP=target/release/examples/bench-upstream

python3 bench/bodies.py "$OUT"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
BASE=${PGO_PORT_BASE:-23400}
while ! { port_free "$BASE" && port_free $((BASE + 1)) && port_free $((BASE + 2)); }; do
  BASE=$((BASE + 10))
done
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true' EXIT

"$UP" serve "$BASE" >"$OUT/upstream.log" 2>&1 &
PIDS+=($!)
LLVM_PROFILE_FILE="$PWD/$OUT/raw/gateway-%p-%m.profraw" \
  target/pgo-gen/release/a2a-gateway run --config bench/gateway.toml \
  --listen "127.0.0.1:$((BASE + 1))" --admin-listen "127.0.0.1:$((BASE + 2))" \
  --upstream "bench=http://127.0.0.1:$BASE" >"$OUT/gateway.log" 2>&1 &
GW=$!
PIDS+=("$GW")
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$((BASE + 2))/readyz" >/dev/null && break
  sleep 0.2
done
U=http://127.0.0.1:$((BASE + 1))/

echo "pgo: training (about a minute)"
for proto in "" --h2; do
  for body in send1k get send64k; do
    "$UP" rate --url "$U" --body "$OUT/$body.json" --rate 4000 --secs 4 --conns 16 $proto >/dev/null
  done
  "$UP" sse --url "$U" --body "$OUT/stream.json" --streams 2000 --conns 8 --events 10 $proto >/dev/null
done
curl -sf "$U.well-known/agent-card.json" >/dev/null

# The profile is written when the gateway exits.
kill -TERM "$GW"
wait "$GW" || true
ls "$OUT"/raw/gateway-*.profraw >/dev/null

"$profdata" merge -o "$OUT/gateway.profdata" "$OUT"/raw/gateway-*.profraw
echo "pgo: build using the profile (target/pgo)"
RUSTFLAGS="-Cprofile-use=$PWD/$OUT/gateway.profdata -Cllvm-args=-pgo-warn-missing-function=false" \
  cargo build --quiet --release --bin a2a-gateway --target-dir target/pgo
echo "pgo: target/pgo/release/a2a-gateway"
