// npu_fp.svh - the core's floating-point datapath: fp16 <-> fp32 conversion, fp32 add and multiply
// with round-to-nearest-even, and the comparisons the vector ops use. Combinational functions
// with constant loop bounds only (a synthesis tool unrolls them into priority encoders and
// shifters), included in the bodies of npu_core (vector unit) and npu_pe (one per PE); a
// production core would pipeline them, here each is one cycle of combinational logic because the
// timing model charges the array's pipeline as its fill latency, not per operation.
//
// Exactness contract (checked by the rtl tests against the C++ simulator, i.e. against x86 SSE
// float): results are bit-identical to C++ float for normal operands and normal results.
// Documented differences (docs/RTL.md):
//   - fp32 subnormals: add/mul treat subnormal inputs as zero and flush subnormal results to
//     signed zero (DAZ/FTZ, as many NPUs do); C++ keeps gradual underflow. fp16 subnormals are
//     exact in both directions (the conversions below follow support/Half.cpp bit for bit).
//   - NaN: a NaN operand is returned quieted (first operand first), invalid operations
//     (inf - inf, 0 * inf) give the x86 default NaN 0xffc00000; payloads may differ from what a
//     compiler's operand order gives on the host.

// Every function has one exit (the result is assigned to the function name), so Verilog-2005
// frontends such as yosys's read them as well as Verilator does.

function automatic logic [31:0] f16_to_f32(input logic [15:0] h);
  logic [10:0] m;
  logic [3:0] msb;
  m = {1'b0, h[9:0]};
  msb = 4'd0;
  for (int i = 0; i < 10; i++) if (h[i]) msb = i[3:0];
  if (h[14:10] == 5'd0) begin
    if (m == 11'd0) f16_to_f32 = {h[15], 31'd0};
    else begin
      // subnormal: the priority encoder above found the leading one; shifting it to the
      // hidden-bit position (bit 10) takes 10 - msb steps, and the exponent is 103 + msb
      m = m << (4'd10 - msb);
      f16_to_f32 = {h[15], 8'd103 + {4'd0, msb}, m[9:0], 13'd0};
    end
  end else if (h[14:10] == 5'h1f) f16_to_f32 = {h[15], 8'hff, h[9:0], 13'd0};
  else f16_to_f32 = {h[15], {3'd0, h[14:10]} + 8'd112, h[9:0], 13'd0};
endfunction

function automatic logic [15:0] f32_to_f16(input logic [31:0] x);
  logic [15:0] sign;
  logic [9:0] e;  // rebiased exponent, two's complement (ex - 112 in -112..143)
  logic [23:0] mm;
  logic [31:0] half, rem, mid;
  logic [4:0] shift;
  sign = {x[31], 15'd0};
  e = {2'd0, x[30:23]} - 10'd112;
  mm = {1'b1, x[22:0]};
  half = 32'd0;
  rem = 32'd0;
  mid = 32'd0;
  shift = 5'd0;
  if (x[30:23] == 8'hff)
    f32_to_f16 = sign | 16'h7c00 | ((x[22:0] != 23'd0) ? {6'b000000, 1'b1, x[21:13]} : 16'd0);
  else if (!e[9] && e >= 10'd31) f32_to_f16 = sign | 16'h7c00;
  else if (e[9] || e == 10'd0) begin
    // below the fp16 normal range: e in -10..0 gives a subnormal, lower underflows to zero
    if (e[9] && e < 10'h3f6) f32_to_f16 = sign;
    else begin
      shift = 5'd14 - e[4:0];  // 14 - e, 14..24
      half = {8'd0, mm} >> shift;
      rem = {8'd0, mm} & ((32'd1 << shift) - 32'd1);
      mid = 32'd1 << (shift - 5'd1);
      if (rem > mid || (rem == mid && half[0])) half = half + 32'd1;
      f32_to_f16 = sign | half[15:0];
    end
  end else begin
    half = {17'd0, e[4:0], x[22:13]};
    rem = {19'd0, x[12:0]};
    if (rem > 32'h1000 || (rem == 32'h1000 && half[0])) half = half + 32'd1;
    f32_to_f16 = sign | half[15:0];
  end
endfunction

function automatic logic f32_is_nan(input logic [30:0] x);  // the sign does not matter
  f32_is_nan = x[30:23] == 8'hff && x[22:0] != 23'd0;
endfunction

// Rounds a positive significand `n` (leading one at bit 49, 26 extra bits below the 24-bit
// mantissa, sticky folded into the low bits) with biased exponent e (two's complement, may be
// out of range) to an fp32 with sign s.
function automatic logic [31:0] f32_round_pack(input logic s, input logic [10:0] e_in,
                                               input logic [49:0] n);
  logic [24:0] mant;
  logic [10:0] e;
  e = e_in;
  mant = {1'b0, n[49:26]};
  if (n[25] && (n[24:0] != 25'd0 || mant[0])) mant = mant + 25'd1;
  if (mant[24]) begin
    mant = mant >> 1;
    e = e + 11'd1;
  end
  if (!e[10] && e >= 11'd255) f32_round_pack = {s, 8'hff, 23'd0};
  else if (e[10] || e == 11'd0) f32_round_pack = {s, 31'd0};  // FTZ
  else f32_round_pack = {s, e[7:0], mant[22:0]};
endfunction

function automatic logic [31:0] f32_mul(input logic [31:0] x, input logic [31:0] y);
  logic s;
  logic azero, bzero, ainf, binf;
  logic [47:0] p;
  logic [49:0] n;
  logic [10:0] e;
  s = x[31] ^ y[31];
  azero = x[30:23] == 8'd0;
  bzero = y[30:23] == 8'd0;
  ainf = x[30:23] == 8'hff;
  binf = y[30:23] == 8'hff;
  p = {24'd0, 1'b1, x[22:0]} * {24'd0, 1'b1, y[22:0]};
  e = {3'd0, x[30:23]} + {3'd0, y[30:23]} - 11'd127;
  // p in [2^46, 2^48): place the leading one at bit 49 of n
  if (p[47]) begin
    n = {p, 2'd0};
    e = e + 11'd1;
  end else n = {p[46:0], 3'd0};
  if (f32_is_nan(x[30:0])) f32_mul = x | 32'h00400000;
  else if (f32_is_nan(y[30:0])) f32_mul = y | 32'h00400000;
  else if ((ainf && bzero) || (binf && azero)) f32_mul = 32'hffc00000;
  else if (ainf || binf) f32_mul = {s, 8'hff, 23'd0};
  else if (azero || bzero) f32_mul = {s, 31'd0};  // DAZ
  else f32_mul = f32_round_pack(s, e, n);
endfunction

function automatic logic [31:0] f32_add(input logic [31:0] x, input logic [31:0] y);
  logic [31:0] hi_op, lo_op;
  logic [50:0] xb, xs, sum, shifted;
  logic [7:0] d;
  logic [5:0] lead;
  logic [10:0] e;
  if (x[30:0] >= y[30:0]) begin
    hi_op = x;
    lo_op = y;
  end else begin
    hi_op = y;
    lo_op = x;
  end
  d = hi_op[30:23] - lo_op[30:23];
  xb = {2'b01, hi_op[22:0], 26'd0};
  xs = {2'b01, lo_op[22:0], 26'd0};
  if (d >= 8'd51) shifted = 51'd1;  // only the sticky bit is left
  else shifted = (xs >> d) | {50'd0, (xs & ((51'd1 << d) - 51'd1)) != 51'd0};
  if (hi_op[31] == lo_op[31]) sum = xb + shifted;
  else sum = xb - shifted;
  lead = 6'd0;
  for (int i = 0; i < 51; i++) if (sum[i]) lead = i[5:0];
  e = {3'd0, hi_op[30:23]} + {5'd0, lead} - 11'd49;
  if (lead == 6'd50) sum = (sum >> 1) | {50'd0, sum[0]};
  else if (lead < 6'd49) sum = sum << (6'd49 - lead);
  if (f32_is_nan(x[30:0])) f32_add = x | 32'h00400000;
  else if (f32_is_nan(y[30:0])) f32_add = y | 32'h00400000;
  else if (x[30:23] == 8'hff && y[30:23] == 8'hff)
    f32_add = (x[31] == y[31]) ? x : 32'hffc00000;
  else if (x[30:23] == 8'hff) f32_add = x;
  else if (y[30:23] == 8'hff) f32_add = y;
  else if (x[30:23] == 8'd0 && y[30:23] == 8'd0) f32_add = {x[31] & y[31], 31'd0};  // DAZ
  else if (x[30:23] == 8'd0) f32_add = y;
  else if (y[30:23] == 8'd0) f32_add = x;
  else if (sum == 51'd0) f32_add = 32'd0;  // exact cancellation: +0 under round-to-nearest
  else f32_add = f32_round_pack(hi_op[31], e, sum[49:0]);
endfunction

// x > y as a C++ float comparison (false when either is NaN; -0 == +0).
function automatic logic f32_gt(input logic [31:0] x, input logic [31:0] y);
  logic [31:0] ka, kb;
  ka = x[31] ? ~x : (x | 32'h80000000);
  kb = y[31] ? ~y : (y | 32'h80000000);
  if (f32_is_nan(x[30:0]) || f32_is_nan(y[30:0])) f32_gt = 1'b0;
  else if (x[30:0] == 31'd0 && y[30:0] == 31'd0) f32_gt = 1'b0;
  else f32_gt = ka > kb;
endfunction
