#!/usr/bin/env bash
# cosim_bench.sh - RTL vs cycle-approximate simulator: cycle error and simulation speed for the
# compiled kernels of the rtl tests and for TinyCNN compiled for configs/npu-rtl.yaml.
# Usage: bench/rtl/cosim_bench.sh BUILD_DIR   (after `ninja -C BUILD_DIR npuc rtl_tests`)
# Prints, per kernel: instructions, simulator and RTL cycles, error, and cycles/s: simulator
# functional and --timing-only, RTL with model construction and backdoor loads and the clocked run
# alone (docs/PERFORMANCE.md, "RTL"); then the simulator's setup: decoding the program, which both
# simulator figures include (the RTL's counterpart, loading the program, is outside "clocked").
# Each figure is one run: repeat the script and take the median.
set -euo pipefail
B=${1:?usage: cosim_bench.sh BUILD_DIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "# commit: $(git -C "$ROOT" rev-parse --short HEAD)"
echo "## compiled kernels (tests/rtl/RtlKernelTest.cpp)"
"$B/tests/rtl/rtl_tests" --gtest_filter='RtlKernel.*' | grep -E '^[A-Za-z]+: [0-9]+ instructions|^cycles:|^speed:|^setup:'
echo "## TinyCNN (models/tinycnn.onnx) for npu-rtl"
"$B/tools/npuc" compile "$ROOT/models/tinycnn.onnx" --target "$ROOT/configs/npu-rtl.yaml" \
  -o "$TMP/tinycnn.npub" >/dev/null
"$B/tools/npuc" cosim "$TMP/tinycnn.npub" | grep -E '^==|^cycles:|^speed:|^setup:'
