// Text.h - the graph IR as text that parses back: what graph-opt prints and lit tests hold.
//
//   graph "tiny"
//     input %x: f32[1x3x8x8]
//     const %w: f32[4x3x1x1] = random(7)           // seeded uniform [-1, 1) data
//     const %b: f32[4] = [0.5, -1, 0.25, 2]         // inline data, exact
//     const %s: f32[] = [0.125]                     // a scalar
//     const %z: f32[4x1x1] = splat(0)               // every element the same
//     const %shape: i64[2] = [1, -1]
//     %y: f32[1x4x8x8] = Conv "conv"(%x, %w, %b) {kernel_shape=[1, 1], pads=[0, 0, 0, 0]}
//     %r: f32[1x4x8x8] = Relu "relu"(%y)
//     output %r
//     group 0 "conv" on npu anchor "conv" nodes ["conv", "relu"] inputs [%x] outputs [%r]
//
// One declaration per line; `//` starts a comment. Names: `%name` when the name is letters,
// digits, '_' and '.', else `%"quoted"` (strings escape \" \\ \n \t and \xHH); node names are
// always quoted. A value is declared before its uses (the printer writes nodes in topological
// order); an omitted optional input is `<none>`. Types are f32, i64 and bool with the shape's
// extents joined by 'x' (`[]`: a scalar).
//
// Constants: `[...]` lists every element (f32: the shortest decimal that reads back to the same
// bits, `inf`, `-inf`, `nan` for the canonical quiet NaN, `bits(N)` for any other NaN; i64 and
// bool: integers); `splat(V)` repeats one element; `random(SEED)` or `random(SEED, LO, HI)` is
// uniform in [LO, HI) (default [-1, 1)) from std::mt19937(SEED), the data the tests' builders
// use. The printer writes f32 constants with more than TextOptions::inlineLimit elements that
// are not splats as `random(H)` with H a hash of their contents (equal constants stay equal, so
// CSE still sees them), so such a text keeps the graph's structure but not its numbers.
//
// Attributes, sorted by name: integers `3`, floats with a '.' or exponent (`1.0`, `1e-05`,
// `inf`, `nan`; shortest round-trip decimal of the double), strings `"..."`, integer lists
// `[1, 2]` (`[]` when empty), float lists `[1.0, 0.5]` (`f64[]` when empty).
//
// Groups (only after fusion) in g.groups order: id, name, placement (unassigned, npu, cpu),
// anchor, nodes, boundary values, and the optional `reason "..."` (cpuReason) and `note "..."`.
//
// Parsing numbers nodes and values afresh (in text order); the printer makes names unique
// (a repeated name gets a `.N` suffix), so printing a parsed text gives the same text again.
// Errors are npuc::Error "FILE:LINE:COL: error: expected X, found Y" (or naming the unknown
// value, node or attribute).
#pragma once

#include "graph/Graph.h"

#include <string>

namespace npuc::graph {

struct TextOptions {
  /// f32 constants with more elements (that are not splats) print as a `random(HASH)` pattern;
  /// negative: every constant's data in full.
  int64_t inlineLimit = -1;
};

std::string printGraphText(const Graph &g, const TextOptions &o = {});

/// How the text refers to a value of this name: `%name`, or `%"name"` when it needs quotes.
std::string valueRefText(const std::string &name);

/// Where text comes from, for messages; firstLine numbers the text's first line (a chunk of a
/// split file keeps the line numbers of the whole file).
struct TextSource {
  std::string file = "<input>";
  int firstLine = 1;
};

/// Reads one graph. Shapes are taken as written (no inference); every node's op must be one the
/// reference executor knows, so that any pass can run on the result.
Graph parseGraphText(const std::string &text, const TextSource &src = {});

} // namespace npuc::graph
