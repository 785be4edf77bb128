// npu_core.sv - the NPU core: instruction fetch/dispatch, per-engine in-order queues with
// dependency tokens, DMA engines behind a memory port, a rows x cols tensor array of PE instances
// with fp32 accumulation, a lanes-wide fp32 vector unit, and the on-chip scratchpads.
//
// Every target-specific number (instruction width, opcode and field positions, queue depths,
// rates, memory sizes, unit shapes, op codes, latencies) comes from npu_params.svh, which the
// build generates from the target YAML with simulator/rtl/GenParams.cpp, included in the module
// body (yosys 0.23 reads no package imports, hence also the non-ANSI port list). The core is one
// clocked process that performs exactly one cycle of every engine per edge, so cycle counts come
// from the hardware structure, not from formulas (its steps: npu_core_ctl.svh, the control, and
// npu_core_units.svh, the datapath):
//   - dispatch: instructions leave the instruction memory in program order into their engine's
//     queue (eng_depth entries); a full queue stalls dispatch for every engine.
//   - start: an engine's head starts when the engine is idle, a token is present in every FIFO
//     it pops and every FIFO it pushes has room (room is reserved at start, tokens are delivered
//     at the end). Start and dispatch iterate within the cycle, so a slot freed by a start can
//     be refilled and started in the same cycle (dispatch is free, as in the timing model); each
//     round that changes anything starts an idle engine, so NENG + 1 rounds reach the fixed
//     point and the loop has that constant bound.
//   - DMA: moves eng_rate bytes per cycle (whole elements, byte credit carried over) while the
//     DRAM bandwidth arbiter grants DRAM_RATE bytes per cycle to the oldest DRAM transfer in
//     flight; then the descriptor latency and DRAM_LAT tail before the tokens are delivered.
//     DRAM bytes travel through the memory port below (one channel per engine); read data comes
//     back DRAM_LAT cycles after the request is accepted and is written to the scratchpad from an
//     in-order table of outstanding destinations, always before the instruction's tail ends.
//   - tensor: one (row of A) x (rows-deep slice of K) x (cols-wide slice of N) step per cycle:
//     the operands are read into the array's input registers, npu_tensor_array reduces them into
//     the accumulators, and the results are written back at the next edge; then the fill/drain
//     latency (which covers that write-back cycle).
//   - vector: VU_LANES elements per cycle, in i2/i1/i0 order (sequential, so reductions with a
//     zero destination stride see their own writes); then the pipeline latency.
// Retired instructions are reported on the retire_* outputs (one cycle pulse per engine), so a
// testbench needs no DPI. See docs/RTL.md.
// Lint (tests/rtl, `verilator --lint-only -Wall`): two waivers, both for the coding style of this
// file. BLKSEQ: the clocked process orders the work of one cycle (dispatch, start, engines) with
// blocking assignments to variables only this process reads, which synthesis maps to the
// combinational logic between the registers; UNUSEDSIGNAL on engine/slot indices: they are `int`
// for readability but only index arrays of NENG/PEND entries.
// Synthesis (tests/rtl/synth_core.sh, yosys): the whole core, every loop bounded by a parameter.
/* verilator lint_off BLKSEQ */
module npu_core #(
    parameter int IMEM_WORDS = 16384
) (
    clk,
    rst,
    n_instr,
    done,
    deadlock,
    cycles,
    mem_req_valid,
    mem_req_ready,
    mem_req_write,
    mem_req_strb,
    mem_req_addr,
    mem_req_wdata,
    mem_rsp_valid,
    mem_rsp_data,
    retire_valid,
    retire_index,
    retire_start
);
  `include "npu_params.svh"
  `include "npu_fp.svh"
  `include "npu_vmath.svh"
  input logic clk;
  input logic rst;
  input int n_instr;
  output logic done;
  output logic deadlock;
  output longint cycles;
  // Memory port, one channel per engine (only DMA engines drive theirs). A request is a beat of
  // up to MEM_LANES bytes, each byte lane with its own address and strobe (the DMA gathers and
  // scatters whole elements at any stride, as the timing model does). It transfers at an edge
  // where valid && ready; a read's data returns on mem_rsp_* DRAM_LAT edges later, in order.
  // Flat vectors, lane l of engine e at index e * MEM_LANES + l (times the lane's width), so that
  // every frontend reads the ports (yosys 0.23: no multi-dimensional packed ports).
  output logic [NENG-1:0] mem_req_valid;
  input logic [NENG-1:0] mem_req_ready;
  output logic [NENG-1:0] mem_req_write;
  output logic [NENG*MEM_LANES-1:0] mem_req_strb;
  output logic [NENG*MEM_LANES*MEM_AW-1:0] mem_req_addr;
  output logic [NENG*MEM_LANES*8-1:0] mem_req_wdata;
  input logic [NENG-1:0] mem_rsp_valid;
  input logic [NENG*MEM_LANES*8-1:0] mem_rsp_data;
  // Retire monitor: engine e retired instruction retire_index[e*32 +: 32], started at
  // retire_start[e*64 +: 64], at the edge before the pulse (its end cycle is `cycles` while the
  // pulse is high).
  output logic [NENG-1:0] retire_valid;
  output logic [NENG*32-1:0] retire_index;
  output logic [NENG*64-1:0] retire_start;

  // Outstanding DRAM reads per engine: one per cycle from request to response, plus the cycle the
  // request waits in its register.
  localparam int PEND = DRAM_LAT + 2;
  localparam int SPM_AW = SPM_BYTES > 1 ? $clog2(SPM_BYTES) : 1;  // scratchpad byte index

  // Loaded by the harness before reset is released (backdoor, as a bring-up testbench does).
  /*verilator tracing_off*/
  logic [IBITS-1:0] imem[IMEM_WORDS] /*verilator public*/;
  logic [7:0] spm[SPM_BYTES] /*verilator public*/;
  int q_idx[NENG][QMAX] /*verilator public*/;
  // Outstanding read beats, one entry per beat with a field per lane (lane l at bit l, byte l * 8,
  // index l * SPM_AW): whether the lane is used, padding (its byte is pend_byte's, not the
  // response's) and the scratchpad byte it goes to (level base included). A DMA cycle assembles
  // its beat in beat_* and stores it with one write, so the table is a plain FIFO of wide entries.
  logic [MEM_LANES-1:0] pend_use[NENG][PEND];
  logic [MEM_LANES-1:0] pend_pad[NENG][PEND];
  logic [MEM_LANES*8-1:0] pend_byte[NENG][PEND];
  logic [MEM_LANES*SPM_AW-1:0] pend_addr[NENG][PEND];
  logic [MEM_LANES-1:0] beat_use, beat_pad;
  logic [MEM_LANES*8-1:0] beat_byte;
  logic [MEM_LANES*SPM_AW-1:0] beat_addr;
  /*verilator tracing_on*/
  int pend_head[NENG], pend_cnt[NENG];
  int lanes_used[NENG];  // byte lanes of this cycle's beat

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
  longint work_left[NENG];  // DMA/vector: elements; tensor: array steps
  longint tail_left[NENG];  // fixed latency cycles after the work
  longint dram_left[NENG];  // DRAM bytes the bandwidth arbiter still has to grant this DMA
  longint credit[NENG];  // DMA byte credit
  longint c0[NENG], c1[NENG], c2[NENG];  // loop counters (elements, or kb/nb/mi)
  longint k_blocks[NENG], n_blocks[NENG];  // matmul: k slices and n blocks (fixed at its start)
  // Performance counters, read by the harness.
  longint busy_cycles[NENG] /*verilator public*/;
  longint instr_count[NENG] /*verilator public*/;
  longint dram_bytes_read /*verilator public*/;
  longint dram_bytes_written /*verilator public*/;
  longint macs /*verilator public*/;

  // ---- tensor array: input registers, the PE grid, write-back registers ----
  // Flat vectors as the array's ports take them (element [r][c] at (r * TU_COLS + c) * 32).
  logic tu_v;  // a step's results are to be written back at this edge
  logic [TU_ROWS-1:0] tu_row_en;
  logic [TU_ROWS*32-1:0] tu_a;
  logic [TU_ROWS*TU_COLS*32-1:0] tu_b;
  logic [TU_COLS*32-1:0] tu_acc_in, tu_acc_out;
  logic [TU_COLS-1:0] tu_col_en;
  longint tu_wb_addr[TU_COLS];
  npu_tensor_array #(
      .ROWS(TU_ROWS),
      .COLS(TU_COLS),
      .OPERAND_F32(TU_OPERAND_F32 != 0)
  ) tensor_array (
      .row_en(tu_row_en),
      .a(tu_a),
      .b(tu_b),
      .acc_in(tu_acc_in),
      .acc_out(tu_acc_out)
  );

  `include "npu_core_units.svh"
  `include "npu_core_ctl.svh"

  always @(posedge clk) begin : cycle
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
      tu_v = 1'b0;
      mem_req_valid = '0;
      mem_req_write = '0;
      mem_req_strb = '0;
      mem_req_addr = '0;
      mem_req_wdata = '0;
      retire_valid = '0;
      retire_index = '0;
      retire_start = '0;
      for (int e = 0; e < NENG; e++) begin
        q_head[e] = 0;
        q_cnt[e] = 0;
        busy[e] = 1'b0;
        busy_cycles[e] = 0;
        instr_count[e] = 0;
        pend_head[e] = 0;
        pend_cnt[e] = 0;
        for (int q = 0; q < NENG; q++) begin
          tok_avail[e][q] = 0;
          tok_occ[e][q]   = 0;
        end
      end
    end else if (!done && !deadlock) begin
      retire_valid = '0;
      // Port beats accepted at this edge leave their registers.
      for (int e = 0; e < NENG; e++) if (mem_req_ready[e]) mem_req_valid[e] = 1'b0;
      mem_responses();
      // The tensor array's results of the previous step.
      if (tu_v) begin
        for (int j = 0; j < TU_COLS; j++)
          if (tu_col_en[j]) wr32(TU_ACC_LEVEL, tu_wb_addr[j], tu_acc_out[j*32+:32]);
        tu_v = 1'b0;
      end
      // Dispatch and start to the fixed point (see the header for the bound).
      progress = 1'b0;
      changed  = 1'b1;
      for (int round = 0; round < NENG + 1; round++)
        if (changed) begin
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
      any_busy = tu_v;
      for (int e = 0; e < NENG; e++)
        any_busy = any_busy | busy[e] | (q_cnt[e] != 0) | mem_req_valid[e] | (pend_cnt[e] != 0);
      cycles <= cycles + 1;
      if (!any_busy && dptr >= n_instr) done <= 1'b1;
      else if (!progress) deadlock <= 1'b1;
    end
  end
endmodule
/* verilator lint_on BLKSEQ */
