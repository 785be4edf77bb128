#!/bin/bash
# Simulator benchmark: compiles ResNet-50 (torchvision, 1x3x224x224, random weights) for
# npu-base and runs its NPU segments functional and --timing-only, with and without hazard
# checking (bench/sim/SimBench.cpp). Figures go to docs/PERFORMANCE.md, "Simulator".
#   bash bench/sim/run.sh BUILD_DIR [WORK_DIR]
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR [WORK_DIR]}
work=${2:-$build/bench-sim}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work"
[ -f "$work/resnet50.onnx" ] || /usr/bin/python3 "$root/bench/sim/export_resnet50.py" "$work/resnet50.onnx"
"$build/tools/npuc" compile "$work/resnet50.onnx" --target "$root/configs/npu-base.yaml" \
  -o "$work/resnet50.npub"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "commit: $(git -C "$root" rev-parse --short HEAD)"
"$build/bench/sim/sim_bench" "$work/resnet50.npub" 3
