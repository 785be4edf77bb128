// LoopNestRegion.h - the regions the loop-nest kernel's tiled path (LoopNestTile.cpp) stages:
// affine index analysis of a chunk's accesses, the box (or flat interval) each buffer is
// accessed over, rewriting a chunk's accesses onto compact chunk buffers, and box DMA copies.
// Internal to the NPU backend.
#pragma once

#include "npu/Builder.h"
#include "tir/Bound.h"
#include "tir/IR.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace npuc::npu::loopnest {

// An index as c0 + sum(coeff * var); false when it is not affine in its variables.
struct Affine {
  int64_t c0 = 0;
  std::vector<std::pair<const tir::VarNode *, int64_t>> terms;
};
// A region of a buffer in one chunk: a box of its dimensions, or a flat element interval.
struct Region {
  bool box = true;
  std::vector<int64_t> lo, hi; // inclusive; flat: one entry each
  bool operator==(const Region &o) const { return box == o.box && lo == o.lo && hi == o.hi; }
  int64_t volume() const {
    int64_t v = 1;
    for (size_t i = 0; i < lo.size(); ++i)
      v *= hi[i] - lo[i] + 1;
    return v;
  }
  bool contains(const Region &o) const {
    for (size_t i = 0; i < lo.size(); ++i)
      if (o.lo[i] < lo[i] || o.hi[i] > hi[i])
        return false;
    return true;
  }
};

// One access of a buffer the kernel stages or allocates, under its loops' ranges.
struct Access {
  bool write = false;
  bool affine = false;
  Affine a;
  std::map<const tir::VarNode *, tir::Interval> ranges;
  tir::Interval flat;
};

// A staged or allocated buffer of the nest: a parameter (index into the staging) or an
// intermediate, with its region per chunk and the capacity over all chunks.
struct Slot {
  tir::Buffer ref;
  int param = -1; // -1: an intermediate
  bool writes = false, box = true, once = false;
  std::vector<int64_t> view;   // the buffer's shape with dimensions merged where digits carry
  std::vector<Region> regions; // per chunk, in `view`'s dimensions
  std::vector<int64_t> capShape;
  int64_t cap = 0;
  tir::Buffer chunk; // the rebased fp32 buffer of shape {cap}
};

// A box copy's dimensions, innermost first, strides in 2-byte units.
struct Dm {
  int64_t n, hs, cs; // extent, stride at home, stride on chip
};

/// Row-major strides of a shape, in elements.
std::vector<int64_t> rowMajor(const std::vector<int64_t> &shape);
/// `index` as c0 + sum(coeff * var); false when it is not affine in its variables.
bool affineOf(const tir::Expr &index, Affine &a);
/// Every access of the buffers in `slots` in `s`, under its loops' ranges; `why` is set when a
/// loop's range is not constant.
std::map<const tir::BufferNode *, std::vector<Access>>
accessesOf(const tir::Stmt &s, const std::set<const tir::BufferNode *> &slots, std::string &why);
/// The box of an affine access of a buffer of `shape`, when no index digit carries; `dense`:
/// every element of the box is accessed. `carry`: the dimension whose digit leaves its range
/// when that is why there is no box (merging it into the next outer one may help), else -1.
bool boxOf(const Access &x, const std::vector<int64_t> &shape, Region &r, bool &dense,
           int *carry = nullptr);
/// The smallest box holding both.
Region hull(const Region &a, const Region &b);
/// Chunk `chunk`'s accesses of the slots' buffers moved onto their chunk buffers (Slot::chunk),
/// indexed within the chunk's region (compact for a box, offset for a flat interval).
tir::Stmt rebase(const tir::Stmt &s, const std::map<const tir::BufferNode *, Slot *> &slots,
                 size_t chunk);
/// Copies a box between a tensor's home (byte address) and L1 in as few DMAs as the fields allow.
void boxCopy(const Builder &b, bool toChip, int home, int64_t homeAddr, int64_t chipAddr,
             const std::vector<Dm> &dims, std::vector<tir::Stmt> &out);

} // namespace npuc::npu::loopnest
