#!/usr/bin/env bash
# int8 calibration methods on the models zoo (docs/PERFORMANCE.md "int8 calibration methods"):
# for each model and method, compile for npu-int8 calibrated on 16 standard-normal samples (the
# zoo's inputs are standard normal; another seed than the test input's), run the zoo's input and
# print the cosine against torch's expected output and whether the top-1 class is kept.
#
#   bash bench/int8/calibration.sh [BUILD_DIR] [MODEL...]   (default: build, mobilenet_v2
#                                                            resnet18 googlenet)
# The models come from the `models` ctest label's exports (BUILD_DIR/generated-models).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
shift $(($# > 0 ? 1 : 0))
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(mobilenet_v2 resnet18 googlenet)
npuc="$build/tools/npuc"
gen="$build/generated-models"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 -c "import numpy as np; np.save('$work/set16.npy', \
np.random.default_rng(123).standard_normal((16, 3, 224, 224)).astype(np.float32))"
for m in "${models[@]}"; do
  [ -f "$gen/$m.onnx" ] || { echo "$gen/$m.onnx is missing (ctest -R models.export_$m)" >&2; exit 2; }
  for method in max percentile:99.99 percentile:99.9 entropy mse; do
    "$npuc" compile "$gen/$m.onnx" --target "$root/configs/npu-int8.yaml" \
      --calibrate "$work/set16.npy" --calibration-method "$method" -o "$work/p.npub" >/dev/null
    rm -rf "$work/out"
    "$npuc" run "$work/p.npub" --input "input=$gen/${m}_input.npy" --output-dir "$work/out" >/dev/null
    /usr/bin/python3 - "$gen/${m}_expected.npy" "$work/out/output.npy" "$m" "$method" <<'PY'
import sys
import numpy as np
e = np.load(sys.argv[1]).ravel().astype(np.float64)
o = np.load(sys.argv[2]).ravel().astype(np.float64)
cos = e @ o / (np.linalg.norm(e) * np.linalg.norm(o))
print(f"{sys.argv[3]} {sys.argv[4]} cosine {cos:.4f} top-1 {'kept' if e.argmax() == o.argmax() else 'differs'}")
PY
  done
done
