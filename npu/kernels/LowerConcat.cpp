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
// (npu/hw/Quant.h), and constant inputs are quantised with it.
//
// Not done yet (zero copy): when each input is produced by an NPU group of the same segment and
// read by nothing but the Concat, the producers could store straight into their slice (pixel
// stride = the output's row) with the memory planner placing the inputs inside the output, and
// this kernel would vanish; DenseNet's chained concats also need consumers that read such
// strided slices.
#include "npu/kernels/Concat.h"

#include "npu/pipeline/Compile.h"
#include "support/Error.h"

#include <fmt/format.h>

namespace npuc::npu {

using namespace tir;

std::vector<int> concatPartLevels(const GroupPlan &p, const graph::Graph &g, const Hw &hw,
                                  const DramCtx &d) {
  std::vector<int> v;
  for (const ConcatParams::Part &part : p.concat.parts)
    v.push_back(g.value(part.value).isConstant() ? hw.dram : d.level(part.value, hw));
  return v;
}

ConcatModel::ConcatModel(const GroupPlan &p, const Hw &hw, std::vector<int> partLevels,
                         int outLevel, int64_t l1Free, bool doubleBuffer)
    : hw(hw), c(p.concat), partLevels(std::move(partLevels)), outLevel(outLevel),
      nb(doubleBuffer ? 2 : 1), eb(hw.actBytes()), l1Free(l1Free) {
  for (const ConcatParams::Part &part : c.parts)
    largest = std::max(largest, c.outer * part.row);
  // A tile row's width is its L1 stride, so it must fit the load's and the store's fields; a
  // part or the output resident in L1 is copied with the on-chip move instead.
  bool anyResident = outLevel != hw.dram;
  for (int lv : this->partLevels)
    anyResident = anyResident || lv != hw.dram;
  cwMax = std::min({hw.maxDim(), Hw::fieldMax(hw.ld, "dst_s1"), Hw::fieldMax(hw.st, "src_s1")});
  if (anyResident)
    cwMax = std::min({cwMax, Hw::fieldMax(hw.mov, "dst_s1"), Hw::fieldMax(hw.mov, "src_s1")});
}

int64_t ConcatModel::maxElems() const {
  const int64_t align = hw.alignment(hw.l1);
  return std::min(largest, l1Free / nb / align * align / eb);
}

// A tile shape [th rows x cw columns] of an [outer x row] block holding at most `elems` elements:
// whole rows when a row fits (as many as fit), else one row cut into `cwMax`-wide pieces. Several
// rows per tile need the DRAM row strides in the load's and the store's fields; one row per tile
// needs none.
ConcatModel::Shape ConcatModel::tileOf(size_t i, int64_t elems) const {
  const ConcatParams::Part &part = c.parts[i];
  Shape t;
  t.cw = std::min({part.row, elems, cwMax});
  if (t.cw == part.row)
    t.th = std::max<int64_t>(1, std::min({c.outer, elems / part.row, hw.maxDim()}));
  const isa::InstrDesc *ldI = partLevels[i] == hw.dram ? hw.ld : hw.mov;
  const isa::InstrDesc *stI = outLevel == hw.dram ? hw.st : hw.mov;
  if (part.row > Hw::fieldMax(ldI, "src_s1") || c.outRow > Hw::fieldMax(stI, "dst_s1"))
    t.th = 1;
  return t;
}

int64_t ConcatModel::tiles(int64_t elems) const {
  int64_t n = 0;
  for (size_t i = 0; i < c.parts.size(); ++i) {
    if (c.parts[i].row == 0)
      continue;
    Shape t = tileOf(i, elems);
    n += ceilDiv(c.outer, t.th) * ceilDiv(c.parts[i].row, t.cw);
  }
  return n;
}

double ConcatModel::cost(const ConcatTiling &x) const {
  const isa::Target &t = *hw.t;
  int64_t total = 0;
  for (const ConcatParams::Part &part : c.parts)
    total += c.outer * part.row;
  const double bytes = double(total * eb * 2) / t.dram.bytesPerCycle;
  const double latency = double(tiles(x.elems)) * 2.0 * t.dram.latency;
  return nb == 1 ? bytes + latency : std::max(bytes, latency) + 2.0 * t.dram.latency;
}

std::vector<int64_t> ConcatModel::elemValues() const {
  std::vector<int64_t> v;
  for (int64_t e = maxElems(); e >= 1; e /= 2)
    v.push_back(e);
  return v;
}

std::optional<ConcatTiling> ConcatModel::heuristic() const {
  if (maxElems() < 1)
    return std::nullopt;
  return ConcatTiling{maxElems()};
}

Kernel lowerConcatTiling(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                         const KernelOptions &o, const std::optional<ConcatTiling> &forced) {
  const Hw &hw = b.hw();
  const ConcatParams &c = p.concat;
  const isa::ElemType act = hw.act;
  const int64_t eb = hw.actBytes();
  Kernel k;
  const int yLevel = d.level(p.output, hw);
  const ConcatModel m(p, hw, concatPartLevels(p, g, hw, d), yLevel, b.freeBytes(hw.l1),
                      o.doubleBuffer);
  if (m.largest == 0) {
    k.body = seq({});
    k.tiling = "concat of empty tensors: nothing to copy";
    return k;
  }
  const std::optional<ConcatTiling> x = forced ? forced : m.heuristic();
  if (!x || !m.fits(*x)) {
    k.reject = kernelReject(RejectKind::Capacity, "no room in L1 for a Concat tile");
    return k;
  }
  const int64_t bufElems = x->elems;
  OnChip buf{"cat_l1", hw.l1, bufElems * eb, m.nb};
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
    const ConcatModel::Shape t = m.tileOf(i, bufElems);
    const int xLevel = m.partLevels[i];
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

Kernel lowerConcatKernel(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                         const KernelOptions &o) {
  return lowerConcatTiling(p, g, b, d, o, std::nullopt);
}

} // namespace npuc::npu
