#!/usr/bin/env bash
# bench/scale/run.sh - compile time against graph size (issue 18: a 20,000-node chain compiles in
# at most 20 s): generates chains with make_chain.py and times `npuc compile` on each, one at a
# time. A benchmark, not a test: figures go to docs/PERFORMANCE.md with the machine and commit.
#
#   bash bench/scale/run.sh BUILD OUT_DIR [KIND:N...]
#
# KIND is relu, mix or conv (make_chain.py); the default points are the ReLU chain at 1,000,
# 2,000, 5,000 and 20,000 nodes. TARGET (env) is the target for `--target` (default
# configs/npu-base.yaml; `cpu` for the host CPU). Prints one tab-separated line per point: kind,
# N, target, wall seconds, user CPU seconds, peak resident MiB, and npuc's summary line.
set -euo pipefail
build=${1:?usage: run.sh BUILD OUT_DIR [KIND:N...]}
out=${2:?output directory}
shift 2
points=("$@")
if [ ${#points[@]} -eq 0 ]; then
  points=(relu:1000 relu:2000 relu:5000 relu:20000)
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
npuc="$build/tools/npuc"
target=${TARGET:-$root/configs/npu-base.yaml}
mkdir -p "$out"
printf 'kind\tN\ttarget\twall_s\tuser_s\tmax_MiB\tsummary\n'
for p in "${points[@]}"; do
  kind=${p%%:*}
  n=${p#*:}
  model="$out/${kind}${n}.onnx"
  [ -f "$model" ] || /usr/bin/python3 "$root/bench/scale/make_chain.py" "$kind" "$n" "$model"
  /usr/bin/time -f '%e %U %M' -o "$out/time.txt" \
    "$npuc" compile "$model" --target "$target" -o "$out/${kind}${n}.npub" > "$out/summary.txt"
  read -r wall user kb < "$out/time.txt"
  printf '%s\t%s\t%s\t%s\t%s\t%d\t%s\n' "$kind" "$n" "$(basename "$target")" "$wall" "$user" \
    $((kb / 1024)) "$(sed -n 's/^compiled [^:]*: //p' "$out/summary.txt")"
done
