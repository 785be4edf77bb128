// npu_tensor_array.sv - the ROWS x COLS tensor array: a grid of npu_pe instances. Row r holds the
// r-th k value of the current k slice: A operand a[r] is broadcast along the row, B operand
// b[r][c] is PE (r,c)'s weight, and the partial sums flow down each column from the accumulator
// value acc_in[c] to acc_out[c]. One array step computes one row of A times a ROWS-deep,
// COLS-wide block of B into COLS accumulators (docs/RTL.md, "Tensor array").
module npu_tensor_array #(
    parameter int ROWS = 4,
    parameter int COLS = 4,
    parameter bit OPERAND_F32 = 1'b0
) (
    // Flat vectors (element [r][c] at bits (r*COLS+c)*32 +: 32) so that every frontend reads the
    // ports, yosys 0.23 included (no multi-dimensional packed ports).
    input logic [ROWS-1:0] row_en,
    input logic [ROWS*32-1:0] a,
    input logic [ROWS*COLS*32-1:0] b,
    input logic [COLS*32-1:0] acc_in,
    output logic [COLS*32-1:0] acc_out
);
  // psum[(r*COLS+c)*32 +: 32]: the partial sum entering PE (r,c); row ROWS leaves the column.
  logic [(ROWS+1)*COLS*32-1:0] psum;
  assign psum[COLS*32-1:0] = acc_in;
  assign acc_out = psum[ROWS*COLS*32+:COLS*32];
  for (genvar r = 0; r < ROWS; r++) begin : g_row
    for (genvar c = 0; c < COLS; c++) begin : g_col
      npu_pe #(
          .OPERAND_F32(OPERAND_F32)
      ) pe (
          .en(row_en[r]),
          .a(a[r*32+:32]),
          .b(b[(r*COLS+c)*32+:32]),
          .psum_in(psum[(r*COLS+c)*32+:32]),
          .psum_out(psum[((r+1)*COLS+c)*32+:32])
      );
    end
  end
endmodule
