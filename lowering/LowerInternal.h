// LowerInternal.h - shared state, index helpers and the per-operator lowerings of lowering/ (its
// .cpp files only).
//
// LowerCtx owns the value -> buffer map and builds the index arithmetic every op uses: loop
// variables over a shape, flattened row-major indices, numpy-broadcast indices and perfect loop
// nests. The lowerings are free functions taking the context and returning one statement;
// lowerGroup picks each node's through the Lower column of graph/Ops.def.
#pragma once

#include "graph/Graph.h"
#include "lowering/LowerOps.h"
#include "tir/IR.h"

#include <map>
#include <string>
#include <vector>

namespace npuc::tir::lower {

using graph::OpKind;

struct LowerCtx {
  const graph::Graph &g;
  const graph::FusedGroup &grp;
  std::map<graph::ValueId, Buffer> buffers;
  std::vector<graph::ValueId> constants; // read constants, first-use order
  std::vector<Buffer> allocated;         // group-internal values
  int varCount = 0;
  LowerOptions options;

  LowerCtx(const graph::Graph &g, const graph::FusedGroup &grp) : g(g), grp(grp) {}

  /// The buffer of a node input (registers constants on first use).
  Buffer input(const graph::Node &n, size_t i);
  /// The buffer of a node output (an output param or a new Allocate'd intermediate).
  Buffer output(const graph::Node &n, size_t i);
  const Shape &shapeOf(graph::ValueId v) const { return g.value(v).shape; }
  bool hasInput(const graph::Node &n, size_t i) const {
    return i < n.inputs.size() && n.inputs[i] != graph::kNoValue;
  }

  Var var(const std::string &base);
  std::vector<Var> vars(size_t rank, const std::string &base);
};

std::vector<int64_t> stridesOf(const Shape &s);
/// sum idx[d] * stride[d] (row-major over `shape`).
Expr flatIndex(const std::vector<Expr> &idx, const Shape &shape);
/// Index into `in` broadcast (numpy rules, right-aligned) to the output coordinates `outIdx`.
Expr broadcastIndex(const Shape &in, const std::vector<Expr> &outIdx);
/// for vars[0] { for vars[1] { ... body } } over `shape`.
Stmt nest(const std::vector<Var> &vars, const Shape &shape, Stmt body);

/// The statistics of a row-wise op (Softmax's max and sum, a normalisation's mean and scale):
/// `count` scalars per row, for rows indexed by `row` in [0, rows). With
/// LowerOptions::statisticsPerRow off, one buffer of `count` elements allocated inside the row
/// loops; on, one buffer of `rows` elements per statistic, a group-internal value of `c`
/// (allocated around the group's nests, as intermediates are).
struct RowStats {
  RowStats(LowerCtx &c, const std::string &name, DataType t, int count, Expr row, int64_t rows);
  Expr get(int i) const;
  Stmt set(int i, Expr v) const;
  /// The stages over the row loops `vars` (of `shape`): one nest around all of them, the
  /// statistics allocated inside; or, per row, one nest each.
  Stmt wrap(const std::vector<Var> &vars, const Shape &shape,
            const std::vector<Stmt> &stages) const;

private:
  std::vector<Buffer> bufs_;
  Expr row_;
  bool perRow_;
};
std::vector<Expr> asExprs(const std::vector<Var> &vars);
/// Normalises a possibly negative axis, failing with the node's name when out of range.
int64_t normAxis(const graph::Node &n, int64_t axis, size_t rank);

Expr f32(double v);
Expr clampIdx(Expr e, int64_t hi); // max(min(e, hi - 1), 0)

// The lowerings, one per distinct loop nest; the Lower column of graph/Ops.def names them
// without the `lower` prefix. Each returns the node's statement; an attribute it cannot express
// is a user error naming the node.
// LowerNN.cpp: convolutions, pooling, matrix products, Softmax.
Stmt lowerConv(LowerCtx &c, const graph::Node &n);
Stmt lowerConvTranspose(LowerCtx &c, const graph::Node &n);
Stmt lowerPool(LowerCtx &c, const graph::Node &n);
Stmt lowerLpPool(LowerCtx &c, const graph::Node &n);
Stmt lowerGlobalAveragePool(LowerCtx &c, const graph::Node &n);
Stmt lowerGlobalPool(LowerCtx &c, const graph::Node &n);
Stmt lowerGemm(LowerCtx &c, const graph::Node &n);
Stmt lowerMatMul(LowerCtx &c, const graph::Node &n);
Stmt lowerSoftmax(LowerCtx &c, const graph::Node &n);
// LowerMath.cpp: elementwise and broadcasting maps, reductions, normalisations, ops along an axis.
Stmt lowerArith(LowerCtx &c, const graph::Node &n);
Stmt lowerActivation(LowerCtx &c, const graph::Node &n);
Stmt lowerBatchNorm(LowerCtx &c, const graph::Node &n);
Stmt lowerMap(LowerCtx &c, const graph::Node &n);
Stmt lowerReduce(LowerCtx &c, const graph::Node &n);
Stmt lowerNormalize(LowerCtx &c, const graph::Node &n);
Stmt lowerAlongAxis(LowerCtx &c, const graph::Node &n);
Stmt lowerLRN(LowerCtx &c, const graph::Node &n);
Stmt lowerTopK(LowerCtx &c, const graph::Node &n);
// LowerData.cpp: data movement and casts.
Stmt lowerCopy(LowerCtx &c, const graph::Node &n);
Stmt lowerTranspose(LowerCtx &c, const graph::Node &n);
Stmt lowerConcat(LowerCtx &c, const graph::Node &n);
Stmt lowerSplit(LowerCtx &c, const graph::Node &n);
Stmt lowerPad(LowerCtx &c, const graph::Node &n);
Stmt lowerSlice(LowerCtx &c, const graph::Node &n);
Stmt lowerExpand(LowerCtx &c, const graph::Node &n);
Stmt lowerTile(LowerCtx &c, const graph::Node &n);
Stmt lowerResize(LowerCtx &c, const graph::Node &n);
Stmt lowerDepthToSpace(LowerCtx &c, const graph::Node &n);
Stmt lowerSpaceToDepth(LowerCtx &c, const graph::Node &n);
Stmt lowerGather(LowerCtx &c, const graph::Node &n);
Stmt lowerGatherElements(LowerCtx &c, const graph::Node &n);
Stmt lowerTrilu(LowerCtx &c, const graph::Node &n);
Stmt lowerEyeLike(LowerCtx &c, const graph::Node &n);
Stmt lowerCast(LowerCtx &c, const graph::Node &n);
// LowerIndexed.cpp: gathers and scatters by index tensors, OneHot, ReverseSequence.
Stmt lowerGatherND(LowerCtx &c, const graph::Node &n);
Stmt lowerScatterElements(LowerCtx &c, const graph::Node &n);
Stmt lowerScatterND(LowerCtx &c, const graph::Node &n);
Stmt lowerOneHot(LowerCtx &c, const graph::Node &n);
Stmt lowerReverseSequence(LowerCtx &c, const graph::Node &n);
// LowerSignal.cpp: Einsum, Det, DFT, STFT.
Stmt lowerEinsum(LowerCtx &c, const graph::Node &n);
Stmt lowerDet(LowerCtx &c, const graph::Node &n);
Stmt lowerDFT(LowerCtx &c, const graph::Node &n);
Stmt lowerSTFT(LowerCtx &c, const graph::Node &n);
// LowerRnn.cpp: the recurrent operators RNN, GRU and LSTM.
Stmt lowerRnn(LowerCtx &c, const graph::Node &n);
// LowerSample.cpp: sampling at data-given positions.
Stmt lowerMaxUnpool(LowerCtx &c, const graph::Node &n);
Stmt lowerRoiAlign(LowerCtx &c, const graph::Node &n);
Stmt lowerMaxRoiPool(LowerCtx &c, const graph::Node &n);
Stmt lowerGridSample(LowerCtx &c, const graph::Node &n);
// LowerStats.cpp: statistics over axes (MeanVarianceNormalization, the losses).
Stmt lowerMvn(LowerCtx &c, const graph::Node &n);
Stmt lowerLoss(LowerCtx &c, const graph::Node &n);
// LowerOps.cpp: operators with no run-time loop nest (folded or resolved at import).
Stmt lowerUnsupported(LowerCtx &c, const graph::Node &n);

} // namespace npuc::tir::lower
