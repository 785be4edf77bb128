#!/bin/bash
# run.sh - issue 17's benchmark: `npuc explore` over 200 design points (bench/explore/sweep.yaml)
# of ResNet-50 and a BERT encoder block, on this machine's cores; prints points per second and
# the Pareto front, and leaves results.jsonl, the tables and the plots in
# BUILD_DIR/bench_explore/sweep.explore (docs/PERFORMANCE.md records the figures).
#
# usage: bench/explore/run.sh BUILD_DIR [JOBS]   (default JOBS: nproc)
# Needs: BUILD_DIR with npuc built; /usr/bin/python3 with torch + torchvision to export the models
# (models/make_models.py) on first use. A rerun resumes the sweep (remove the directory to
# measure again).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: run.sh BUILD_DIR [JOBS]}" && pwd)
jobs=${2:-$(nproc)}
work="$build/bench_explore"
mkdir -p "$work"
for m in resnet50 bert_encoder; do
  if [ ! -f "$work/$m.onnx" ]; then
    /usr/bin/python3 "$root/models/make_models.py" "$work" --model "$m" >/dev/null 2>&1
  fi
done
sed -e "s|@WORK@|$work|g" -e "s|\.\./\.\./configs|$root/configs|" "$here/sweep.yaml" \
  > "$work/sweep.yaml"
start=$(date +%s.%N)
"$build/tools/npuc" explore "$work/sweep.yaml" --jobs "$jobs" 2> "$work/progress.log"
end=$(date +%s.%N)
points=$(grep -c '^\[' "$work/progress.log" || true)
echo "$points point(s) in $(echo "$end - $start" | bc) s on $jobs job(s):" \
  "$(echo "scale=3; $points / ($end - $start)" | bc) points/s"
