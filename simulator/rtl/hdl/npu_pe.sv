// npu_pe.sv - one processing element of the tensor array: multiplies its A operand by its B
// operand (fp16, or fp32 when the target's operand dtype is fp32) exactly and adds the product to
// the partial sum coming from the PE above, rounding to fp32 (round to nearest even). A disabled
// PE (its k index beyond the instruction's k) passes the partial sum through unchanged, so a
// column of PEs reduces its products in k order exactly as the timing model's reference does.
// Combinational: the array's pipeline depth is what the target's fill_latency charges.
module npu_pe #(
    parameter bit OPERAND_F32 = 1'b0
) (
    input logic en,
    input logic [31:0] a,
    input logic [31:0] b,
    input logic [31:0] psum_in,
    output logic [31:0] psum_out
);
  // The fp functions are included in the module body (as in npu_core) rather than imported from a
  // package: yosys 0.23, which tests/rtl synthesises the PE, the array and the core with, reads no
  // package imports.
  `include "npu_fp.svh"
  logic [31:0] fa, fb;
  always_comb begin
    fa = OPERAND_F32 ? a : f16_to_f32(a[15:0]);
    fb = OPERAND_F32 ? b : f16_to_f32(b[15:0]);
    psum_out = en ? f32_add(psum_in, f32_mul(fa, fb)) : psum_in;
  end
endmodule
