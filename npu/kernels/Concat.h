// Concat.h - the Concat kernel's decisions (npu/kernels/LowerConcat.cpp): how many elements one L1
// tile buffer holds (tiles are whole rows of an input's block when a row fits, else pieces of
// one row) and the buffer count. The model is pure: the parts' and the output's levels (DRAM, or
// L1 when resident) come from the caller.
#pragma once

#include "npu/kernels/Kernels.h"

#include <optional>
#include <vector>

namespace npuc::npu {

struct ConcatTiling {
  int64_t elems = 0; // elements one tile buffer holds
  bool operator==(const ConcatTiling &) const = default;
};

struct ConcatModel {
  /// `partLevels[i]`: where part i lives (constants: DRAM); `outLevel`: the output's level.
  ConcatModel(const GroupPlan &p, const Hw &hw, std::vector<int> partLevels, int outLevel,
              int64_t l1Free, bool doubleBuffer);
  const Hw &hw;
  const ConcatParams &c;
  std::vector<int> partLevels;
  int outLevel, nb;
  int64_t eb, l1Free;
  int64_t largest = 0; // elements of the largest part's block
  int64_t cwMax = 0;   // widest tile row the DMA strides allow

  /// The most elements a buffer may hold: the largest part's block, or an aligned share of L1.
  int64_t maxElems() const;
  bool fits(const ConcatTiling &x) const { return x.elems >= 1 && x.elems <= maxElems(); }
  /// The tile shape of part i (rows x columns of its [outer x row] block).
  struct Shape {
    int64_t th = 1, cw = 1;
  };
  Shape tileOf(size_t i, int64_t elems) const;
  /// The tiles of every part together.
  int64_t tiles(int64_t elems) const;
  /// DRAM traffic (every part read and written once) against the per-tile DMA latency, which
  /// double buffering hides behind the next tile's copy.
  double cost(const ConcatTiling &x) const;
  /// maxElems() halved down to 1, largest first.
  std::vector<int64_t> elemValues() const;
  /// The heuristic: the largest buffer (maxElems()); empty when nothing fits.
  std::optional<ConcatTiling> heuristic() const;
};

/// The schedule of a tiling (strategy Concat; decisions buffers, elems).
Schedule concatSchedule(const ConcatTiling &x, bool doubleBuffer);

/// Lowers the Concat with tiling `forced`, or the heuristic's when empty.
Kernel lowerConcatTiling(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                         const KernelOptions &o, const std::optional<ConcatTiling> &forced);

/// The levels of the Concat's parts (constants in DRAM) for ConcatModel.
std::vector<int> concatPartLevels(const GroupPlan &p, const graph::Graph &g, const Hw &hw,
                                  const DramCtx &d);

} // namespace npuc::npu
