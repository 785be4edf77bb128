// npu_fp.svh - the core's floating-point datapath: fp16 <-> fp32 conversion, fp32 add and multiply
// with round-to-nearest-even, and the comparisons the vector ops use. Combinational functions,
// included inside npu_core.
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

function automatic logic [31:0] f16_to_f32(input logic [15:0] h);
  logic [31:0] s;
  logic [10:0] m;
  int e;
  s = {h[15], 31'd0};
  m = {1'b0, h[9:0]};
  if (h[14:10] == 5'd0) begin
    if (m == 11'd0) return s;
    // subnormal: normalise until the leading one reaches the hidden-bit position (bit 10)
    e = -1;
    do begin
      e = e + 1;
      m = m << 1;
    end while (m[10] == 1'b0);
    return s | {1'b0, 8'(127 - 15 - e), m[9:0], 13'd0};
  end
  if (h[14:10] == 5'h1f) return s | 32'h7f800000 | {9'd0, m[9:0], 13'd0};
  return s | {1'b0, 8'({3'd0, h[14:10]} + 8'd112), m[9:0], 13'd0};
endfunction

function automatic logic [15:0] f32_to_f16(input logic [31:0] x);
  logic [15:0] sign;
  logic [7:0] ex;
  logic [22:0] man;
  int e;
  logic [23:0] mm;
  logic [31:0] half, rem, mid;
  int shift;
  sign = {x[31], 15'd0};
  ex = x[30:23];
  man = x[22:0];
  if (ex == 8'hff)
    return sign | 16'h7c00 | ((man != 23'd0) ? (16'h0200 | 16'(man >> 13)) : 16'd0);
  e = int'(ex) - 127 + 15;
  if (e >= 31) return sign | 16'h7c00;
  if (e <= 0) begin
    if (e < -10) return sign;
    mm = {1'b1, man};
    shift = 14 - e;
    half = 32'(mm) >> shift;
    rem = 32'(mm) & ((32'd1 << shift) - 32'd1);
    mid = 32'd1 << (shift - 1);
    if (rem > mid || (rem == mid && half[0])) half = half + 32'd1;
    return sign | half[15:0];
  end
  half = (32'(e) << 10) | 32'(man >> 13);
  rem = 32'(man) & 32'h1fff;
  if (rem > 32'h1000 || (rem == 32'h1000 && half[0])) half = half + 32'd1;
  return sign | half[15:0];
endfunction

function automatic logic f32_is_nan(input logic [31:0] x);
  return x[30:23] == 8'hff && x[22:0] != 23'd0;
endfunction

// Rounds a positive significand `n` (leading one at bit 49, 26 extra bits below the 24-bit
// mantissa, sticky folded into the low bits) with exponent e to an fp32 with sign s.
function automatic logic [31:0] f32_round_pack(input logic s, input int e_in, input logic [50:0] n);
  logic [24:0] mant;
  logic rnd, sticky;
  int e;
  e = e_in;
  mant = {1'b0, n[49:26]};
  rnd = n[25];
  sticky = n[24:0] != 25'd0;
  if (rnd && (sticky || mant[0])) mant = mant + 25'd1;
  if (mant[24]) begin
    mant = mant >> 1;
    e = e + 1;
  end
  if (e >= 255) return {s, 8'hff, 23'd0};
  if (e <= 0) return {s, 31'd0}; // FTZ
  return {s, 8'(e), mant[22:0]};
endfunction

function automatic logic [31:0] f32_mul(input logic [31:0] a, input logic [31:0] b);
  logic s;
  logic azero, bzero, ainf, binf;
  logic [47:0] p;
  logic [50:0] n;
  int e;
  s = a[31] ^ b[31];
  if (f32_is_nan(a)) return a | 32'h00400000;
  if (f32_is_nan(b)) return b | 32'h00400000;
  azero = a[30:23] == 8'd0;
  bzero = b[30:23] == 8'd0;
  ainf = a[30:23] == 8'hff;
  binf = b[30:23] == 8'hff;
  if ((ainf && bzero) || (binf && azero)) return 32'hffc00000;
  if (ainf || binf) return {s, 8'hff, 23'd0};
  if (azero || bzero) return {s, 31'd0}; // DAZ
  p = {24'd0, 1'b1, a[22:0]} * {24'd0, 1'b1, b[22:0]};
  e = int'(a[30:23]) + int'(b[30:23]) - 127;
  // p in [2^46, 2^48): place the leading one at bit 49 of n
  if (p[47]) begin
    n = {1'b0, p, 2'd0};
    e = e + 1;
  end else n = {p, 3'd0};
  return f32_round_pack(s, e, n);
endfunction

function automatic logic [31:0] f32_add(input logic [31:0] a, input logic [31:0] b);
  logic [31:0] hi_op, lo_op;
  logic [50:0] xb, xs, sum, shifted;
  logic sticky;
  int d, lead, e;
  if (f32_is_nan(a)) return a | 32'h00400000;
  if (f32_is_nan(b)) return b | 32'h00400000;
  if (a[30:23] == 8'hff && b[30:23] == 8'hff) return (a[31] == b[31]) ? a : 32'hffc00000;
  if (a[30:23] == 8'hff) return a;
  if (b[30:23] == 8'hff) return b;
  if (a[30:23] == 8'd0 && b[30:23] == 8'd0) return {a[31] & b[31], 31'd0}; // DAZ
  if (a[30:23] == 8'd0) return b;
  if (b[30:23] == 8'd0) return a;
  if (a[30:0] >= b[30:0]) begin
    hi_op = a;
    lo_op = b;
  end else begin
    hi_op = b;
    lo_op = a;
  end
  d = int'(hi_op[30:23]) - int'(lo_op[30:23]);
  xb = {2'b01, hi_op[22:0], 26'd0};
  xs = {2'b01, lo_op[22:0], 26'd0};
  if (d >= 51) begin
    shifted = 51'd0;
    sticky = 1'b1;
  end else begin
    shifted = xs >> d;
    sticky = (xs & ((51'd1 << d) - 51'd1)) != 51'd0;
  end
  shifted = shifted | {50'd0, sticky};
  if (hi_op[31] == lo_op[31]) sum = xb + shifted;
  else sum = xb - shifted;
  if (sum == 51'd0) return 32'd0; // exact cancellation: +0 under round-to-nearest
  lead = 0;
  for (int i = 0; i < 51; i++)
    if (sum[i]) lead = i;
  e = int'(hi_op[30:23]) + (lead - 49);
  if (lead == 50) sum = (sum >> 1) | {50'd0, sum[0]};
  else if (lead < 49) sum = sum << (49 - lead);
  return f32_round_pack(hi_op[31], e, sum);
endfunction

// a > b and a < b as C++ float comparisons (false when either is NaN; -0 == +0).
function automatic logic f32_gt(input logic [31:0] a, input logic [31:0] b);
  logic [31:0] ka, kb;
  if (f32_is_nan(a) || f32_is_nan(b)) return 1'b0;
  if (a[30:0] == 31'd0 && b[30:0] == 31'd0) return 1'b0;
  ka = a[31] ? ~a : (a | 32'h80000000);
  kb = b[31] ? ~b : (b | 32'h80000000);
  return ka > kb;
endfunction
