// npu_core_units.svh - the datapath steps of npu_core, included in its module body: scratchpad
// access, the vector ALU, one DMA element, one tensor-array step and one vector element. Each is a
// function or task the clocked process calls for one engine; they read and write the core's state
// with blocking assignments, so one cycle's elements see each other's writes in order (docs/RTL.md,
// "Micro-architecture"). Synthesis subset (yosys 0.23 and Verilator): single-exit functions, loops
// with constant bounds, no division, size casts only (no type casts).

// ---- scratchpad access (DRAM is only reachable through the memory port) ----
// Out-of-level accesses read 0 and write nothing (the harness validates every program, so they
// do not happen; the guard keeps the index inside the array).
function automatic logic [7:0] rd8(input int lvl, input longint a);
  rd8 = 8'd0;
  if (lvl != DRAM_LEVEL && a >= 0 && a < level_size(lvl)) rd8 = spm[SPM_AW'(level_base(lvl) + a)];
endfunction
task automatic wr8(input int lvl, input longint a, input logic [7:0] v);
  if (lvl != DRAM_LEVEL && a >= 0 && a < level_size(lvl)) spm[SPM_AW'(level_base(lvl) + a)] = v;
endtask
function automatic logic [31:0] rd32(input int lvl, input longint a);
  rd32 = {rd8(lvl, a + 3), rd8(lvl, a + 2), rd8(lvl, a + 1), rd8(lvl, a)};
endfunction
task automatic wr32(input int lvl, input longint a, input logic [31:0] v);
  for (int b = 0; b < 4; b++) wr8(lvl, a + 64'(b), v[8*b+:8]);
endtask
// An operand element as fp32 (dtype 0 = fp16, 1 = fp32).
function automatic logic [31:0] load_f(input int lvl, input longint a, input int dtype);
  if (dtype == 0) load_f = f16_to_f32({rd8(lvl, a + 1), rd8(lvl, a)});
  else load_f = rd32(lvl, a);
endfunction
task automatic store_f(input int lvl, input longint a, input int dtype, input logic [31:0] v);
  logic [15:0] h;
  if (dtype == 0) begin
    h = f32_to_f16(v);
    wr8(lvl, a, h[7:0]);
    wr8(lvl, a + 1, h[15:8]);
  end else wr32(lvl, a, v);
endtask

// ---- vector unit ALU ----
// c: the destination's old value (read by `mac` only).
function automatic logic [31:0] valu(input int op, input logic [31:0] a, input logic [31:0] b,
                                     input logic [31:0] c, input logic [31:0] imm0,
                                     input logic [31:0] imm1);
  logic [31:0] t;
  t = f32_gt(imm0, a) ? imm0 : a;  // clip: std::max(a, imm0)
  if (op == OP_ADD) valu = f32_add(a, b);
  else if (op == OP_SUB) valu = f32_add(a, f32_is_nan(b[30:0]) ? b : (b ^ 32'h80000000));
  else if (op == OP_MUL) valu = f32_mul(a, b);
  else if (op == OP_MAX) valu = f32_gt(a, b) ? a : b;
  else if (op == OP_MIN) valu = f32_gt(b, a) ? a : b;
  else if (op == OP_RELU) valu = f32_gt(a, 32'd0) ? a : 32'd0;
  else if (op == OP_CLIP) valu = f32_gt(t, imm1) ? imm1 : t;  // std::min(t, imm1)
  else if (op == OP_MULADD) valu = f32_add(f32_mul(a, imm0), imm1);
  else if (op == OP_EXP) valu = f32_exp(a);
  else if (op == OP_TANH) valu = f32_tanh(a);
  else if (op == OP_SIGMOID) valu = f32_sigmoid(a);
  else if (op == OP_DIV) valu = f32_div(a, b);
  else if (op == OP_SQRT) valu = f32_sqrt(a);
  else if (op == OP_ERF) valu = f32_erf(a);
  else if (op == OP_MAC) valu = f32_add(c, f32_mul(a, b));  // the product rounded first
  else valu = a;  // copy
endfunction
function automatic logic reads_src2(input int op);
  reads_src2 = op == OP_ADD || op == OP_SUB || op == OP_MUL || op == OP_MAX || op == OP_MIN ||
               op == OP_DIV || op == OP_MAC;
endfunction

// ceil(a / d) for a >= 0, d >= 1 (a tensor-array dimension, a constant; sh = $clog2(d)): a shift
// when d is a power of two, otherwise restoring division, one quotient bit per step of a
// constant-bound loop, i.e. combinational logic. Used once per matmul, at its start.
function automatic longint ceil_div(input longint a, input longint d, input int sh);
  logic [63:0] n, r, q;
  n = a + d - 1;
  r = 64'd0;
  q = 64'd0;
  if (64'd1 << sh == d) q = n >> sh;
  else
    for (int i = 63; i >= 0; i--) begin
      r = {r[62:0], n[i]};
      if (r >= d) begin
        r = r - d;
        q[i] = 1'b1;
      end
    end
  ceil_div = q;
endfunction
function automatic longint nonneg(input longint v);
  nonneg = v < 0 ? 64'd0 : v;
endfunction

// Advances the (c0, c1, c2) loop counters of engine e over extents (x0, x1): c0 fastest.
/* verilator lint_off UNUSEDSIGNAL */
task automatic count3(input int e, input longint x0, input longint x1);
/* verilator lint_on UNUSEDSIGNAL */
  c0[e] = c0[e] + 1;
  if (c0[e] == x0) begin
    c0[e] = 0;
    c1[e] = c1[e] + 1;
    if (c1[e] == x1) begin
      c1[e] = 0;
      c2[e] = c2[e] + 1;
    end
  end
endtask

// ---- one DMA element: box index (c0,c1,c2) ----
/* verilator lint_off UNUSEDSIGNAL */
task automatic dma_element(input int e);
/* verilator lint_on UNUSEDSIGNAL */
  longint eb, i0, i1, i2, dst, src;
  logic pad;
  int sl, dl, l;
  logic [63:0] pv;
  eb = `f_elem_bytes(cur_w[e]);
  i0 = c0[e];
  i1 = c1[e];
  i2 = c2[e];
  pad = i0 < `f_pad0_lo(cur_w[e]) || i0 >= `f_n0(cur_w[e]) - `f_pad0_hi(cur_w[e]) || i1 < `f_pad1_lo(cur_w[e])
     || i1 >= `f_n1(cur_w[e]) - `f_pad1_hi(cur_w[e]) || i2 < `f_pad2_lo(cur_w[e]) || i2 >= `f_n2(cur_w[e]) - `f_pad2_hi(cur_w[e]);
  dst = `f_dst_addr(cur_w[e]) + eb * (i0 * `f_dst_s0(cur_w[e]) + i1 * `f_dst_s1(cur_w[e]) + i2 * `f_dst_s2(cur_w[e]));
  src = `f_src_addr(cur_w[e]) + eb * ((i0 - `f_pad0_lo(cur_w[e])) * `f_src_s0(cur_w[e]) + (i1 - `f_pad1_lo(cur_w[e])) * `f_src_s1(cur_w[e])
      + (i2 - `f_pad2_lo(cur_w[e])) * `f_src_s2(cur_w[e]));
  pv = `f_pad_value(cur_w[e]);
  sl = 32'(`f_src_space(cur_w[e]));
  dl = 32'(`f_dst_space(cur_w[e]));
  for (int b = 0; b < 8; b++)
    if (64'(b) < eb) begin
      l = lanes_used[e];
      if (sl == DRAM_LEVEL) begin
        // DRAM -> scratchpad: request the byte (unless it is padding) and remember where the
        // response byte goes; padding bytes ride in the same beat so writes stay in order.
        beat_use[l] = 1'b1;
        beat_pad[l] = pad;
        beat_byte[l*8+:8] = pv[8*b+:8];
        beat_addr[l*SPM_AW+:SPM_AW] = SPM_AW'(level_base(dl) + dst + 64'(b));
        if (!pad) begin
          mem_req_strb[e*MEM_LANES+l] = 1'b1;
          mem_req_addr[(e*MEM_LANES+l)*MEM_AW+:MEM_AW] = MEM_AW'(src + 64'(b));
        end
        lanes_used[e] = l + 1;
      end else if (dl == DRAM_LEVEL) begin
        // scratchpad -> DRAM: a write lane
        mem_req_write[e] = 1'b1;
        mem_req_strb[e*MEM_LANES+l] = 1'b1;
        mem_req_addr[(e*MEM_LANES+l)*MEM_AW+:MEM_AW] = MEM_AW'(dst + 64'(b));
        mem_req_wdata[(e*MEM_LANES+l)*8+:8] = pad ? pv[8*b+:8] : rd8(sl, src + 64'(b));
        lanes_used[e] = l + 1;
      end else wr8(dl, dst + 64'(b), pad ? pv[8*b+:8] : rd8(sl, src + 64'(b)));
    end
  count3(e, `f_n0(cur_w[e]), `f_n1(cur_w[e]));
endtask

// ---- one tensor-array step: row mi = c2, column block nb = c1, k block kb = c0 ----
// Loads the array's input registers; npu_tensor_array computes during the next cycle and the
// results are written back at the next edge (the write-back at the top of the clocked process).
// Consecutive k blocks of one output block read the accumulators after that write-back.
function automatic logic [31:0] rd_operand(input int lvl, input longint a);
  if (TU_OPERAND_F32 != 0) rd_operand = rd32(lvl, a);
  else rd_operand = {16'd0, rd8(lvl, a + 1), rd8(lvl, a)};
endfunction
/* verilator lint_off UNUSEDSIGNAL */
task automatic mm_step(input int e);
/* verilator lint_on UNUSEDSIGNAL */
  longint k, n, mi, nb, kb, col, kk, ob;
  k = `f_k(cur_w[e]);
  n = `f_n(cur_w[e]);
  mi = c2[e];
  nb = c1[e];
  kb = c0[e];
  ob = 64'(2 + 2 * TU_OPERAND_F32);
  for (int r = 0; r < TU_ROWS; r++) begin
    kk = kb * TU_ROWS + 64'(r);
    tu_row_en[r] = kk < k;
    tu_a[r*32+:32] = tu_row_en[r] ? rd_operand(TU_A_LEVEL, `f_a_addr(cur_w[e]) + ob * (mi * k + kk)) : 32'd0;
  end
  for (int j = 0; j < TU_COLS; j++) begin
    col = nb * TU_COLS + 64'(j);
    tu_col_en[j] = col < n;
    tu_wb_addr[j] = `f_c_addr(cur_w[e]) + 4 * (mi * n + col);
    if (!tu_col_en[j] || (kb == 0 && `f_accumulate(cur_w[e]) == 64'd0)) tu_acc_in[j*32+:32] = 32'd0;
    else tu_acc_in[j*32+:32] = rd32(TU_ACC_LEVEL, tu_wb_addr[j]);
    for (int r = 0; r < TU_ROWS; r++) begin
      kk = kb * TU_ROWS + 64'(r);
      tu_b[(r*TU_COLS+j)*32+:32] = (tu_row_en[r] && tu_col_en[j]) ?
          rd_operand(TU_B_LEVEL, `f_b_addr(cur_w[e]) + ob * (kk * n + col)) : 32'd0;
    end
  end
  tu_v = 1'b1;
  count3(e, k_blocks[e], n_blocks[e]);
endtask

// ---- one vector element (c0,c1,c2) ----
/* verilator lint_off UNUSEDSIGNAL */
task automatic vec_element(input int e);
/* verilator lint_on UNUSEDSIGNAL */
  longint i0, i1, i2, dst, s1, s2;
  int op, dt, t1, t2;
  logic [31:0] a, b, c;
  logic [31:0] imm0, imm1;
  op = 32'(`f_op(cur_w[e]));
  dt = 32'(`f_dst_dtype(cur_w[e]));
  t1 = 32'(`f_src1_dtype(cur_w[e]));
  t2 = 32'(`f_src2_dtype(cur_w[e]));
  i0 = c0[e];
  i1 = c1[e];
  i2 = c2[e];
  dst = `f_dst_addr(cur_w[e]) + (2 + 2 * dt) * (i0 * `f_dst_s0(cur_w[e]) + i1 * `f_dst_s1(cur_w[e]) + i2 * `f_dst_s2(cur_w[e]));
  s1 = `f_src1_addr(cur_w[e]) + (2 + 2 * t1) * (i0 * `f_src1_s0(cur_w[e]) + i1 * `f_src1_s1(cur_w[e]) + i2 * `f_src1_s2(cur_w[e]));
  s2 = `f_src2_addr(cur_w[e]) + (2 + 2 * t2) * (i0 * `f_src2_s0(cur_w[e]) + i1 * `f_src2_s1(cur_w[e]) + i2 * `f_src2_s2(cur_w[e]));
  imm0 = 32'(`f_imm0(cur_w[e]));
  imm1 = 32'(`f_imm1(cur_w[e]));
  a = load_f(32'(`f_src1_space(cur_w[e])), s1, t1);
  b = reads_src2(op) ? load_f(32'(`f_src2_space(cur_w[e])), s2, t2) : 32'd0;
  // mac reads its destination first (in the destination's dtype); with a zero destination
  // stride it reads what the previous element wrote: a dot product.
  c = op == OP_MAC ? load_f(32'(`f_dst_space(cur_w[e])), dst, dt) : 32'd0;
  store_f(32'(`f_dst_space(cur_w[e])), dst, dt, valu(op, a, b, c, imm0, imm1));
  count3(e, `f_n0(cur_w[e]), `f_n1(cur_w[e]));
endtask
