// Builder.cpp - NpuOp construction and per-level buffer reservation for NPU kernels.
#include "npu/kernels/Builder.h"

#include "support/Error.h"

#include <algorithm>

namespace npuc::npu {

using namespace tir;

Expr OnChip::at(const Expr &parity) const {
  if (count == 1)
    return imm(base);
  return imm(base) + floormod(parity, count) * imm(bytes);
}

int64_t Window::lo(const Hw &hw, int level) const {
  auto it = range.find(level);
  return it == range.end() ? 0 : alignUp(it->second.first, hw.alignment(level));
}

int64_t Window::hi(const Hw &hw, int level) const {
  auto it = range.find(level);
  const int64_t align = hw.alignment(level);
  return (it == range.end() ? hw.capacity(level) : it->second.second) / align * align;
}

bool Builder::reserve(OnChip &b) {
  int64_t align = hw_.alignment(b.level);
  int64_t used = alignUp(used_[b.level], align);
  int64_t stride = alignUp(b.bytes, align);
  const int64_t lo = window_.lo(hw_, b.level), limit = limitOf(b.level);
  if (lo + used + stride * b.count > limit)
    return false;
  b.bytes = stride;
  // From the top, the buffer ends where the previous one began.
  b.base = fromTop_ ? limit - used - stride * b.count : lo + used;
  NPUC_ASSERT(b.base >= lo && b.base % align == 0, "buffer placement stays aligned and in range");
  used_[b.level] = used + stride * b.count;
  peak_[b.level] = std::max(peak_[b.level], used_[b.level]);
  if (size_t i = buffers_.size(); i < placement_.size() && placement_[i].base >= 0) {
    const Placement &p = placement_[i];
    NPUC_ASSERT(p.pitch >= stride && p.pitch % align == 0 && p.base % align == 0 && p.base >= lo &&
                    p.base + p.pitch * b.count <= limit,
                "a bank-aware placement keeps a buffer aligned, at least as large as the bump "
                "allocator made it, and inside its window of the level: " +
                    b.name);
    b.base = p.base;
    b.bytes = p.pitch;
  }
  buffers_.push_back(b);
  return true;
}

int64_t Window::end(const Hw &hw, int level, bool fromTop) const {
  // From the top, the end rounded down to the alignment keeps every base aligned; from the
  // bottom a whole level keeps its exact size (nothing is placed from its end).
  if (!fromTop && !range.count(level))
    return hw.capacity(level);
  return hi(hw, level);
}

int64_t Builder::limitOf(int level) const {
  return window_.end(hw_, level, fromTop_);
}

int64_t Builder::freeBytes(int level) const {
  auto it = used_.find(level);
  int64_t used = it == used_.end() ? 0 : alignUp(it->second, hw_.alignment(level));
  return std::max<int64_t>(0, limitOf(level) - window_.lo(hw_, level) - used);
}

Stmt Builder::dma(const isa::InstrDesc *d, const View &src, const View &dst, const Dims &n,
                  const Pad &pad) const {
  NPUC_ASSERT(src.dtype == dst.dtype, "DMA moves raw elements; both sides must agree");
  std::vector<std::pair<std::string, Expr>> f = {{"src_space", imm(src.level)},
                                                 {"src_addr", src.addr},
                                                 {"dst_space", imm(dst.level)},
                                                 {"dst_addr", dst.addr},
                                                 {"elem_bytes", imm(isa::elemBytes(src.dtype))},
                                                 {"n0", n.n0},
                                                 {"n1", n.n1},
                                                 {"n2", n.n2},
                                                 {"src_s0", src.s0},
                                                 {"src_s1", src.s1},
                                                 {"src_s2", src.s2},
                                                 {"dst_s0", dst.s0},
                                                 {"dst_s1", dst.s1},
                                                 {"dst_s2", dst.s2}};
  static const char *lo[3] = {"pad0_lo", "pad1_lo", "pad2_lo"};
  static const char *hi[3] = {"pad0_hi", "pad1_hi", "pad2_hi"};
  // Padding fields are emitted only where they may be non-zero, to keep the TIR readable.
  auto isZero = [](const Expr &e) {
    const IntImmNode *c = e.as<IntImmNode>();
    return c && c->value == 0;
  };
  for (int i = 0; i < 3; ++i) {
    if (!isZero(pad.lo[i]))
      f.emplace_back(lo[i], pad.lo[i]);
    if (!isZero(pad.hi[i]))
      f.emplace_back(hi[i], pad.hi[i]);
  }
  if (pad.value != 0)
    f.emplace_back("pad_value", imm(pad.value));
  return NpuOp::make(d->mnemonic, std::move(f));
}

Stmt Builder::load(const View &src, const View &dst, const Dims &d, const Pad &pad) const {
  NPUC_ASSERT(dst.level != hw_.dram, "a load fills an on-chip buffer");
  return dma(src.level == hw_.dram ? hw_.ld : hw_.mov, src, dst, d, pad);
}
Stmt Builder::store(const View &src, const View &dst, const Dims &d) const {
  NPUC_ASSERT(src.level != hw_.dram, "a store drains an on-chip buffer");
  return dma(dst.level == hw_.dram ? hw_.st : hw_.mov, src, dst, d, Pad{});
}
Stmt Builder::move(const View &src, const View &dst, const Dims &d) const {
  return dma(hw_.mov, src, dst, d, Pad{});
}

Stmt Builder::matmul(Expr a, Expr b, Expr c, Expr m, Expr k, Expr n, Expr accumulate) const {
  return NpuOp::make(hw_.mm->mnemonic, {{"a_addr", a},
                                        {"b_addr", b},
                                        {"c_addr", c},
                                        {"m", m},
                                        {"k", k},
                                        {"n", n},
                                        {"accumulate", accumulate}});
}

Stmt Builder::vector(isa::VecOp op, const View &dst, const View &src1, const View &src2,
                     const Dims &d, float imm0, float imm1) const {
  int code = hw_.t->vector.opCode(op);
  NPUC_ASSERT(code >= 0,
              std::string("analyzeGroup checked the op against the target: ") + isa::vecOpName(op));
  std::vector<std::pair<std::string, Expr>> f = {{"op", imm(code)},
                                                 {"dst_space", imm(dst.level)},
                                                 {"dst_addr", dst.addr},
                                                 {"dst_dtype", imm(static_cast<int>(dst.dtype))},
                                                 {"src1_space", imm(src1.level)},
                                                 {"src1_addr", src1.addr},
                                                 {"src1_dtype", imm(static_cast<int>(src1.dtype))},
                                                 {"n0", d.n0},
                                                 {"n1", d.n1},
                                                 {"n2", d.n2},
                                                 {"dst_s0", dst.s0},
                                                 {"dst_s1", dst.s1},
                                                 {"dst_s2", dst.s2},
                                                 {"src1_s0", src1.s0},
                                                 {"src1_s1", src1.s1},
                                                 {"src1_s2", src1.s2}};
  if (src2.level >= 0) {
    f.insert(f.end(), {{"src2_space", imm(src2.level)},
                       {"src2_addr", src2.addr},
                       {"src2_dtype", imm(static_cast<int>(src2.dtype))},
                       {"src2_s0", src2.s0},
                       {"src2_s1", src2.s1},
                       {"src2_s2", src2.s2}});
  }
  if (imm0 != 0)
    f.emplace_back("imm0", imm(floatBits(imm0)));
  if (imm1 != 0)
    f.emplace_back("imm1", imm(floatBits(imm1)));
  return NpuOp::make(hw_.vop->mnemonic, std::move(f));
}

Stmt Builder::wrapAllocations(Stmt body) const {
  for (auto it = buffers_.rbegin(); it != buffers_.rend(); ++it) {
    const auto &lv = hw_.t->levels.at(static_cast<size_t>(it->level));
    Buffer b = Buffer::make(it->name, DataType::UInt(8), {it->bytes * it->count}, lv.name);
    body = AttrStmt::make("npu.address", imm(it->base), Allocate::make(b, body));
  }
  return body;
}

} // namespace npuc::npu
