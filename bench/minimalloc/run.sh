#!/usr/bin/env bash
# Builds and runs the MiniMalloc "challenging" benchmark (npu::planMemory on every instance,
# each plan validated by npu::checkMemoryPlan); prints the Markdown table recorded in
# docs/PERFORMANCE.md. Usage: bench/minimalloc/run.sh [BUILD_DIR] [extra minimalloc_bench args]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
shift || true
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release
fi
ninja -C "$build" minimalloc_bench
echo "machine: $(nproc) cores, $(uname -m); commit $(git -C "$root" rev-parse --short HEAD)"
"$build/bench/minimalloc/minimalloc_bench" "$@"
