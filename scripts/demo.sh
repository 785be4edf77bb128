#!/usr/bin/env bash
# The README's first command: build, then compile the bundled CNN for configs/npu-base.yaml, run it
# on the cycle-approximate simulator, check it against the reference executor, print the report.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/build.sh"
exec "$root/build/tools/npuc" demo --root "$root"
