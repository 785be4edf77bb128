// PadMode.h - Pad's modes and its per-axis index rule, shared by the shape rule, the reference
// kernel and the CPU lowering.
//
// Negative pads crop first (ONNX Runtime's order): the kept input range along an axis is
// [first, last] = [max(-begin, 0), extent - 1 - max(-end, 0)], and the positive pads then extend
// it with the constant value, the edge element (edge) or the mirror image that excludes the edge
// (reflect, numpy's "reflect"), all relative to the kept range. In every mode output position o
// reads input x = o - begin when first <= x <= last.
#pragma once

#include "graph/Graph.h"

#include <optional>
#include <string>

namespace npuc::graph {

enum class PadMode { Constant, Edge, Reflect };

/// The mode named `name` (ONNX's attribute value), or nullopt for a mode npuc lacks.
std::optional<PadMode> padModeFromName(const std::string &name);
/// A Pad node's mode (its `mode` attribute, constant by default).
PadMode padModeOf(const Node &n);

/// One axis of a Pad: the shift from output to input positions and the kept input range.
struct PadAxis {
  int64_t begin = 0;            // the begin pad: input x = output o - begin
  int64_t first = 0, last = -1; // the kept input range (empty when last < first)
};

/// The axis of extent `extent` padded by `begin` and `end` (negative: cropped).
PadAxis padAxis(int64_t extent, int64_t begin, int64_t end);

/// The input position output position o reads along `axis`: x = o - begin inside the kept range;
/// outside it, the edge element (Edge), the mirror image (Reflect), or nullopt (Constant: the
/// padding value).
std::optional<int64_t> padSource(PadMode mode, const PadAxis &axis, int64_t o);

} // namespace npuc::graph
