#!/bin/bash
# bench.sh - npuc's CPU target against ONNX Runtime on ResNet-18, 1 and 2 threads, side by side
# in one invocation; prints a table with the ratio (npuc / ORT, lower is better) and npuc's
# per-operator time (from `npuc run --report`), the figures recorded in docs/PERFORMANCE.md.
#
# usage: bench/cpu/bench.sh BUILD_DIR [ITERATIONS]
# Needs: BUILD_DIR with npuc and cpu_bench built; node + npm (onnxruntime-node is installed with
# --ignore-scripts into bench/cpu/node_modules on first use - not by CI); /usr/bin/python3 with
# torch + torchvision to export ResNet-18 (models/make_models.py --resnet18) on first use.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: bench.sh BUILD_DIR [ITERATIONS]}" && pwd)
iters=${2:-10}
work="$build/bench_cpu"
mkdir -p "$work"

if [ ! -d "$here/node_modules/onnxruntime-node" ]; then
  (cd "$here" && npm install --no-save --ignore-scripts onnxruntime-node >/dev/null)
fi
if [ ! -f "$work/resnet18.onnx" ]; then
  /usr/bin/python3 "$root/models/make_models.py" "$work" --resnet18 >/dev/null 2>&1
fi

models=(resnet18)
printf "%-10s %7s %12s %12s %8s\n" model threads "npuc ms" "ORT ms" ratio
for m in "${models[@]}"; do
  "$build/tools/npuc" compile "$work/$m.onnx" --target cpu --emit so -o "$work/$m.so" >/dev/null
  for t in 1 2; do
    npuc_ms=$("$build/bench/cpu/cpu_bench" "$work/$m.so" "$t" "$iters" | awk '{print $3}')
    ort_ms=$(node "$here/ort_bench.js" "$work/$m.onnx" "$t" "$iters" | awk '{print $3}')
    ratio=$(awk -v a="$npuc_ms" -v b="$ort_ms" 'BEGIN { printf "%.2f", a / b }')
    printf "%-10s %7s %12s %12s %8s\n" "$m" "$t" "$npuc_ms" "$ort_ms" "${ratio}x"
  done
  # Where npuc's time goes: per fused group (conv + epilogue), single thread, from the report.
  "$build/tools/npuc" compile "$work/$m.onnx" --target cpu -o "$work/$m.npub" >/dev/null
  /usr/bin/python3 - "$work" "$m" <<'PY'
import sys, numpy as np
np.save(f"{sys.argv[1]}/{sys.argv[2]}_bench_input.npy",
        np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32))
PY
  in_name=$(/usr/bin/python3 -c "import onnx,sys; print(onnx.load(sys.argv[1]).graph.input[0].name)" "$work/$m.onnx")
  "$build/tools/npuc" run "$work/$m.npub" --threads 1 --input "$in_name=$work/${m}_bench_input.npy" \
    --output-dir "$work/out_$m" --report "$work/$m.report.json" >/dev/null
  /usr/bin/python3 - "$work/$m.report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ops = sorted(r["ops"], key=lambda o: -o.get("cpu_ms", 0))
total = sum(o.get("cpu_ms", 0) for o in ops)
print(f"  per-op (npuc run, 1 thread, JIT): total {total:.1f} ms; top 8:")
for o in ops[:8]:
    gmacs = o.get("macs", 0) / (o["cpu_ms"] * 1e6) if o.get("cpu_ms") else 0
    print(f"    {o['name'][:40]:40s} {'+'.join(o['ops']):24s} {o['cpu_ms']:8.2f} ms  {gmacs:6.2f} GMAC/s")
PY
done
