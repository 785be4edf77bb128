#!/bin/bash
# NPU benchmark: every conv/linear layer of ResNet-50 and MobileNetV2 (torchvision, batch 1,
# 224x224, deduplicated with multiplicity) as single-op models, the whole networks, and AlexNet's
# first conv, compiled and simulated (timing-only, hazard-checked) for npu-base, npu-large and
# npu-int8, with each ablation; AlexNet conv1 also on configs/npu-32x32.yaml (the SCALE-Sim
# configuration). Figures go to docs/PERFORMANCE.md, "NPU benchmark".
#   bash bench/npu/run.sh BUILD_DIR [WORK_DIR]
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR [WORK_DIR]}
work=${2:-$build/bench-npu}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work"
[ -f "$work/manifest.tsv" ] || /usr/bin/python3 "$root/bench/npu/export_layers.py" "$work"
[ -x "$build/bench/npu/npu_bench" ] || ninja -C "$build" npu_bench
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "commit: $(git -C "$root" rev-parse --short HEAD)"
for target in npu-base npu-large; do
  echo
  "$build/bench/npu/npu_bench" "$root/configs/$target.yaml" "$work"
done
echo
# int8: post-training-quantised code (scales calibrated on a fixed-seed standard-normal input).
"$build/bench/npu/npu_bench" "$root/configs/npu-int8.yaml" "$work"
echo
"$build/bench/npu/npu_bench" "$root/configs/npu-32x32.yaml" "$work" alexnet_conv1
