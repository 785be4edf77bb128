// npu_core.sv - the NPU core: instruction fetch/dispatch, per-engine in-order queues with
// dependency tokens, DMA engines against a DRAM memory port, a rows x cols fp16 tensor array with
// fp32 accumulation, a lanes-wide fp32 vector unit, and the on-chip scratchpads.
//
// Every target-specific number (instruction width, opcode and field positions, queue depths,
// rates, memory sizes, unit shapes, op codes, latencies) comes from npu_params.svh, which the
// build generates from the target YAML (simulator/rtl/GenParams.cpp). The design is a
// cycle-stepped model: each clock edge performs exactly one cycle of every engine, so cycle
// counts come from the hardware structure, not from formulas:
//   - dispatch: instructions leave the instruction memory in program order into their engine's
//     queue (eng_depth entries); a full queue stalls dispatch for every engine.
//   - start: an engine's head starts when the engine is idle, a token is present in every FIFO
//     it pops and every FIFO it pushes has room (room is reserved at start, tokens are delivered
//     at the end). Start and dispatch iterate within the cycle, so a slot freed by a start can
//     be refilled and started in the same cycle (dispatch is free, as in the timing model).
//   - DMA: moves eng_rate bytes per cycle (whole elements, byte credit carried over) while the
//     DRAM port serves DRAM_RATE bytes per cycle to the oldest DRAM transfer in flight; then the
//     descriptor latency and DRAM_LAT tail before the tokens are delivered.
//   - tensor: one (row of A) x (rows-deep slice of K) x (cols-wide slice of N) step per cycle,
//     each output column reducing its rows products in k order into the fp32 accumulator; then
//     the fill/drain latency.
//   - vector: VU_LANES elements per cycle, in i2/i1/i0 order (sequential, so reductions with a
//     zero destination stride see their own writes); then the pipeline latency.
// DRAM lives in the C++ harness behind npu_dram_read/npu_dram_write (the memory port); the
// scratchpads are one byte array partitioned by level_base(). See docs/RTL.md.
module npu_core #(
    parameter int IMEM_WORDS = 16384
) (
    input logic clk,
    input logic rst,
    input int n_instr,
    output logic done,
    output logic deadlock,
    output longint cycles
);
  `include "npu_params.svh"
  `include "npu_fp.svh"

  import "DPI-C" function byte unsigned npu_dram_read(input longint addr);
  import "DPI-C" function void npu_dram_write(input longint addr, input byte unsigned data);
  import "DPI-C" function void npu_retire(input int engine, input int index, input longint start,
                                          input longint end_cycle);

  // Loaded by the harness before reset is released (backdoor, as a bring-up testbench does).
  /*verilator tracing_off*/
  logic [IBITS-1:0] imem[IMEM_WORDS] /*verilator public*/;
  logic [7:0] spm[SPM_BYTES] /*verilator public*/;
  int q_idx[NENG][QMAX] /*verilator public*/;
  /*verilator tracing_on*/

  // Dispatch and queues.
  int dptr;
  int q_head[NENG] /*verilator public*/;
  int q_cnt[NENG] /*verilator public*/;
  // Token FIFOs, [producer][consumer]: tokens delivered, and slots reserved (delivered or in
  // flight from a started producer) until the consumer pops them.
  int tok_avail[NENG][NENG];
  int tok_occ[NENG][NENG];
  // Per-engine execution state.
  logic busy[NENG];
  logic [IBITS-1:0] cur_w[NENG];
  int cur_idx[NENG], cur_sem[NENG];
  longint cur_start[NENG];
  longint work_left[NENG]; // DMA/vector: elements; tensor: array steps
  longint tail_left[NENG]; // fixed latency cycles after the work
  longint dram_left[NENG]; // DRAM bytes the port still has to serve for this DMA
  longint credit[NENG];    // DMA byte credit
  longint c0[NENG], c1[NENG], c2[NENG]; // loop counters (elements, or kb/nb/mi)
  // Performance counters, read by the harness.
  longint busy_cycles[NENG] /*verilator public*/;
  longint instr_count[NENG] /*verilator public*/;
  longint dram_bytes_read /*verilator public*/;
  longint dram_bytes_written /*verilator public*/;
  longint macs /*verilator public*/;

  // ---- memory access ----
  function automatic logic [7:0] rd8(input int lvl, input longint a);
    if (lvl == DRAM_LEVEL) return npu_dram_read(a);
    if (a < 0 || a >= level_size(lvl)) return 8'd0; // the harness validates programs first
    return spm[int'(level_base(lvl) + a)];
  endfunction
  task automatic wr8(input int lvl, input longint a, input logic [7:0] v);
    if (lvl == DRAM_LEVEL) npu_dram_write(a, v);
    else if (a >= 0 && a < level_size(lvl)) spm[int'(level_base(lvl) + a)] = v;
  endtask
  function automatic logic [31:0] rd32(input int lvl, input longint a);
    return {rd8(lvl, a + 3), rd8(lvl, a + 2), rd8(lvl, a + 1), rd8(lvl, a)};
  endfunction
  task automatic wr32(input int lvl, input longint a, input logic [31:0] v);
    for (int b = 0; b < 4; b++) wr8(lvl, a + longint'(b), v[8*b+:8]);
  endtask
  // An operand element as fp32 (dtype 0 = fp16, 1 = fp32).
  function automatic logic [31:0] load_f(input int lvl, input longint a, input int dtype);
    if (dtype == 0) return f16_to_f32({rd8(lvl, a + 1), rd8(lvl, a)});
    return rd32(lvl, a);
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
  function automatic logic [31:0] valu(input int op, input logic [31:0] a, input logic [31:0] b,
                                       input logic [31:0] imm0, input logic [31:0] imm1);
    logic [31:0] t;
    if (op == OP_ADD) return f32_add(a, b);
    if (op == OP_SUB) return f32_add(a, f32_is_nan(b) ? b : (b ^ 32'h80000000));
    if (op == OP_MUL) return f32_mul(a, b);
    if (op == OP_MAX) return f32_gt(a, b) ? a : b;
    if (op == OP_MIN) return f32_gt(b, a) ? a : b;
    if (op == OP_RELU) return f32_gt(a, 32'd0) ? a : 32'd0;
    if (op == OP_CLIP) begin
      t = f32_gt(imm0, a) ? imm0 : a;  // std::max(a, imm0)
      return f32_gt(t, imm1) ? imm1 : t;  // std::min(t, imm1)
    end
    if (op == OP_MULADD) return f32_add(f32_mul(a, imm0), imm1);
    return a;  // copy
  endfunction
  function automatic logic reads_src2(input int op);
    return op == OP_ADD || op == OP_SUB || op == OP_MUL || op == OP_MAX || op == OP_MIN;
  endfunction

  function automatic longint ceil_div(input longint a, input longint b);
    return (a + b - 1) / b;
  endfunction
  function automatic longint nonneg(input longint v);
    return v < 0 ? 0 : v;
  endfunction

  // ---- dispatch: program order into the engine queues ----
  task automatic dispatch();
    logic stop;
    int e;
    stop = 1'b0;
    while (!stop && dptr < n_instr) begin
      e = instr_engine(imem[dptr]);
      if (q_cnt[e] >= eng_depth(e)) stop = 1'b1;
      else begin
        q_idx[e][(q_head[e]+q_cnt[e])%QMAX] = dptr;
        q_cnt[e] = q_cnt[e] + 1;
        dptr = dptr + 1;
      end
    end
  endtask

  // ---- start: the head of engine e, if its tokens and token-FIFO room are there ----
  task automatic try_start(input int e, output logic started);
    logic [IBITS-1:0] w;
    logic [63:0] pop, push;
    logic ok;
    longint n0, n1, n2, eb, elems, inner;
    logic src_dram, dst_dram;
    started = 1'b0;
    if (busy[e] || q_cnt[e] == 0) return;
    w = imem[q_idx[e][q_head[e]]];
    pop = f_pop(w);
    push = f_push(w);
    ok = 1'b1;
    for (int q = 0; q < NENG; q++) begin
      if (pop[q] && tok_avail[q][e] == 0) ok = 1'b0;
      if (push[q] && tok_occ[e][q] >= TOKEN_DEPTH) ok = 1'b0;
    end
    if (!ok) return;
    for (int q = 0; q < NENG; q++)
      if (pop[q]) begin
        tok_avail[q][e] = tok_avail[q][e] - 1;
        tok_occ[q][e]   = tok_occ[q][e] - 1;
      end
    for (int q = 0; q < NENG; q++) if (push[q]) tok_occ[e][q] = tok_occ[e][q] + 1;
    cur_idx[e] = q_idx[e][q_head[e]];
    q_head[e] = (q_head[e] + 1) % QMAX;
    q_cnt[e] = q_cnt[e] - 1;
    busy[e] = 1'b1;
    cur_w[e] = w;
    cur_sem[e] = instr_sem(w);
    cur_start[e] = cycles;
    c0[e] = 0;
    c1[e] = 0;
    c2[e] = 0;
    credit[e] = 0;
    dram_left[e] = 0;
    tail_left[e] = longint'(instr_latency(w));
    work_left[e] = 0;
    case (cur_sem[e])
      SEM_DMA: begin
        n0 = f_n0(w);
        n1 = f_n1(w);
        n2 = f_n2(w);
        eb = f_elem_bytes(w);
        elems = n0 * n1 * n2;
        inner = nonneg(n0 - f_pad0_lo(w) - f_pad0_hi(w)) * nonneg(n1 - f_pad1_lo(w) - f_pad1_hi(w))
              * nonneg(n2 - f_pad2_lo(w) - f_pad2_hi(w));
        src_dram = int'(f_src_space(w)) == DRAM_LEVEL;
        dst_dram = int'(f_dst_space(w)) == DRAM_LEVEL;
        work_left[e] = elems;
        if (src_dram) dram_left[e] = dram_left[e] + inner * eb;
        if (dst_dram) dram_left[e] = dram_left[e] + elems * eb;
        if (src_dram) dram_bytes_read = dram_bytes_read + inner * eb;
        if (dst_dram) dram_bytes_written = dram_bytes_written + elems * eb;
        if (src_dram || dst_dram) tail_left[e] = tail_left[e] + DRAM_LAT;
      end
      SEM_MATMUL: begin
        work_left[e] = f_m(w) * ceil_div(f_k(w), TU_ROWS) * ceil_div(f_n(w), TU_COLS);
        tail_left[e] = tail_left[e] + TU_FILL;
        macs = macs + f_m(w) * f_k(w) * f_n(w);
      end
      SEM_VECTOR: work_left[e] = f_n0(w) * f_n1(w) * f_n2(w);
      default: ;
    endcase
    started = 1'b1;
  endtask

  // ---- one DMA element: box index (c0,c1,c2) ----
  task automatic dma_element(input int e);
    logic [IBITS-1:0] w;
    longint eb, i0, i1, i2, dst, src;
    logic pad;
    logic [63:0] pv;
    logic [7:0] v;
    w = cur_w[e];
    eb = f_elem_bytes(w);
    i0 = c0[e];
    i1 = c1[e];
    i2 = c2[e];
    pad = i0 < f_pad0_lo(w) || i0 >= f_n0(w) - f_pad0_hi(w) || i1 < f_pad1_lo(w)
       || i1 >= f_n1(w) - f_pad1_hi(w) || i2 < f_pad2_lo(w) || i2 >= f_n2(w) - f_pad2_hi(w);
    dst = f_dst_addr(w) + eb * (i0 * f_dst_s0(w) + i1 * f_dst_s1(w) + i2 * f_dst_s2(w));
    src = f_src_addr(w) + eb * ((i0 - f_pad0_lo(w)) * f_src_s0(w) + (i1 - f_pad1_lo(w)) * f_src_s1(w)
        + (i2 - f_pad2_lo(w)) * f_src_s2(w));
    pv = f_pad_value(w);
    for (longint b = 0; b < eb; b++) begin
      v = pad ? pv[8*int'(b)+:8] : rd8(int'(f_src_space(w)), src + b);
      wr8(int'(f_dst_space(w)), dst + b, v);
    end
    c0[e] = c0[e] + 1;
    if (c0[e] == f_n0(w)) begin
      c0[e] = 0;
      c1[e] = c1[e] + 1;
      if (c1[e] == f_n1(w)) begin
        c1[e] = 0;
        c2[e] = c2[e] + 1;
      end
    end
  endtask

  // ---- one tensor-array step: row mi = c2, column block nb = c1, k block kb = c0 ----
  task automatic mm_step(input int e);
    logic [IBITS-1:0] w;
    longint m, k, n, mi, nb, kb, col, kk;
    logic [31:0] acc, a, b;
    w = cur_w[e];
    m = f_m(w);
    k = f_k(w);
    n = f_n(w);
    mi = c2[e];
    nb = c1[e];
    kb = c0[e];
    for (int j = 0; j < TU_COLS; j++) begin
      col = nb * TU_COLS + longint'(j);
      if (col < n) begin
        if (kb == 0 && f_accumulate(w) == 64'd0) acc = 32'd0;
        else acc = rd32(TU_ACC_LEVEL, f_c_addr(w) + 4 * (mi * n + col));
        for (int r = 0; r < TU_ROWS; r++) begin
          kk = kb * TU_ROWS + longint'(r);
          if (kk < k) begin
            a = load_f(TU_A_LEVEL, f_a_addr(w) + (2 + 2 * TU_OPERAND_F32) * (mi * k + kk),
                       TU_OPERAND_F32);
            b = load_f(TU_B_LEVEL, f_b_addr(w) + (2 + 2 * TU_OPERAND_F32) * (kk * n + col),
                       TU_OPERAND_F32);
            acc = f32_add(acc, f32_mul(a, b));
          end
        end
        wr32(TU_ACC_LEVEL, f_c_addr(w) + 4 * (mi * n + col), acc);
      end
    end
    c0[e] = c0[e] + 1;
    if (c0[e] == ceil_div(k, TU_ROWS)) begin
      c0[e] = 0;
      c1[e] = c1[e] + 1;
      if (c1[e] == ceil_div(n, TU_COLS)) begin
        c1[e] = 0;
        c2[e] = c2[e] + 1;
      end
    end
  endtask

  // ---- one vector element (c0,c1,c2) ----
  task automatic vec_element(input int e);
    logic [IBITS-1:0] w;
    longint i0, i1, i2, dst, s1, s2;
    int op, dt, t1, t2;
    logic [31:0] a, b;
    w = cur_w[e];
    op = int'(f_op(w));
    dt = int'(f_dst_dtype(w));
    t1 = int'(f_src1_dtype(w));
    t2 = int'(f_src2_dtype(w));
    i0 = c0[e];
    i1 = c1[e];
    i2 = c2[e];
    dst = f_dst_addr(w) + (2 + 2 * dt) * (i0 * f_dst_s0(w) + i1 * f_dst_s1(w) + i2 * f_dst_s2(w));
    s1 = f_src1_addr(w) + (2 + 2 * t1) * (i0 * f_src1_s0(w) + i1 * f_src1_s1(w) + i2 * f_src1_s2(w));
    s2 = f_src2_addr(w) + (2 + 2 * t2) * (i0 * f_src2_s0(w) + i1 * f_src2_s1(w) + i2 * f_src2_s2(w));
    a = load_f(int'(f_src1_space(w)), s1, t1);
    b = reads_src2(op) ? load_f(int'(f_src2_space(w)), s2, t2) : 32'd0;
    store_f(int'(f_dst_space(w)), dst, dt, valu(op, a, b, f_imm0(w), f_imm1(w)));
    c0[e] = c0[e] + 1;
    if (c0[e] == f_n0(w)) begin
      c0[e] = 0;
      c1[e] = c1[e] + 1;
      if (c1[e] == f_n1(w)) begin
        c1[e] = 0;
        c2[e] = c2[e] + 1;
      end
    end
  endtask

  // ---- one cycle of engine e ----
  task automatic engine_cycle(input int e, input logic dram_grant);
    logic [63:0] push;
    longint eb;
    if (work_left[e] > 0 || dram_left[e] > 0) begin
      case (cur_sem[e])
        SEM_DMA: begin
          eb = f_elem_bytes(cur_w[e]);
          credit[e] = credit[e] + longint'(eng_rate(instr_engine(cur_w[e])));
          for (int s = 0; s < RATE_MAX; s++)
            if (work_left[e] > 0 && credit[e] >= eb) begin
              dma_element(e);
              credit[e] = credit[e] - eb;
              work_left[e] = work_left[e] - 1;
            end
          if (dram_grant) dram_left[e] = nonneg(dram_left[e] - DRAM_RATE);
        end
        SEM_MATMUL: begin
          mm_step(e);
          work_left[e] = work_left[e] - 1;
        end
        SEM_VECTOR:
        for (int l = 0; l < VU_LANES; l++)
          if (work_left[e] > 0) begin
            vec_element(e);
            work_left[e] = work_left[e] - 1;
          end
        default: work_left[e] = 0;
      endcase
      if (work_left[e] > 0 || dram_left[e] > 0 || tail_left[e] > 0) return;
    end else begin
      tail_left[e] = tail_left[e] - 1;
      if (tail_left[e] > 0) return;
    end
    // Retire: deliver the tokens at the end of this cycle.
    push = f_push(cur_w[e]);
    for (int q = 0; q < NENG; q++) if (push[q]) tok_avail[e][q] = tok_avail[e][q] + 1;
    busy[e] = 1'b0;
    busy_cycles[e] = busy_cycles[e] + (cycles + 1 - cur_start[e]);
    instr_count[e] = instr_count[e] + 1;
    npu_retire(e, cur_idx[e], cur_start[e], cycles + 1);
  endtask

  // The DRAM port serves the oldest DMA (earliest start, then lowest engine) that still needs it.
  function automatic int dram_owner();
    int best;
    best = -1;
    for (int e = 0; e < NENG; e++)
      if (busy[e] && cur_sem[e] == SEM_DMA && dram_left[e] > 0)
        if (best < 0 || cur_start[e] < cur_start[best]) best = e;
    return best;
  endfunction

  always @(posedge clk) begin
    logic changed, started, any_busy, progress;
    int owner;
    if (rst) begin
      dptr = 0;
      cycles <= 0;
      done <= 1'b0;
      deadlock <= 1'b0;
      dram_bytes_read = 0;
      dram_bytes_written = 0;
      macs = 0;
      for (int e = 0; e < NENG; e++) begin
        q_head[e] = 0;
        q_cnt[e] = 0;
        busy[e] = 1'b0;
        busy_cycles[e] = 0;
        instr_count[e] = 0;
        for (int q = 0; q < NENG; q++) begin
          tok_avail[e][q] = 0;
          tok_occ[e][q]   = 0;
        end
      end
    end else if (!done && !deadlock) begin
      progress = 1'b0;
      changed  = 1'b1;
      while (changed) begin
        changed = 1'b0;
        dispatch();
        for (int e = 0; e < NENG; e++) begin
          try_start(e, started);
          changed  = changed | started;
          progress = progress | started;
        end
      end
      owner = dram_owner();
      for (int e = 0; e < NENG; e++)
        if (busy[e]) begin
          progress = 1'b1;
          engine_cycle(e, owner == e);
        end
      any_busy = 1'b0;
      for (int e = 0; e < NENG; e++) any_busy = any_busy | busy[e] | (q_cnt[e] != 0);
      cycles <= cycles + 1;
      if (!any_busy && dptr >= n_instr) done <= 1'b1;
      else if (!progress) deadlock <= 1'b1;
    end
  end
endmodule
