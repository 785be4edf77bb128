#!/bin/sh
# synth_subset.sh - keeps the whole RTL core in the subset a synthesis frontend reads (ctest
# rtl_synth_subset_core; docs/RTL.md, "Synthesisability").
# Usage: synth_subset.sh YOSYS GEN_DIR HDL_DIR
# 1. yosys (0.23) parses every module of the core with the generated header: it rejects package
#    imports, `return`, multi-dimensional packed ports and type casts, which Verilator accepts.
# 2. The core's sources (comments stripped) contain no `while` (every loop has a constant bound),
#    no division or modulo operator (no divider or modulo datapath in the control) and no
#    `return` (single-exit functions and tasks).
# Full elaboration by yosys is not part of the check: see docs/RTL.md for why and what it costs.
set -eu
YOSYS=$1 GEN=$2 HDL=$3
"$YOSYS" -q -p "read_verilog -defer -sv -I$GEN -I$HDL $HDL/npu_pe.sv $HDL/npu_tensor_array.sv \
$HDL/npu_core.sv"
echo "yosys parses npu_pe, npu_tensor_array and npu_core"
bad=0
for f in "$HDL"/*.sv "$HDL"/*.svh; do
  # Strip // and single-line /* */ comments, then look for the constructs.
  hits=$(sed -e 's://.*$::' -e 's:/\*.*\*/::g' "$f" | grep -nE '\bwhile\b|\breturn\b|[^/*]/[^/*]|%' || true)
  if [ -n "$hits" ]; then
    echo "$f: not in the synthesis subset (while, return, / or %):"
    echo "$hits"
    bad=1
  fi
done
[ "$bad" -eq 0 ] && echo "no while, return, division or modulo in $HDL"
exit "$bad"
