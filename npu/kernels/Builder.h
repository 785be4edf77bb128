// Builder.h - building the tiled TIR of an NPU kernel: buffer placement and instruction leaves.
//
// Kernels (LowerMatmul.cpp, LowerVector.cpp) describe their loop nests with tir::For and produce
// NpuOp leaves through this builder, which knows the target's instruction for each primitive and
// the on-chip buffers of the group (a bump allocator per level, aligned as the level requires).
// Addresses are byte expressions; strides are in elements of the operand's dtype.
#pragma once

#include "npu/hw/Hw.h"
#include "npu/hw/Layout.h"
#include "support/IntMath.h"
#include "tir/IR.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace npuc::npu {

/// A strided 3-D view of on-chip or DRAM memory: element (i0,i1,i2) is at
/// addr + elemBytes*(i0*s0 + i1*s1 + i2*s2).
struct View {
  int level = -1;
  tir::Expr addr;
  isa::ElemType dtype = isa::ElemType::F16;
  tir::Expr s0 = tir::imm(1), s1 = tir::imm(0), s2 = tir::imm(0);
};

struct Dims {
  tir::Expr n0 = tir::imm(1), n1 = tir::imm(1), n2 = tir::imm(1);
};

/// Padding of a DMA box (per dim: leading and trailing elements written as `value`).
struct Pad {
  tir::Expr lo[3] = {tir::imm(0), tir::imm(0), tir::imm(0)};
  tir::Expr hi[3] = {tir::imm(0), tir::imm(0), tir::imm(0)};
  int64_t value = 0; // raw fp16 bits
};

/// One on-chip buffer of a kernel, with `count` copies (2 when double buffered).
struct OnChip {
  std::string name;
  int level = -1;
  int64_t bytes = 0; // one copy
  int count = 1;
  int64_t base = 0; // address of copy 0
  /// Address of copy (parity % count).
  tir::Expr at(const tir::Expr &parity) const;
};

/// Where the bank-aware placement (BankAlloc.h) puts a buffer instead of the bump allocator's
/// choice: its base and the pitch between its copies (>= the bump allocator's, so a copy may be
/// padded to move the next copy to other banks). base < 0: keep the bump allocator's choice.
struct Placement {
  int64_t base = -1;
  int64_t pitch = 0;
};

/// The address range [lo, hi) of each on-chip level a group's buffers may take; the rest of a
/// level holds tensors that stay resident across groups (the segment pipeline's residency
/// phase). A level not listed is the group's whole.
struct Window {
  std::map<int, std::pair<int64_t, int64_t>> range;
  int64_t lo(const Hw &hw, int level) const;
  int64_t hi(const Hw &hw, int level) const; // rounded down to the level's alignment
  /// Where a group's buffers end: hi(), except that a level without a window placed from the
  /// bottom keeps its exact size.
  int64_t end(const Hw &hw, int level, bool fromTop) const;
};

class Builder {
public:
  /// `fromTop` places the buffers downward from each level's top instead of upward from 0. The
  /// segment compiler alternates it between consecutive groups: their buffers then occupy
  /// disjoint ranges whenever both fit, so the token pass does not order the next group's first
  /// loads (its weights, its constants) after the current group's last reads of the same bytes,
  /// and the load engine prefetches them while the current group still computes.
  explicit Builder(const Hw &hw, bool fromTop = false, Window window = {})
      : hw_(hw), fromTop_(fromTop), window_(std::move(window)) {}
  /// A builder whose i-th successful reserve() takes placement[i] (when it has a base). The
  /// bump allocator still accounts as before, so freeBytes() and hence every tiling decision of
  /// the kernel are unchanged: only addresses move.
  Builder(const Hw &hw, std::vector<Placement> placement, bool fromTop = false, Window window = {})
      : hw_(hw), fromTop_(fromTop), window_(std::move(window)), placement_(std::move(placement)) {}
  const Hw &hw() const { return hw_; }

  /// Reserves a buffer; returns false (and reserves nothing) when the level is full.
  bool reserve(OnChip &b);
  /// Bytes still free on a level.
  int64_t freeBytes(int level) const;
  /// The most bytes the kernel had reserved at once on each level (its on-chip peak; a kernel
  /// that resets a level between phases reuses that space).
  const std::map<int, int64_t> &peakBytes() const { return peak_; }
  void resetLevel(int level) { used_[level] = 0; }
  const std::vector<OnChip> &buffers() const { return buffers_; }
  const Window &window() const { return window_; }
  bool fromTop() const { return fromTop_; }

  /// A copy into an on-chip buffer: the DRAM load when `src` is in DRAM, else the on-chip move
  /// (a tensor resident in L1 between groups is read with the feed engine's `mov`).
  tir::Stmt load(const View &src, const View &dst, const Dims &d, const Pad &pad = {}) const;
  /// A copy out of an on-chip buffer: the DRAM store when `dst` is in DRAM, else the on-chip move.
  tir::Stmt store(const View &src, const View &dst, const Dims &d) const;
  tir::Stmt move(const View &src, const View &dst, const Dims &d) const;
  tir::Stmt matmul(tir::Expr a, tir::Expr b, tir::Expr c, tir::Expr m, tir::Expr k, tir::Expr n,
                   tir::Expr accumulate) const;
  /// dst = op(src1, src2, imm0, imm1) over d; src2 may be a default View (level -1) for unary ops.
  tir::Stmt vector(isa::VecOp op, const View &dst, const View &src1, const View &src2,
                   const Dims &d, float imm0 = 0, float imm1 = 0) const;

  /// Wraps the kernel's body in Allocate statements for its on-chip buffers (for printing).
  tir::Stmt wrapAllocations(tir::Stmt body) const;

private:
  /// The window's end on a level (rounded down to its alignment).
  int64_t limitOf(int level) const;
  tir::Stmt dma(const isa::InstrDesc *d, const View &src, const View &dst, const Dims &n,
                const Pad &pad) const;
  const Hw &hw_;
  bool fromTop_ = false;
  Window window_;
  std::vector<Placement> placement_;
  std::map<int, int64_t> used_; // bytes taken per level (from the top when fromTop_)
  std::map<int, int64_t> peak_; // the largest used_ per level
  std::vector<OnChip> buffers_;
};

} // namespace npuc::npu
