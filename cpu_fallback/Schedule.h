// Schedule.h - CPU schedules: rewrites of a group's plain loop nest (tir::lowerGroup) into loop
// nests that run fast on a host CPU, computing the same values.
//
// Convolution (group = 1, the anchor of its group) is a register-tiled direct convolution with
// the vector over output channels (V = hostVectorLanes(): 16 with AVX-512, 8 with AVX):
//  * the weights are repacked OIHW -> [M/MBV][C][KH][KW][MBV] (MBV = 2V output channels, V when
//    M <= V; zero rows past M), so a reduction step's weights are one contiguous run: ahead of
//    time when the caller asks for pre-packed weights (the kernel's weight parameter then takes
//    the packed layout and PackedParam says how to produce it), else by a parallel loop at the
//    start of each call;
//  * the input is copied once into a zero-padded buffer (no bounds tests in the inner loop);
//  * blocks of MBV output channels run as a parallel loop; in a block, each output row is cut
//    into tiles of T pixels (a divisor of the row in [5, 8] if any, else 8 plus a remainder
//    tile); a tile's T x MBV accumulators (an unrolled, vectorised Allocate: registers after
//    SROA) start at the bias and take, for every (c, kh, kw), T broadcast input scalars times
//    the MBV-wide weight vector as FMAs; the tile is then stored lane by lane into NCHW,
//    through the group's pointwise tail (residual add, ReLU...: Epilogue.h), so the anchor's
//    output is never written and read back when only the tail consumes it.
// Depthwise convolution (group = C = M) has no reduction across channels to tile, so its vector
// runs along the output row instead: per channel (a parallel loop) and output row, vectors of V
// output pixels (plus a remainder vector) start at the bias, take the KH x KW taps unrolled (a
// broadcast weight times the input pixels, contiguous at stride 1, gathered lane by lane at
// larger strides) and leave through the fused tail, as contiguous stores.
// Groups whose anchor has no schedule, or whose loop nest is not in the expected form, are left
// as they are (correct, slower).
#pragma once

#include "graph/Graph.h"
#include "tir/IR.h"

#include <functional>
#include <vector>

namespace npuc::cpu {

/// fp32 lanes of the host's widest vector unit the schedules use.
int64_t hostVectorLanes();

/// A constant parameter the kernel takes in a repacked layout: param `param` of the function
/// holds `elements` floats, pack() of the graph value's data.
struct PackedParam {
  size_t param = 0;
  int64_t elements = 0;
  std::function<std::vector<float>(const std::vector<float> &)> pack;
};

/// Applies the matching schedule to `f` in place; returns whether one was applied. With
/// `packed`, constant weights may be taken pre-packed (each one recorded there).
bool scheduleForCpu(const graph::Graph &g, const graph::FusedGroup &grp,
                    const std::vector<graph::ValueId> &params, tir::PrimFunc &f,
                    std::vector<PackedParam> *packed = nullptr);

} // namespace npuc::cpu
