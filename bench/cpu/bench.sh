#!/bin/bash
# bench.sh - npuc's CPU target against ONNX Runtime on ResNet-18, ResNet-50 and MobileNetV2
# (1x3x224x224), 1 and 2 threads, side by side in one invocation; prints a table with the ratio
# (npuc / ORT, lower is better), npuc's agreement with torch on the exported input, and where
# npuc's single-thread time goes by operator class (from `npuc run --report`), and the wall time
# of `npuc compile` and `npuc run` themselves: the figures recorded in docs/PERFORMANCE.md.
#
# usage: bench/cpu/bench.sh BUILD_DIR [ITERATIONS] [MODEL...]
# Needs: BUILD_DIR with npuc and cpu_bench built; node + npm (onnxruntime-node is installed with
# --ignore-scripts into bench/cpu/node_modules on first use - not by CI); /usr/bin/python3 with
# torch + torchvision to export the models (models/make_models.py --model NAME) on first use.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: bench.sh BUILD_DIR [ITERATIONS] [MODEL...]}" && pwd)
iters=${2:-10}
shift $(($# >= 2 ? 2 : 1))
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet18 resnet50 mobilenet_v2)
work="$build/bench_cpu"
mkdir -p "$work"

if [ ! -d "$here/node_modules/onnxruntime-node" ]; then
  (cd "$here" && npm install --no-save --ignore-scripts onnxruntime-node >/dev/null)
fi
for m in "${models[@]}"; do
  if [ ! -f "$work/$m.onnx" ] || [ ! -f "$work/${m}_input.npy" ]; then
    /usr/bin/python3 "$root/models/make_models.py" "$work" --model "$m" >/dev/null 2>&1
  fi
done

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-13s %7s %12s %12s %8s\n" model threads "npuc ms" "ORT ms" ratio
for m in "${models[@]}"; do
  "$build/tools/npuc" compile "$work/$m.onnx" --target cpu --emit so -o "$work/$m.so" >/dev/null
  for t in 1 2; do
    npuc_ms=$("$build/bench/cpu/cpu_bench" "$work/$m.so" "$t" "$iters" | awk '{print $3}')
    ort_ms=$(node "$here/ort_bench.js" "$work/$m.onnx" "$t" "$iters" | awk '{print $3}')
    ratio=$(awk -v a="$npuc_ms" -v b="$ort_ms" 'BEGIN { printf "%.2f", a / b }')
    printf "%-13s %7s %12s %12s %8s\n" "$m" "$t" "$npuc_ms" "$ort_ms" "${ratio}x"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# Agreement with torch and where the time goes: `npuc run` (JIT, 1 thread) on the exported
# input, per fused group (conv + epilogue) summed by operator class.
for m in "${models[@]}"; do
  "$build/tools/npuc" compile "$work/$m.onnx" --target cpu -o "$work/$m.npub" >/dev/null
  in_name=$(/usr/bin/python3 -c "import onnx,sys; print(onnx.load(sys.argv[1]).graph.input[0].name)" "$work/$m.onnx")
  rm -rf "$work/out_$m"
  "$build/tools/npuc" run "$work/$m.npub" --threads 1 --input "$in_name=$work/${m}_input.npy" \
    --output-dir "$work/out_$m" --report "$work/$m.report.json" >/dev/null
  /usr/bin/python3 - "$work" "$m" <<'PY'
import glob, json, sys
import numpy as np
work, m = sys.argv[1], sys.argv[2]
out = np.load(glob.glob(f"{work}/out_{m}/*.npy")[0]).ravel()
exp = np.load(f"{work}/{m}_expected.npy").ravel()
cos = float(out @ exp / (np.linalg.norm(out) * np.linalg.norm(exp)))
print(f"{m}: vs torch max abs err {abs(out - exp).max():.2e} (output scale {abs(exp).max():.2f}), "
      f"cosine {cos:.7f}, top-1 {'same' if out.argmax() == exp.argmax() else 'DIFFERENT'}")
import onnx
convs = {}  # anchor name -> "Conv KxK" / "Conv KxK depthwise" from the model's attributes
for n in onnx.load(f"{work}/{m}.onnx").graph.node:
    if n.op_type == "Conv":
        a = {x.name: onnx.helper.get_attribute_value(x) for x in n.attribute}
        k = a.get("kernel_shape", [0, 0])
        convs[n.name] = f"Conv {k[0]}x{k[1]}" + (" depthwise" if a.get("group", 1) > 1 else "")
r = json.load(open(f"{work}/{m}.report.json"))
classes = {}
for o in r["ops"]:
    ms, macs = o.get("cpu_ms", 0.0), o.get("macs", 0)
    if "Conv" in o["ops"]:
        label = convs.get(o["name"], "Conv")
    else:
        label = "+".join(sorted(set(o["ops"])))[:30]
    c = classes.setdefault(label, [0.0, 0, 0])
    c[0] += ms
    c[1] += macs
    c[2] += 1
total = sum(c[0] for c in classes.values())
print(f"  per operator class (npuc run, 1 thread, JIT): {total:.1f} ms in kernels")
for label, (ms, macs, n) in sorted(classes.items(), key=lambda kv: -kv[1][0])[:8]:
    rate = f"{macs / (ms * 1e6):6.2f} GMAC/s" if ms and macs else ""
    print(f"    {label:30s} {n:4d} groups {ms:8.2f} ms {100 * ms / total:5.1f}%  {rate}")
ops = sorted(r["ops"], key=lambda o: -o.get("cpu_ms", 0))
print("  slowest groups:")
for o in ops[:6]:
    gmacs = o.get("macs", 0) / (o["cpu_ms"] * 1e6) if o.get("cpu_ms") else 0
    print(f"    {o['name'][:40]:40s} {'+'.join(o['ops']):24s} {o['cpu_ms']:8.2f} ms  {gmacs:6.2f} GMAC/s")
PY
done

# Wall time of the command line, everything included (process start, reading the package,
# packing weights, linking, one inference, writing the output): `npuc compile` (which compiles
# the CPU groups to machine code into the package), the first `npuc run` after it, the median of
# 3 more, and the median of 3 with `--no-native-code` (LLVM at every run, as before issue 22).
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'; }
median3() { printf "%s\n" "$@" | sort -n | sed -n 2p; }
echo
printf "%-13s %11s %11s %11s %15s\n" model "compile s" "1st run s" "repeat s" "LLVM each run s"
for m in "${models[@]}"; do
  in_name=$(/usr/bin/python3 -c "import onnx,sys; print(onnx.load(sys.argv[1]).graph.input[0].name)" "$work/$m.onnx")
  run=("$build/tools/npuc" run "$work/$m.npub" --threads 1 --input "$in_name=$work/${m}_input.npy"
       --output-dir "$work/wall_$m")
  c=$(secs "$build/tools/npuc" compile "$work/$m.onnx" --target cpu -o "$work/$m.npub")
  first=$(secs "${run[@]}")
  rep=$(median3 "$(secs "${run[@]}")" "$(secs "${run[@]}")" "$(secs "${run[@]}")")
  llvm=$(median3 "$(secs "${run[@]}" --no-native-code)" "$(secs "${run[@]}" --no-native-code)" \
                 "$(secs "${run[@]}" --no-native-code)")
  printf "%-13s %11s %11s %11s %15s\n" "$m" "$c" "$first" "$rep" "$llvm"
done
