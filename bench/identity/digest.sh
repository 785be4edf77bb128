#!/usr/bin/env bash
# digest.sh - what the compiler produces for every model on every bundled preset, as one line
# per (model, preset): the package's SHA-256, the simulated cycles of `npuc run`, and the SHA-256
# of its outputs. Two builds that print the same file compile bit-identically (a restructuring of
# the backend must not change any of the three; diff the files).
#
#   bash bench/identity/digest.sh BUILD_DIR MODEL_DIR OUT_FILE [MODEL...]
#
# MODEL_DIR holds NAME.onnx with NAME_input.npy (the bundled models/ and the `models` ctest
# label's exports: `models/make_models.py DIR --model NAME`). Without MODEL arguments every
# NAME.onnx of MODEL_DIR with an input is digested. A compile the target refuses is recorded
# with its exit code and the first line of its message (refusals must stay the same too).
# JOBS (default: the core count) (model, preset) pairs run at once. SKIP lists "model:preset"
# pairs to leave out (space-separated): npu-rtl, the RTL-sized core with tiny scratchpads, takes
# over 30 minutes per compile of vgg11 or vit_b_16 on a 2-core machine (measured at 2c155cb).
set -euo pipefail
build=$(cd "${1:?usage: digest.sh BUILD_DIR MODEL_DIR OUT_FILE [MODEL...]}" && pwd)
models=$(cd "${2:?MODEL_DIR}" && pwd)
out=${3:?OUT_FILE}
shift 3
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
npuc="$build/tools/npuc"
[ -x "$npuc" ] || { echo "digest.sh: no npuc at $npuc" >&2; exit 2; }

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in "$models"/*.onnx; do
    n=$(basename "$f" .onnx)
    [ -f "$models/${n}_input.npy" ] && names+=("$n")
  done
fi
presets=()
for y in "$root"/configs/*.yaml; do presets+=("$(basename "$y" .yaml)"); done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

one() { # model preset -> one line on stdout
  local m=$1 p=$2 d="$work/$1.$2"
  mkdir -p "$d"
  local in="$models/${m}_input.npy"
  # The input's name: the model's first graph input (bundled models call it "input").
  local iname
  iname=$(/usr/bin/python3 -c "import onnx,sys; g=onnx.load('$models/$m.onnx',load_external_data=False).graph; \
inits={i.name for i in g.initializer}; print([i.name for i in g.input if i.name not in inits][0])")
  local rc=0
  "$npuc" compile "$models/$m.onnx" --target "$root/configs/$p.yaml" -o "$d/pkg.npub" \
    >"$d/compile.log" 2>&1 || rc=$?
  if [ $rc -ne 0 ]; then
    echo "$m $p refused rc=$rc $(grep -m1 . "$d/compile.log" | cut -c1-160)"
    rm -rf "$d"
    return
  fi
  local pkg
  pkg=$(sha256sum "$d/pkg.npub" | cut -c1-16)
  if ! "$npuc" run "$d/pkg.npub" --input "$iname=$in" --output-dir "$d/out" \
      --report "$d/report.json" >"$d/run.log" 2>&1; then
    echo "$m $p package $pkg run-failed $(grep -m1 . "$d/run.log" | cut -c1-160)"
    rm -rf "$d"
    return
  fi
  local cycles outs
  cycles=$(/usr/bin/python3 -c "import json; print(json.load(open('$d/report.json'))['total_cycles'])")
  outs=$(cd "$d/out" && sha256sum -- * | sha256sum | cut -c1-16)
  echo "$m $p package $pkg cycles $cycles outputs $outs"
  rm -rf "$d"
}
export -f one
export npuc models root work

for m in "${names[@]}"; do
  for p in "${presets[@]}"; do
    case " ${SKIP:-} " in *" $m:$p "*) continue ;; esac
    echo "$m $p"
  done
done | xargs -P "${JOBS:-$(nproc)}" -L1 bash -c 'one "$@"' _ | sort >"$out"
echo "digest.sh: $(wc -l <"$out") (model, preset) pairs in $out"
