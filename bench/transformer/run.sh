#!/bin/bash
# run.sh - issue 21's table: transformers and modern convnets on the NPU. For each model and
# target, compiles (wall time), runs on the simulator, and prints the segments, CPU groups, NPU
# cycles, MAC utilisation, the roofline ratio (cycles / roofline cycles), the DRAM traffic, the
# intermediates spilled to DRAM and read back (`activations_spilled`: attention's scores, when
# they leave the chip), the whole-graph bound (docs/REPORT.md `dram_accounting`: a decode step's is
# its DRAM bytes over the bandwidth) and the largest error against torch's output (the decoders'
# logits); the figures recorded in docs/PERFORMANCE.md. The decoders: GPT-2-style, CI size
# (gpt2_*) and GPT-2 small's shape (gpt2_small_*), a 128-token prefill and one decode step with the
# KV cache of 127 tokens; and one CI-size block prefilling 2048 tokens (gpt2_long_prefill).
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
models=(convnext_tiny vit_b_16 bert_encoder gpt2_prefill gpt2_decode gpt2_small_prefill
  gpt2_small_decode gpt2_long_prefill)
# MODELS="a b" runs those alone.
[ -z "${MODELS:-}" ] || read -r -a models <<< "$MODELS"
work="$build/bench_transformer"
mkdir -p "$work"
for m in "${models[@]}"; do
  if [ ! -f "$work/$m.onnx" ]; then
    /usr/bin/python3 "$root/models/make_models.py" "$work" --model "$m" >/dev/null 2>&1
  fi
done
echo "| model | target | compile s | segments | CPU groups | NPU cycles | MAC util | cycles / roofline | DRAM MB | spilled MB | whole-graph bound (bound by) | cycles / bound | max abs err vs torch |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for t in "${targets[@]}"; do
  for m in "${models[@]}"; do
    pkg="$work/$m.$t.npub"
    # The classifiers read `input`; the decoders also every layer's KV cache (past_k0, ...).
    ins=()
    for f in "$work/${m}_input.npy" "$work/${m}"_past_*.npy; do
      [ -f "$f" ] || continue
      name=$(basename "$f" .npy)
      ins+=(--input "${name#"${m}_"}=$f")
    done
    start=$(date +%s.%N)
    "$build/tools/npuc" compile "$work/$m.onnx" --target "$root/configs/$t.yaml" -o "$pkg" \
      > "$work/$m.$t.compile.log"
    end=$(date +%s.%N)
    rm -rf "$work/$m.$t.out"
    "$build/tools/npuc" run "$pkg" "${ins[@]}" --output-dir "$work/$m.$t.out" \
      --report "$work/$m.$t.json" > /dev/null
    /usr/bin/python3 - "$work" "$m" "$t" "$start" "$end" <<'PY'
import json, os, sys
import numpy as np
work, m, t, start, end = sys.argv[1:]
r = json.load(open(f"{work}/{m}.{t}.json"))
cpu = sum(1 for o in r["ops"] if o["placement"] == "cpu")
# The classifiers' one output, or the decoders' logits (their KV cache is checked in the tests).
out, exp = ("output", f"{m}_expected") if os.path.exists(f"{work}/{m}_expected.npy") \
    else ("logits", f"{m}_expected_logits")
y = np.load(f"{work}/{m}.{t}.out/{out}.npy")
ref = np.load(f"{work}/{exp}.npy")
err = float(np.abs(y.astype(np.float64) - ref).max())
acc = r["dram_accounting"]
bound = acc["whole_graph_bound_cycles"]
by = max(acc["bound_parts_cycles"], key=acc["bound_parts_cycles"].get)
print(f"| {m} | {t} | {float(end) - float(start):.1f} | {len(r['segments'])} | {cpu} | "
      f"{r['total_cycles']:,} | {100 * r['mac_utilization']:.1f}% | "
      f"{r['total_cycles'] / r['roofline_cycles']:.3f} | {acc['moved_bytes'] / 1e6:.1f} | "
      f"{acc['non_compulsory_bytes']['activations_spilled'] / 1e6:.1f} | "
      f"{bound:,} ({by}) | {r['total_cycles'] / bound:.3f} | {err:.2g} |")
PY
  done
done
