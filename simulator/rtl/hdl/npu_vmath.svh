// npu_vmath.svh - the vector unit's division, square root and transcendental ops: exactly the
// fp32 algorithms of isa/VectorMath.cpp, step for step and in the same order, on the datapath
// of npu_fp.svh (f32_add, f32_mul: DAZ/FTZ, round to nearest-even). The simulator computes the
// same steps in C++, so results are bit-identical for every operand, normal or not (the one
// exception: a result that rounds up to the smallest normal from below in one step, which the
// C++ rounds through a subnormal; docs/RTL.md). Combinational functions with constant loop bounds
// and one exit each, as in npu_fp.svh; a production unit would pipeline them over a few cycles
// (the timing model charges one element per lane per cycle, docs/ISA.md).
//
// The constants are the fp32 values of VectorMath.cpp's decimal literals, as bit patterns.

// x / y, correctly rounded: restoring division of the significands, one quotient bit per step
// (51 steps: the 24-bit quotient, 26 rounding bits and the integer bit), then f32_round_pack.
function automatic logic [31:0] f32_div(input logic [31:0] x, input logic [31:0] y);
  logic s, xzero, yzero, xinf, yinf;
  logic [25:0] rem, d;
  logic [50:0] q;
  logic [49:0] n;
  logic [10:0] e;
  s = x[31] ^ y[31];
  xzero = x[30:23] == 8'd0;
  yzero = y[30:23] == 8'd0;
  xinf = x[30:23] == 8'hff;
  yinf = y[30:23] == 8'hff;
  d = {3'd1, y[22:0]};
  rem = {3'd1, x[22:0]};  // < 2d: the first quotient bit is the integer bit
  q = 51'd0;
  for (int i = 0; i < 51; i++) begin
    q = {q[49:0], 1'b0};
    if (rem >= d) begin
      rem = rem - d;
      q[0] = 1'b1;
    end
    rem = {rem[24:0], 1'b0};
  end
  // q = floor(mx * 2^50 / my), in [2^49, 2^51): the leading one goes to bit 49 of n.
  if (q[50]) begin
    n = q[50:1] | {49'd0, q[0] | (rem != 26'd0)};
    e = {3'd0, x[30:23]} - {3'd0, y[30:23]} + 11'd127;
  end else begin
    n = q[49:0] | {49'd0, rem != 26'd0};
    e = {3'd0, x[30:23]} - {3'd0, y[30:23]} + 11'd126;
  end
  if (f32_is_nan(x[30:0])) f32_div = x | 32'h00400000;
  else if (f32_is_nan(y[30:0])) f32_div = y | 32'h00400000;
  else if ((xzero && yzero) || (xinf && yinf)) f32_div = 32'hffc00000;
  else if (xinf || yzero) f32_div = {s, 8'hff, 23'd0};
  else if (yinf || xzero) f32_div = {s, 31'd0};  // DAZ
  else f32_div = f32_round_pack(s, e, n);
endfunction

// sqrt(x), correctly rounded: the significand scaled to [2^98, 2^100) (one more place for an
// even unbiased exponent), its integer square root digit by digit (50 steps) with the remainder
// as the sticky bit.
function automatic logic [31:0] f32_sqrt(input logic [31:0] x);
  logic [99:0] m;
  logic [51:0] rem, trial;
  logic [49:0] root;
  logic [10:0] e;
  if (x[23]) begin  // odd biased exponent: even unbiased one
    m = {1'b0, 1'b1, x[22:0], 75'd0};
    e = ({3'd0, x[30:23]} + 11'd127) >> 1;
  end else begin
    m = {1'b1, x[22:0], 76'd0};
    e = ({3'd0, x[30:23]} + 11'd126) >> 1;
  end
  rem = 52'd0;
  root = 50'd0;
  for (int i = 0; i < 50; i++) begin
    rem = {rem[49:0], m[99-2*i], m[98-2*i]};
    trial = {root, 2'b01};
    if (rem >= trial) begin
      rem = rem - trial;
      root = {root[48:0], 1'b1};
    end else root = {root[48:0], 1'b0};
  end
  if (f32_is_nan(x[30:0])) f32_sqrt = x | 32'h00400000;
  else if (x[30:23] == 8'd0) f32_sqrt = {x[31], 31'd0};  // DAZ; sqrt(-0) = -0
  else if (x[31]) f32_sqrt = 32'hffc00000;
  else if (x[30:23] == 8'hff) f32_sqrt = x;
  else f32_sqrt = f32_round_pack(1'b0, e, root | {49'd0, rem != 52'd0});
endfunction

// e^x: k = round(x log2 e) from the low bits of x log2 e + 1.5 * 2^23; r = x - k ln2 in two
// steps (ln2 = 0x3f318000 + 0x395e8083 below); p = 1 + r + r^2 (1/2! + r (... + r 1/7!)); the
// result is p with k added to its exponent field.
function automatic logic [31:0] f32_exp(input logic [31:0] a);
  logic [31:0] x, t, kf, r, q, p, k, e;
  x = f32_gt(a, 32'h42b20000) ? 32'h42b20000 : a;  // 89
  x = f32_gt(32'hc2d00000, x) ? 32'hc2d00000 : x;  // -104
  t = f32_add(f32_mul(x, 32'h3fb8aa3b), 32'h4b400000);  // log2 e, 1.5 * 2^23
  k = t - 32'h4b400000;
  kf = f32_add(t, 32'hcb400000);
  r = f32_add(x, f32_mul(kf, 32'hbf318000));  // -0.693359375
  r = f32_add(r, f32_mul(kf, 32'h395e8083));  // 2.12194440e-4
  q = 32'h39500d01;  // 1/7!
  q = f32_add(f32_mul(q, r), 32'h3ab60b61);  // 1/6!
  q = f32_add(f32_mul(q, r), 32'h3c088889);  // 1/5!
  q = f32_add(f32_mul(q, r), 32'h3d2aaaab);  // 1/4!
  q = f32_add(f32_mul(q, r), 32'h3e2aaaab);  // 1/3!
  q = f32_add(f32_mul(q, r), 32'h3f000000);  // 1/2!
  p = f32_add(f32_add(f32_mul(q, f32_mul(r, r)), r), 32'h3f800000);
  e = {24'd0, p[30:23]} + k;  // two's complement
  if (f32_is_nan(a[30:0])) f32_exp = a | 32'h00400000;
  else if (e[31] || e == 32'd0) f32_exp = 32'd0;
  else if (e >= 32'd255) f32_exp = 32'h7f800000;
  else f32_exp = {p[31], e[7:0], p[22:0]};
endfunction

// 1 / (1 + e^-x)
function automatic logic [31:0] f32_sigmoid(input logic [31:0] a);
  if (f32_is_nan(a[30:0])) f32_sigmoid = a | 32'h00400000;
  else
    f32_sigmoid = f32_div(32'h3f800000, f32_add(32'h3f800000, f32_exp(a ^ 32'h80000000)));
endfunction

// |x| < 0.5: x + x z (-1/3 + z (2/15 + ...)), z = x^2 (Taylor to x^17);
// below 10: 1 - 2 / (e^2|x| + 1); then 1. The sign of x is put back.
function automatic logic [31:0] f32_tanh(input logic [31:0] a);
  logic [31:0] x, z, q, y;
  x = {1'b0, a[30:0]};
  z = f32_mul(x, x);
  q = 32'h3a1aac12;
  q = f32_add(f32_mul(q, z), 32'hbabed1b2);
  q = f32_add(f32_mul(q, z), 32'h3b6b69e8);
  q = f32_add(f32_mul(q, z), 32'hbc11371b);
  q = f32_add(f32_mul(q, z), 32'h3cb327a4);
  q = f32_add(f32_mul(q, z), 32'hbd5d0dd1);
  q = f32_add(f32_mul(q, z), 32'h3e088889);
  q = f32_add(f32_mul(q, z), 32'hbeaaaaab);
  if (f32_gt(32'h3f000000, x)) y = f32_add(f32_mul(f32_mul(q, z), x), x);
  else if (f32_gt(32'h41200000, x))
    y = f32_add(32'h3f800000, f32_div(32'h40000000, f32_add(f32_exp(f32_add(x, x)),
                                                             32'h3f800000)) ^ 32'h80000000);
  else y = 32'h3f800000;
  if (f32_is_nan(a[30:0])) f32_tanh = a | 32'h00400000;
  else f32_tanh = y ^ {a[31], 31'd0};  // y >= 0
endfunction

// |x| < 1: x (2/sqrt(pi)) (1 - z/3 + z^2/10 - ...), z = x^2 (Taylor to x^21); below 4:
// 1 - t (a1 + t (a2 + ... + t a5)) e^-x^2, t = 1 / (1 + p |x|) (Abramowitz & Stegun 7.1.26);
// then 1. The sign of x is put back.
function automatic logic [31:0] f32_erf(input logic [31:0] a);
  logic [31:0] x, z, q, t, u, y;
  x = {1'b0, a[30:0]};
  z = f32_mul(x, x);
  q = 32'h327e62b9;
  q = f32_add(f32_mul(q, z), 32'hb42fba17);
  q = f32_add(f32_mul(q, z), 32'h35dcf365);
  q = f32_add(f32_mul(q, z), 32'hb77a692e);
  q = f32_add(f32_mul(q, z), 32'h38fcd193);
  q = f32_add(f32_mul(q, z), 32'hba6016da);
  q = f32_add(f32_mul(q, z), 32'h3bab2de7);
  q = f32_add(f32_mul(q, z), 32'hbcdc1672);
  q = f32_add(f32_mul(q, z), 32'h3de71791);
  q = f32_add(f32_mul(q, z), 32'hbec093a3);
  q = f32_add(f32_mul(q, z), 32'h3f906ebb);
  t = f32_div(32'h3f800000, f32_add(32'h3f800000, f32_mul(32'h3ea7ba05, x)));
  u = 32'h3f87dc22;
  u = f32_add(f32_mul(u, t), 32'hbfba00e3);
  u = f32_add(f32_mul(u, t), 32'h3fb5f0e3);
  u = f32_add(f32_mul(u, t), 32'hbe91a98e);
  u = f32_add(f32_mul(u, t), 32'h3e827906);
  u = f32_mul(u, t);
  if (f32_gt(32'h3f800000, x)) y = f32_mul(q, x);
  else if (f32_gt(32'h40800000, x))
    y = f32_add(32'h3f800000, f32_mul(u, f32_exp(z ^ 32'h80000000)) ^ 32'h80000000);
  else y = 32'h3f800000;
  if (f32_is_nan(a[30:0])) f32_erf = a | 32'h00400000;
  else f32_erf = y ^ {a[31], 31'd0};  // y >= 0
endfunction
