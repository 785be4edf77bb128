#!/bin/sh
# synth_check.sh - synthesis smoke run of the RTL core's datapath (ctest rtl_synth_tensor_array).
# Usage: synth_check.sh YOSYS GEN_DIR HDL_DIR
# yosys maps npu_tensor_array, with the shape the build generated from the target YAML
# (TU_ROWS x TU_COLS PEs, operand dtype), to gates, and prints the cell counts; it fails when
# yosys cannot read or synthesise the sources or the netlist is empty.
set -eu
YOSYS=$1 GEN=$2 HDL=$3
param() { sed -n "s/^localparam int $1 = \([0-9]*\);/\1/p" "$GEN/npu_params.svh"; }
ROWS=$(param TU_ROWS) COLS=$(param TU_COLS) F32=$(param TU_OPERAND_F32)
[ -n "$ROWS" ] && [ -n "$COLS" ] && [ -n "$F32" ] || { echo "no TU_* parameters in $GEN"; exit 1; }
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
"$YOSYS" -q -p "read_verilog -sv -I$HDL $HDL/npu_pe.sv $HDL/npu_tensor_array.sv; \
chparam -set ROWS $ROWS -set COLS $COLS -set OPERAND_F32 $F32 npu_tensor_array; \
synth -top npu_tensor_array; tee -q -o $OUT stat"
echo "npu_tensor_array ${ROWS}x${COLS}:"
grep -E 'npu_pe|Number of cells' "$OUT"
grep -qE 'Number of cells: +[1-9]' "$OUT"
