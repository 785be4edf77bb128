#!/usr/bin/env bash
# A long fuzzing campaign over every libFuzzer harness (issue 18: each runs for at least 1 million
# executions or 30 minutes with 0 crashes), one harness after another, in the sanitizer build
# (scripts/sanitize.sh builds it). Prints a markdown table row per harness for docs/TESTING.md:
# executions, seconds, corpus size, findings.
#
#   bash scripts/fuzz-campaign.sh [BUILD_DIR] [RUNS] [SECONDS] [HARNESS...]
#
# Defaults: build-asan, 1000000 runs, 1800 s, every harness. Each harness starts from its committed
# corpus (fuzz/corpus/<name>) plus a scratch corpus under BUILD_DIR/fuzz/campaign/<name> that
# persists between campaigns; findings go to BUILD_DIR/fuzz/campaign/findings/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build-asan}"
runs="${2:-1000000}"
secs="${3:-1800}"
shift $(($# < 3 ? $# : 3))
harnesses=("$@")
if [ ${#harnesses[@]} -eq 0 ]; then
  harnesses=(Npy Asm Decode Target Package Tir Sim Onnx)
fi
out="$build/fuzz/campaign"
mkdir -p "$out/findings"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
export ASAN_SYMBOLIZER_PATH="${ASAN_SYMBOLIZER_PATH:-/usr/lib/llvm-16/bin/llvm-symbolizer}"
# The harnesses carry no version, so the table names the checkout they are meant to be built
# from (`-dirty`: uncommitted changes); rebuild BUILD_DIR from it first (scripts/sanitize.sh),
# or copy the binaries out and say which commit they were built at.
commit="$(git -C "$root" describe --always --dirty)"
echo "| harness | executions | seconds | corpus | findings | checkout |"
echo "|---|---|---|---|---|---|"
status=0
for h in "${harnesses[@]}"; do
  lower="$(echo "$h" | tr '[:upper:]' '[:lower:]')"
  exe="$build/fuzz/fuzz_$h"
  if [ ! -x "$exe" ]; then
    echo "fuzz-campaign: $exe is missing (build with scripts/sanitize.sh)" >&2
    exit 2
  fi
  scratch="$out/$lower"
  mkdir -p "$scratch"
  log="$out/$lower.log"
  start=$(date +%s)
  rc=0
  "$exe" -runs="$runs" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2560 \
    -malloc_limit_mb=1024 -print_final_stats=1 -artifact_prefix="$out/findings/$lower-" \
    "$scratch" "$root/fuzz/corpus/$lower" >"$log" 2>&1 || rc=$?
  end=$(date +%s)
  execs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)"
  findings="$(find "$out/findings" -name "$lower-*" | wc -l)"
  corpus="$(find "$scratch" -type f | wc -l)"
  echo "| $h | ${execs:-?} | $((end - start)) | $corpus | $findings | $commit |"
  if [ "$rc" -ne 0 ] || [ "$findings" -ne 0 ]; then
    echo "fuzz-campaign: $h exited $rc with $findings finding(s); see $log" >&2
    status=1
  fi
done
exit $status
