#!/usr/bin/env bash
# Builds the fuzz targets and runs each for FUZZ_SECONDS (default 30);
# exits non-zero if any target finds a crash, a hang (an input slower than
# FUZZ_TIMEOUT seconds) or runs out of memory. See fuzz/README.md.
#
#   bash fuzz/run.sh                           # every target, 30 s each
#   FUZZ_SECONDS=3600 bash fuzz/run.sh         # an hour each
#   FUZZ_TARGETS="sse_scanning" bash fuzz/run.sh
#
# FUZZ_PARALLEL targets run at once (default: the number of cores, at most
# 4). The committed seeds (fuzz/seeds/<target>/) are copied into the working
# corpus (fuzz/corpus/<target>/, gitignored) before each run, so the corpus
# grows across local runs and always starts from real A2A traffic.
set -euo pipefail
cd "$(dirname "$0")"

SECONDS_EACH="${FUZZ_SECONDS:-30}"
TIMEOUT_EACH="${FUZZ_TIMEOUT:-10}"
TARGETS="${FUZZ_TARGETS:-jsonrpc_front_door card_aggregation sse_scanning agent_answer config_parsing version_bridge rest_routes}"
CORES=$(nproc 2>/dev/null || echo 1)
PARALLEL="${FUZZ_PARALLEL:-$(( CORES < 4 ? CORES : 4 ))}"
# No sanitizer: the gateway has no unsafe code, and ASan would double the
# build time. 16 codegen units keep a from-scratch build short at a small
# cost in executions per second (FUZZ_BUILD_FLAGS to change).
BUILD_FLAGS="${FUZZ_BUILD_FLAGS:---sanitizer none --codegen-units 16}"
# cargo-fuzz passes nightly-only flags; the stable toolchain accepts them so.
export RUSTC_BOOTSTRAP=1

if ! command -v cargo-fuzz >/dev/null 2>&1; then
  echo "==> installing cargo-fuzz (once; it stays in ~/.cargo/bin)"
  cargo install cargo-fuzz --locked
fi

echo "==> building the fuzz targets ($BUILD_FLAGS)"
started=$(date +%s)
# shellcheck disable=SC2086 # BUILD_FLAGS is a list of flags
cargo fuzz build $BUILD_FLAGS
echo "    built in $(( $(date +%s) - started ))s"

# Runs one target; its log, exit status and the inputs it saved as crashes
# go to artifacts/<target>/.
fuzz_one() {
  local target=$1 dir="artifacts/$1"
  local status=0
  # shellcheck disable=SC2086
  cargo fuzz run $BUILD_FLAGS "$target" "corpus/$target" -- \
    -max_total_time="$SECONDS_EACH" -timeout="$TIMEOUT_EACH" -rss_limit_mb=2048 \
    -print_final_stats=1 >"$dir/last-run.log" 2>&1 || status=$?
  echo "$status" >"$dir/last-run.status"
}

for target in $TARGETS; do
  if [ ! -d "seeds/$target" ]; then
    echo "no seeds for target '$target' (fuzz/seeds/$target)" >&2
    exit 2
  fi
  mkdir -p "corpus/$target" "artifacts/$target"
  find "seeds/$target" -maxdepth 1 -type f ! -name '*.py' -exec cp -n {} "corpus/$target/" \;
  rm -f "artifacts/$target/last-run.status"
  touch "artifacts/$target/.run-started"
done

echo "==> fuzzing: ${SECONDS_EACH}s per target, $PARALLEL at a time"
running=()
for target in $TARGETS; do
  echo "    $target: from $(find "corpus/$target" -type f | wc -l) inputs"
  fuzz_one "$target" &
  running+=("$!")
  if [ "${#running[@]}" -ge "$PARALLEL" ]; then
    wait "${running[0]}" || true
    running=("${running[@]:1}")
  fi
done
for pid in "${running[@]}"; do wait "$pid" || true; done

failed=()
summary=()
for target in $TARGETS; do
  dir="artifacts/$target"
  log="$dir/last-run.log"
  status=$(cat "$dir/last-run.status" 2>/dev/null || echo 99)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n1 | cut -d' ' -f2 || true)
  found=$(find "$dir" -maxdepth 1 -type f -newer "$dir/.run-started" \
    \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | sort)
  rm -f "$dir/.run-started"
  line=$(printf '%-20s %10s runs %8s exec/s  cov %s' "$target" "${runs:-?}" "${speed:-?}" "${cov:-?}")
  if [ "$status" -ne 0 ] || [ -n "$found" ]; then
    failed+=("$target")
    summary+=("$line  FAILED")
    echo "==> $target FAILED (exit $status); from fuzz/$log:"
    grep -E 'panicked|assertion|ERROR|SUMMARY|Test unit written|Base64' "$log" | head -n 20 | sed 's/^/    /'
    for input in $found; do
      echo "    input: fuzz/$input"
      echo "    reproduce: cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run $BUILD_FLAGS $target $input"
    done
  else
    summary+=("$line  ok")
  fi
done

echo
echo "==> fuzzing summary (${SECONDS_EACH}s per target)"
printf '    %s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "    no crash. To fuzz longer: FUZZ_SECONDS=3600 bash fuzz/run.sh (see fuzz/README.md)"
