#!/bin/bash
# run.sh - issue 20's graph-scheduling benchmark: DRAM traffic against the compulsory bytes and
# cycles against the whole-graph bound (REPORT.json `dram_accounting`, docs/REPORT.md) for
# ResNet-50 (batch 1 and 8), MobileNetV2, a U-Net and a BERT encoder at sequence 512, on npu-base
# and on a bandwidth-starved copy (DRAM 4 B/cycle), with each graph-scheduling ablation (batch 1:
# --no-depth-first; batch 8: --no-batch-split, --no-batch-weight-reuse; all: --no-residency); plus the
# compile time of each. Prints a markdown table (docs/PERFORMANCE.md, "Graph scheduling").
#   bash bench/graph/run.sh BUILD_DIR [WORK_DIR]
set -euo pipefail
build=$(cd "${1:?usage: run.sh BUILD_DIR [WORK_DIR]}" && pwd)
work=${2:-$build/bench-graph}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work"
[ -f "$work/bert512_b1.onnx" ] || /usr/bin/python3 "$root/bench/graph/export.py" "$work" >/dev/null
# The starved copy: the same description with the DRAM's bytes_per_cycle 16 -> 4.
sed -e 's/^name: npu-base/name: npu-base-dram4/' \
    -e '/^dram:/,/^[a-z]/s/bytes_per_cycle: 16 /bytes_per_cycle: 4  /' \
    "$root/configs/npu-base.yaml" > "$work/npu-base-dram4.yaml"
grep -A1 '^dram:' "$work/npu-base-dram4.yaml" | grep -q 'bytes_per_cycle: 4 ' ||
  { echo "run.sh: could not make the DRAM 4 B/cycle target" >&2; exit 1; }
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "commit: $(git -C "$root" rev-parse --short HEAD)"
rows="$work/rows.tsv"
: > "$rows"
run() { # model target ablation flags...
  local model=$1 target=$2 abl=$3
  shift 3
  local tag="$model.$(basename "$target" .yaml).$abl"
  local start end
  start=$(date +%s.%N)
  "$build/tools/npuc" compile "$work/$model.onnx" --target "$target" -o "$work/$tag.npub" "$@" \
    > "$work/$tag.compile.log" 2>&1
  end=$(date +%s.%N)
  "$build/tools/npuc" run "$work/$tag.npub" --input "input=$work/${model}_input.npy" \
    --output-dir "$work/$tag.out" --report "$work/$tag.json" > "$work/$tag.run.log"
  printf '%s\t%s\t%s\t%s\t%s\n' "$model" "$(basename "$target" .yaml)" "$abl" \
    "$(echo "$end - $start" | bc)" "$work/$tag.json" >> "$rows"
}
for target in "$root/configs/npu-base.yaml" "$work/npu-base-dram4.yaml"; do
  for model in resnet50_b1 resnet50_b8 mobilenet_v2_b1 unet_b1 bert512_b1; do
    run "$model" "$target" default
  done
  for model in resnet50_b1 resnet50_b8 mobilenet_v2_b1; do
    run "$model" "$target" no-residency --no-residency
    run "$model" "$target" no-batch-split --no-batch-split
    run "$model" "$target" no-batch-weight-reuse --no-batch-weight-reuse
  done
  for model in resnet50_b1 mobilenet_v2_b1 unet_b1; do
    run "$model" "$target" no-depth-first --no-depth-first
  done
done
/usr/bin/python3 "$root/bench/graph/table.py" "$rows"
