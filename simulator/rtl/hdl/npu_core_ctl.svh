// npu_core_ctl.svh - the control steps of npu_core, included in its module body: dispatch into
// the engine queues, the start rule (tokens and token-FIFO room), one cycle of a busy engine with
// its retire, the DRAM bandwidth arbiter and the memory-port responses. Written as next-state
// logic for the clocked process: every loop has a constant bound (engines, queue slots, lanes),
// every task has one exit (flags instead of `return`), so yosys and Verilator read the same code
// and a synthesis tool unrolls it into combinational logic (docs/RTL.md, "Synthesisability").

// ---- dispatch: program order into the engine queues ----
// One call moves instructions until a full queue or the end of the program stops it. Each move
// fills one of the NENG * QMAX queue slots, so NENG * QMAX + 1 steps always reach the stop.
task automatic dispatch();
  logic stop;
  int e, s;
  logic [OPC_MSB:0] opw;  // the instruction bits up to its opcode, all dispatch decodes
  stop = 1'b0;
  for (int i = 0; i < NENG * QMAX + 1; i++)
    if (!stop && dptr < n_instr) begin
      opw = imem[dptr][OPC_MSB:0];
      e = `instr_engine(opw);
      if (q_cnt[e] >= eng_depth(e)) stop = 1'b1;
      else begin
        s = q_head[e] + q_cnt[e];  // < 2 * QMAX: wrap without a modulo
        if (s >= QMAX) s = s - QMAX;
        q_idx[e][s] = dptr;
        q_cnt[e] = q_cnt[e] + 1;
        dptr = dptr + 1;
      end
    end
endtask

// ---- start: the head of engine e, if its tokens and token-FIFO room are there ----
/* verilator lint_off UNUSEDSIGNAL */
task automatic try_start(input int e, output logic started);
/* verilator lint_on UNUSEDSIGNAL */
  logic [IBITS-1:0] w;
  logic [63:0] pop, push;
  logic ok;
  longint n0, n1, n2, eb, elems, inner;
  logic src_dram, dst_dram;
  started = 1'b0;
  w = imem[q_idx[e][q_head[e]]];
  pop = `f_pop(w);
  push = `f_push(w);
  ok = !busy[e] && q_cnt[e] != 0;
  for (int q = 0; q < NENG; q++) begin
    if (pop[q] && tok_avail[q][e] == 0) ok = 1'b0;
    if (push[q] && tok_occ[e][q] >= TOKEN_DEPTH) ok = 1'b0;
  end
  if (ok) begin
    for (int q = 0; q < NENG; q++)
      if (pop[q]) begin
        tok_avail[q][e] = tok_avail[q][e] - 1;
        tok_occ[q][e]   = tok_occ[q][e] - 1;
      end
    for (int q = 0; q < NENG; q++) if (push[q]) tok_occ[e][q] = tok_occ[e][q] + 1;
    cur_idx[e] = q_idx[e][q_head[e]];
    q_head[e] = q_head[e] + 1 == QMAX ? 0 : q_head[e] + 1;
    q_cnt[e] = q_cnt[e] - 1;
    busy[e] = 1'b1;
    cur_w[e] = w;
    cur_sem[e] = `instr_sem(w);
    cur_start[e] = cycles;
    c0[e] = 0;
    c1[e] = 0;
    c2[e] = 0;
    credit[e] = 0;
    dram_left[e] = 0;
    tail_left[e] = 64'(`instr_latency(w));
    work_left[e] = 0;
    if (cur_sem[e] == SEM_DMA && eng_has_sem(e, SEM_DMA)) begin
      n0 = `f_n0(w);
      n1 = `f_n1(w);
      n2 = `f_n2(w);
      eb = `f_elem_bytes(w);
      elems = n0 * n1 * n2;
      inner = nonneg(n0 - `f_pad0_lo(w) - `f_pad0_hi(w)) * nonneg(n1 - `f_pad1_lo(w) - `f_pad1_hi(w))
            * nonneg(n2 - `f_pad2_lo(w) - `f_pad2_hi(w));
      src_dram = 32'(`f_src_space(w)) == DRAM_LEVEL;
      dst_dram = 32'(`f_dst_space(w)) == DRAM_LEVEL;
      work_left[e] = elems;
      if (src_dram) dram_left[e] = dram_left[e] + inner * eb;
      if (dst_dram) dram_left[e] = dram_left[e] + elems * eb;
      if (src_dram) dram_bytes_read = dram_bytes_read + inner * eb;
      if (dst_dram) dram_bytes_written = dram_bytes_written + elems * eb;
      if (src_dram || dst_dram) tail_left[e] = tail_left[e] + 64'(DRAM_LAT);
    end else if (cur_sem[e] == SEM_MATMUL && eng_has_sem(e, SEM_MATMUL)) begin
      k_blocks[e] = ceil_div(`f_k(w), 64'(TU_ROWS), $clog2(TU_ROWS));
      n_blocks[e] = ceil_div(`f_n(w), 64'(TU_COLS), $clog2(TU_COLS));
      work_left[e] = `f_m(w) * k_blocks[e] * n_blocks[e];
      tail_left[e] = tail_left[e] + 64'(TU_FILL);
      macs = macs + `f_m(w) * `f_k(w) * `f_n(w);
    end else if (cur_sem[e] == SEM_VECTOR && eng_has_sem(e, SEM_VECTOR)) begin
      work_left[e] = `f_n0(w) * `f_n1(w) * `f_n2(w);
      tail_left[e] = tail_left[e] + 64'(vop_latency(32'(`f_op(w))));
    end
    started = 1'b1;
  end
endtask

// ---- one cycle of busy engine e; retires the instruction at its last cycle ----
// A unit's datapath is built only into the engines that run it (eng_has_sem, a constant per
// engine), which the harness's validation makes equivalent to dispatching on cur_sem alone.
task automatic engine_cycle(input int e, input logic dram_grant);
  logic [63:0] push;
  longint eb;
  int slot;
  logic last;  // the work and the tail are done: the instruction may retire at this edge
  last = 1'b0;
  if (work_left[e] > 0 || dram_left[e] > 0) begin
    if (cur_sem[e] == SEM_DMA && eng_has_sem(e, SEM_DMA)) begin
      // A beat the port has not accepted yet holds the engine (never with the harness's
      // always-ready DRAM, so the timing model's rates hold).
      if (!mem_req_valid[e]) begin
        eb = `f_elem_bytes(cur_w[e]);
        credit[e] = credit[e] + 64'(eng_rate(e));
        slot = pend_head[e] + pend_cnt[e];  // < 2 * PEND: wrap without a modulo
        if (slot >= PEND) slot = slot - PEND;
        lanes_used[e] = 0;
        mem_req_write[e] = 1'b0;
        mem_req_strb[e*MEM_LANES+:MEM_LANES] = '0;
        beat_use = '0;
        beat_pad = '0;
        beat_byte = '0;
        beat_addr = '0;
        for (int s = 0; s < RATE_MAX; s++)
          if (work_left[e] > 0 && credit[e] >= eb) begin
            dma_element(e);
            credit[e] = credit[e] - eb;
            work_left[e] = work_left[e] - 1;
          end
        pend_use[e][slot] = beat_use;
        pend_pad[e][slot] = beat_pad;
        pend_byte[e][slot] = beat_byte;
        pend_addr[e][slot] = beat_addr;
        if (lanes_used[e] > 0) begin
          mem_req_valid[e] = 1'b1;
          if (!mem_req_write[e]) pend_cnt[e] = pend_cnt[e] + 1;
        end
        if (dram_grant) dram_left[e] = nonneg(dram_left[e] - 64'(DRAM_RATE));
        last = !(work_left[e] > 0 || dram_left[e] > 0 || tail_left[e] > 0);
      end
    end else begin
      if (cur_sem[e] == SEM_MATMUL && eng_has_sem(e, SEM_MATMUL)) begin
        mm_step(e);
        work_left[e] = work_left[e] - 1;
      end else if (cur_sem[e] == SEM_VECTOR && eng_has_sem(e, SEM_VECTOR)) begin
        for (int l = 0; l < VU_LANES; l++)
          if (work_left[e] > 0) begin
            vec_element(e);
            work_left[e] = work_left[e] - 1;
          end
      end else work_left[e] = 0;
      last = !(work_left[e] > 0 || dram_left[e] > 0 || tail_left[e] > 0);
    end
  end else begin
    tail_left[e] = tail_left[e] - 1;
    last = !(tail_left[e] > 0);
  end
  if (last) begin
    // A DMA whose last beat the port has not accepted, or whose read data is still out, waits.
    // With an always-ready port this never happens (the tail covers both), so the timing
    // model's durations hold; a port that stalls only delays the retire, never the data.
    if (mem_req_valid[e] || pend_cnt[e] != 0) tail_left[e] = 1;
    else begin
      // Retire: deliver the tokens at the end of this cycle.
      push = `f_push(cur_w[e]);
      for (int q = 0; q < NENG; q++) if (push[q]) tok_avail[e][q] = tok_avail[e][q] + 1;
      busy[e] = 1'b0;
      busy_cycles[e] = busy_cycles[e] + (cycles + 1 - cur_start[e]);
      instr_count[e] = instr_count[e] + 1;
      retire_valid[e] = 1'b1;
      retire_index[e*32+:32] = cur_idx[e];
      retire_start[e*64+:64] = cur_start[e];
    end
  end
endtask

// The DRAM port serves the oldest DMA (earliest start, then lowest engine) that still needs it.
function automatic int dram_owner();
  int best;
  longint best_start;
  best = -1;
  best_start = 0;
  for (int e = 0; e < NENG; e++)
    if (busy[e] && cur_sem[e] == SEM_DMA && dram_left[e] > 0)
      if (best < 0 || cur_start[e] < best_start) begin
        best = e;
        best_start = cur_start[e];
      end
  dram_owner = best;
endfunction

// Read data returning on the memory port: each beat completes the oldest outstanding one.
task automatic mem_responses();
  int h;
  logic [MEM_LANES-1:0] use_, pad;
  logic [MEM_LANES*8-1:0] byte_;
  logic [MEM_LANES*SPM_AW-1:0] addr;
  for (int e = 0; e < NENG; e++)
    if (mem_rsp_valid[e] && pend_cnt[e] > 0) begin
      h = pend_head[e];
      use_ = pend_use[e][h];
      pad = pend_pad[e][h];
      byte_ = pend_byte[e][h];
      addr = pend_addr[e][h];
      for (int l = 0; l < MEM_LANES; l++)
        if (use_[l])
          spm[addr[l*SPM_AW+:SPM_AW]] = pad[l] ? byte_[l*8+:8] :
              mem_rsp_data[(e*MEM_LANES+l)*8+:8];
      pend_head[e] = h + 1 == PEND ? 0 : h + 1;
      pend_cnt[e]  = pend_cnt[e] - 1;
    end
endtask
