#!/usr/bin/env bash
# The README's second command (and CI's): build, then run every test suite with ctest; then the
# sanitizer stage (ASan + UBSan build, its tests and the fuzz smoke runs: scripts/sanitize.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/build.sh"
ctest --test-dir "$root/build" --output-on-failure -j"$(nproc)"
bash "$root/scripts/sanitize.sh"
