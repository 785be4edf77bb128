#!/usr/bin/env bash
# The sanitizer and fuzz-smoke stage of the README's test command (and CI's), on its own:
#   bash scripts/sanitize.sh            # build build-asan/ and run its tests
# Builds npuc with clang-16 under AddressSanitizer + UndefinedBehaviorSanitizer (UBSan does not
# recover: a finding fails its test) together with the libFuzzer harnesses (fuzz/), then runs
# every test except the whole-model, slow, RTL and random-graph labels (those run in the plain
# build; the random graphs under ASan are a campaign of their own, docs/DIFFTEST.md), and
# the `fuzz` label: each harness over its committed corpus plus a fixed-seed smoke run.
# docs/TESTING.md says how to run one harness for a long campaign.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/install-deps.sh"
# -O1 with line tables: the usual sanitizer trade-off (fast enough, exact source lines in reports).
CC=clang-16 CXX=clang++-16 cmake -G Ninja -S "$root" -B "$root/build-asan" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DNPUC_SANITIZE=address,undefined -DNPUC_FUZZ=ON >/dev/null
ninja -C "$root/build-asan" -j"$(nproc)"
export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-16/bin/llvm-symbolizer
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$root/build-asan" --output-on-failure -j"$(nproc)" -LE 'models|slow|rtl|difftest|conformance'
