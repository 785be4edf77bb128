// LowerConcat.cpp - Concat on the NPU: each input copied DRAM -> L1 -> DRAM into its slice of the
// output with the load and store DMA engines (the NPU has no DRAM-to-DRAM DMA).
//
// In the NPU layout input i is an [outer][row_i] block and lands at column colOffset_i of the
// output's [outer][outRow] block (Plan.h ConcatParams): one 2-D strided copy per input. Tiles
// are [rows x cols] boxes of that block sized to a share of L1 and to the DMA extent fields;
// the tile counter runs on across inputs, so with two buffers the load of tile k+1 overlaps the
// store of tile k throughout (the token pass orders the reuse of each buffer). No vector work:
// the cost is the compulsory DRAM traffic, every input read once and written once. On int8
// targets the copies move int8 bytes: calibration gives a Concat's inputs and output one scale
// (npu/Quant.h), and constant inputs are quantised with it.
//
// Not done yet (zero copy): when each input is produced by an NPU group of the same segment and
// read by nothing but the Concat, the producers could store straight into their slice (pixel
// stride = the output's row) with the memory planner placing the inputs inside the output, and
// this kernel would vanish; DenseNet's chained concats also need consumers that read such
// strided slices.
#include "npu/kernels/Kernels.h"

#include "npu/hw/Layout.h"
#include "support/Error.h"

#include <fmt/format.h>

namespace npuc::npu {

using namespace tir;

namespace {

// A tile shape [th rows x cw columns] of an [outer x row] block holding at most `elems` elements:
// whole rows when a row fits (as many as fit), else one row cut into `cwMax`-wide pieces.
struct TileShape {
  int64_t th = 1, cw = 1;
};

TileShape tileFor(int64_t outer, int64_t row, int64_t elems, int64_t cwMax, int64_t thMax) {
  TileShape t;
  t.cw = std::min({row, elems, cwMax});
  if (t.cw == row)
    t.th = std::max<int64_t>(1, std::min({outer, elems / row, thMax}));
  return t;
}

} // namespace

Kernel lowerConcatKernel(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                         const KernelOptions &o) {
  const Hw &hw = b.hw();
  const ConcatParams &c = p.concat;
  const isa::ElemType act = hw.act;
  const int64_t eb = hw.actBytes();
  Kernel k;
  const int nb = o.doubleBuffer ? 2 : 1;
  const int64_t maxDim = hw.maxDim();
  // One buffer holds the largest part's block when it fits, else an aligned share of free L1;
  // a tile row's width is its L1 stride, so it must fit the load's and the store's fields.
  int64_t largest = 0;
  for (const ConcatParams::Part &part : c.parts)
    largest = std::max(largest, c.outer * part.row);
  const int64_t align = hw.alignment(hw.l1);
  const int64_t bufElems = std::min(largest, b.freeBytes(hw.l1) / nb / align * align / eb);
  // A part or the output resident in L1 (Compile.cpp) is copied with the on-chip move instead.
  const int yLevel = d.level(p.output, hw);
  auto levelOf = [&](const ConcatParams::Part &part) {
    return g.value(part.value).isConstant() ? hw.dram : d.level(part.value, hw);
  };
  bool anyResident = yLevel != hw.dram;
  for (const ConcatParams::Part &part : c.parts)
    anyResident = anyResident || levelOf(part) != hw.dram;
  int64_t cwMax = std::min({maxDim, Hw::fieldMax(hw.ld, "dst_s1"), Hw::fieldMax(hw.st, "src_s1")});
  if (anyResident)
    cwMax = std::min({cwMax, Hw::fieldMax(hw.mov, "dst_s1"), Hw::fieldMax(hw.mov, "src_s1")});
  const isa::InstrDesc *stI = yLevel == hw.dram ? hw.st : hw.mov;
  if (largest == 0) {
    k.body = seq({});
    k.tiling = "concat of empty tensors: nothing to copy";
    return k;
  }
  if (bufElems < 1) {
    k.reject = "no room in L1 for a Concat tile";
    return k;
  }
  OnChip buf{"cat_l1", hw.l1, bufElems * eb, nb};
  NPUC_ASSERT(b.reserve(buf), "the Concat tile was sized to the free L1");

  const int64_t yAddr = d.addrOf(p.output);
  std::vector<Stmt> body;
  int64_t tiles = 0; // running tile counter: the buffer parity continues across inputs
  for (size_t i = 0; i < c.parts.size(); ++i) {
    const ConcatParams::Part &part = c.parts[i];
    if (part.row == 0)
      continue;
    const graph::Value &v = g.value(part.value);
    int64_t xAddr;
    if (v.isConstant()) {
      // A constant input is packed into the segment's constant image in the NPU layout.
      NPUC_ASSERT(v.f32, "Concat on the NPU takes float inputs (analyzeGroup checked the dtype)");
      xAddr =
          d.addConst(packTensor(HostTensor(v.shape, *v.f32), dramLayoutOf(v), act, p.quant.out));
    } else {
      xAddr = d.addrOf(part.value);
      NPUC_ASSERT(!hw.quantised() || p.quant.of(part.value) == p.quant.out,
                  "calibration gives a Concat's inputs its output's scale");
    }
    TileShape t = tileFor(c.outer, part.row, bufElems, cwMax, maxDim);
    // Several rows per tile need the DRAM row strides in the load's and the store's fields;
    // one row per tile needs none.
    const int xLevel = levelOf(part);
    const isa::InstrDesc *ldI = xLevel == hw.dram ? hw.ld : hw.mov;
    if (part.row > Hw::fieldMax(ldI, "src_s1") || c.outRow > Hw::fieldMax(stI, "dst_s1"))
      t.th = 1;
    const int64_t RB = ceilDiv(c.outer, t.th), CB = ceilDiv(part.row, t.cw);
    Var rb = Var::make(fmt::format("rb{}", i)), cb = Var::make(fmt::format("cb{}", i));
    Expr it = imm(tiles) + Expr(rb) * CB + cb;
    Expr thc = RB == 1 ? imm(c.outer) : min(imm(t.th), c.outer - Expr(rb) * t.th);
    Expr cwc = CB == 1 ? imm(part.row) : min(imm(t.cw), part.row - Expr(cb) * t.cw);
    Expr r0 = Expr(rb) * t.th, c0 = Expr(cb) * t.cw;
    View src{xLevel, imm(xAddr) + (r0 * part.row + c0) * eb, act};
    src.s1 = imm(t.th > 1 ? part.row : 0);
    View tile{hw.l1, buf.at(it), act};
    tile.s1 = imm(t.cw);
    View dst{yLevel, imm(yAddr) + (r0 * c.outRow + part.colOffset + c0) * eb, act};
    dst.s1 = imm(t.th > 1 ? c.outRow : 0);
    Dims box{cwc, thc, imm(1)};
    Stmt copy = seq({b.load(src, tile, box), b.store(tile, dst, box)});
    body.push_back(forLoop(rb, imm(0), imm(RB), forLoop(cb, imm(0), imm(CB), copy)));
    tiles += RB * CB;
  }
  k.body = b.wrapAllocations(seq(body));
  int64_t total = 0;
  for (const ConcatParams::Part &part : c.parts)
    total += c.outer * part.row;
  k.dramBytes = total * eb * 2;
  k.tiling = fmt::format("concat of {} input(s): {} outer x {} output row elements, {} tile(s) "
                         "of up to {} elements; {}",
                         c.parts.size(), c.outer, c.outRow, tiles, bufElems,
                         o.doubleBuffer ? "double-buffered" : "single-buffered");
  return k;
}

} // namespace npuc::npu
