#!/usr/bin/env bash
# bench/tune/run.sh - the auto-tuner's benchmark (issue 16, docs/TUNING.md): tunes ResNet-50 and
# MobileNetV2 on npu-base, npu-large and npu-int8, and the BERT-style encoder on npu-base, and
# prints each run's summary (whole-network totals, roofline ratios, the cost model's held-back
# rank correlation, the whole model compiled and simulated untuned and tuned) and wall time.
# A benchmark, not a test: figures go to docs/PERFORMANCE.md with the machine and commit.
#
#   bash bench/tune/run.sh BUILD MODEL_DIR OUT_DIR [TRIALS] [RUN...]
#
# MODEL_DIR holds resnet50.onnx, mobilenet_v2.onnx, bert_encoder.onnx (models/make_models.py
# MODEL_DIR --model NAME exports them). RUN is MODEL:PRESET (default: all seven). TRIALS defaults
# to 1000 per run; TIME_BUDGET (seconds, env) caps each run; JOBS (env) sets --jobs. Each run's
# log, table and plot stay in OUT_DIR (a second invocation resumes the logs).
set -euo pipefail
build=${1:?usage: run.sh BUILD MODEL_DIR OUT_DIR [TRIALS] [MODEL:PRESET...]}
models=${2:?model directory}
out=${3:?output directory}
trials=${4:-1000}
shift $(( $# < 4 ? $# : 4 ))
runs=("$@")
if [ ${#runs[@]} -eq 0 ]; then
  runs=(resnet50:npu-base resnet50:npu-large resnet50:npu-int8 mobilenet_v2:npu-base
        mobilenet_v2:npu-large mobilenet_v2:npu-int8 bert_encoder:npu-base)
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
npuc="$build/tools/npuc"
mkdir -p "$out"
extra=()
[ -n "${TIME_BUDGET:-}" ] && extra+=(--time-budget "$TIME_BUDGET")
[ -n "${JOBS:-}" ] && extra+=(--jobs "$JOBS")
echo "commit $(git -C "$root" rev-parse --short HEAD), $(nproc) cores, $trials trials per run"
for run in "${runs[@]}"; do
  model=${run%%:*}
  preset=${run#*:}
  name="$model-$preset"
  start=$(date +%s.%N)
  "$npuc" tune "$models/$model.onnx" --target "$root/configs/$preset.yaml" --trials "$trials" \
    --log "$out/$name.jsonl" --plot "$out/$name.svg" "${extra[@]}" >"$out/$name.txt" \
    2>"$out/$name.err"
  end=$(date +%s.%N)
  echo "== $name: $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", b - a }') s wall"
  grep -E '^(tuned |tasks:|cost model:|whole model)' "$out/$name.txt"
done
