#!/bin/bash
# run.sh - issue 21's table: transformers and modern convnets on the NPU. For each model and
# target, compiles (wall time), runs on the simulator, and prints the segments, CPU groups, NPU
# cycles, MAC utilisation, the roofline ratio (cycles / roofline cycles) and the largest error
# against torch's output; the figures recorded in docs/PERFORMANCE.md.
#
# usage: bench/transformer/run.sh BUILD_DIR [TARGET...]   (default: npu-base npu-transformer)
# Needs: BUILD_DIR with npuc built; /usr/bin/python3 with torch + torchvision to export the models
# (models/make_models.py --model NAME, into BUILD_DIR/bench_transformer) on first use.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: run.sh BUILD_DIR [TARGET...]}" && pwd)
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(npu-base npu-transformer)
models=(convnext_tiny vit_b_16 bert_encoder)
work="$build/bench_transformer"
mkdir -p "$work"
for m in "${models[@]}"; do
  if [ ! -f "$work/$m.onnx" ]; then
    /usr/bin/python3 "$root/models/make_models.py" "$work" --model "$m" >/dev/null 2>&1
  fi
done
echo "| model | target | compile s | segments | CPU groups | NPU cycles | MAC util | cycles / roofline | max abs err vs torch |"
echo "|---|---|---|---|---|---|---|---|---|"
for t in "${targets[@]}"; do
  for m in "${models[@]}"; do
    pkg="$work/$m.$t.npub"
    start=$(date +%s.%N)
    "$build/tools/npuc" compile "$work/$m.onnx" --target "$root/configs/$t.yaml" -o "$pkg" \
      > "$work/$m.$t.compile.log"
    end=$(date +%s.%N)
    rm -rf "$work/$m.$t.out"
    "$build/tools/npuc" run "$pkg" --input "input=$work/${m}_input.npy" \
      --output-dir "$work/$m.$t.out" --report "$work/$m.$t.json" > /dev/null
    /usr/bin/python3 - "$work" "$m" "$t" "$start" "$end" <<'PY'
import json, sys
import numpy as np
work, m, t, start, end = sys.argv[1:]
r = json.load(open(f"{work}/{m}.{t}.json"))
cpu = sum(1 for o in r["ops"] if o["placement"] == "cpu")
y = np.load(f"{work}/{m}.{t}.out/output.npy")
ref = np.load(f"{work}/{m}_expected.npy")
err = float(np.abs(y.astype(np.float64) - ref).max())
print(f"| {m} | {t} | {float(end) - float(start):.1f} | {len(r['segments'])} | {cpu} | "
      f"{r['total_cycles']:,} | {100 * r['mac_utilization']:.1f}% | "
      f"{r['total_cycles'] / r['roofline_cycles']:.3f} | {err:.2g} |")
PY
  done
done
