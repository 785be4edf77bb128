// LoopNestRegion.h - the chunks and regions of the loop-nest kernel's tiled path
// (LoopNestTile.cpp): the rows the nests share and one chunk's nests, affine index analysis of a
// chunk's accesses, the box (or flat interval) each buffer is accessed over, the check that no
// two chunks write the same element, rewriting a chunk's accesses onto compact chunk buffers,
// and box DMA copies.
// Internal to the NPU backend.
#pragma once

#include "npu/kernels/Builder.h"
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

// One top-level nest: leading extent-1 loops, then the chunked loop over R rows.
struct Nest {
  std::vector<const tir::ForNode *> units;
  std::vector<tir::Var> fixed; // the loops above the chunked one (one value per chunk)
  tir::Var rv;
  int64_t extent = 0;
  tir::Stmt body;
};

// The nests chunked at `depth` (1: their first loop past leading extent-1 ones; 2: the loop
// inside it, the first one then taking one value per chunk; ...): the loops above the chunked
// one must have the same extents in every nest, the chunked rows are the gcd of the chunked
// loops' extents, and a longer chunked loop splits into R x extent/R.
struct Rows {
  std::vector<Nest> nests;
  std::vector<int64_t> prefix; // extents of the fixed loops
  int64_t R = 0;
};

/// The top-level statements of a body (nested Seqs flattened).
std::vector<tir::Stmt> flatten(const tir::Stmt &s);
/// The nests `tops` chunked at `depth`; "" or why they cannot be.
std::string rowsAt(const std::vector<tir::Stmt> &tops, size_t depth, Rows &rows);
/// Rows [r0, r0 + len) of a nest with its fixed loops at `at`, the chunked loop from 0.
tir::Stmt chunkOf(const Nest &n, const std::vector<int64_t> &at, int64_t r0, int64_t len);
/// "" when no two chunks write the same element of a buffer (each chunk's write box is marked
/// element by element), else which buffer they share (a chunked loop its writes do not move
/// with, such as a reduced one).
std::string overlap(const std::vector<Slot> &slots);

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
