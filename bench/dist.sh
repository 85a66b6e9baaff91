#!/usr/bin/env bash
# The shipped build without a profile to guide it: cargo's `dist` profile
# (fat LTO, one codegen unit; Cargo.toml) with LLVM's inlining threshold
# raised. Extra arguments go to `cargo build`; the binaries land in
# target/dist/. Used by the image (Dockerfile, PGO=0) and bench/run.sh.
#
#   bash bench/dist.sh --bin a2a-gateway    -> target/dist/a2a-gateway
#
# Why the threshold: LLVM's inliner takes a call when the callee's cost is
# under a threshold (~250 at -O3). A call through the gateway is thousands
# of small functions across hyper, http, tokio and our own readers, many
# just over it; raising the threshold lets fat LTO fold more of them into
# their callers. Measured in bench/profile.md ("A higher inlining
# threshold"): -8.7 % instructions a call (callgrind, message/send 1 KiB)
# and ~5-8 % more calls a second at saturation, for a 50 % larger .text and
# ~2 MiB more RSS. It is not set for `cargo build --release`, whose first
# build a newcomer waits for. A RUSTFLAGS already set replaces it.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="${RUSTFLAGS:--C llvm-args=-inline-threshold=1000}"
exec cargo build --locked --profile dist "$@"
