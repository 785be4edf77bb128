// Plan.cpp - recognising a fused group as one of the NPU's kernel shapes (see Plan.h): which
// kernel kind the group is, pooling and Concat parameters, and the entry points. The tensor
// unit's operands and the fused epilogue are PlanTensorUnit.cpp's and PlanEpilogue.cpp's
// (GroupAnalysis.h).
#include "npu/kernels/Plan.h"

#include "npu/kernels/GroupAnalysis.h"

#include "graph/Rnn.h"

#include "support/Error.h"

#include <algorithm>

namespace npuc::npu {

using graph::Graph;
using graph::Node;
using graph::Value;
using graph::ValueId;

std::vector<float> ConvParams::weightsOCFirst() const {
  if (!weightsCOC)
    return *weights;
  NPUC_ASSERT(KH == 1 && KW == 1 && G == 1, "a [C][OC] weight matrix is a 1x1 ungrouped conv's");
  std::vector<float> w(weights->size());
  for (int64_t oc = 0; oc < OC; ++oc)
    for (int64_t ic = 0; ic < C; ++ic)
      w[static_cast<size_t>(oc * C + ic)] = weight(oc, ic, 0, 0);
  return w;
}

bool isNhwc(const Value &v) {
  return dramLayoutOf(v) == DramLayout::NHWC;
}

namespace analysis {

namespace {

int64_t channelAxis(const Shape &s) {
  return s.size() == 4 ? 1 : static_cast<int64_t>(s.size()) - 1;
}

} // namespace

int64_t channelsOf(const Shape &s) {
  if (s.empty())
    return 1;
  return s[static_cast<size_t>(channelAxis(s))];
}

// How a tensor of shape `s` broadcasts to `out` in the NPU layout: 1 when every element of
// `out` reads its one value, C when the channel axis is its only dim above 1 (one value per
// channel, stored contiguously whatever the layout), 0 when the broadcast needs more than that.
int64_t channelBroadcast(const Shape &s, const Shape &out) {
  if (s.size() > out.size())
    return 0;
  size_t off = out.size() - s.size();
  int64_t cax = channelAxis(out);
  bool perChannel = false;
  for (size_t i = 0; i < s.size(); ++i) {
    int64_t a = static_cast<int64_t>(i + off);
    if (s[i] == 1)
      continue;
    if (a == cax && s[i] == out[static_cast<size_t>(a)])
      perChannel = true;
    else
      return 0;
  }
  return perChannel ? out[static_cast<size_t>(cax)] : 1;
}

// A constant that broadcasts to `out` along the channel axis only: returns 1 value (scalar) or
// C values; empty when the broadcast needs more than a per-channel vector.
std::vector<float> channelConstant(const Value &c, const Shape &out) {
  if (!c.f32)
    return {};
  int64_t n = channelBroadcast(c.shape, out);
  if (n == 0)
    return {};
  if (n == 1)
    return {(*c.f32)[0]};
  return *c.f32; // every other dim is 1, so the data is the C values in order
}

bool GroupAnalysis::needOp(isa::VecOp op, const Node &n) {
  if (hw.vectorHas(op))
    return true;
  return reject(n.name + " (" + graph::opName(n.kind) + "): the target's vector unit has no '" +
                isa::vecOpName(op) + "' op");
}

void GroupAnalysis::run() {
  if (grp.outputs.size() != 1) {
    reject(grp.name + ": a group with " + std::to_string(grp.outputs.size()) +
           " outputs cannot run on the NPU");
    return;
  }
  p.output = grp.outputs[0];
  const Value &out = val(p.output);
  p.channels = channelsOf(out.shape);
  p.elements = numElements(out.shape);
  const Node &a = g.node(grp.anchor);
  // A group of layout ops only: a zero-copy view when its transforms cancel against the
  // layouts at both ends, else a copy the loop-nest kernel runs (npu/hw/DramLayout.h).
  if (LayoutChain lc = analyzeLayoutChain(g, grp); lc.layoutOnly && !constant(lc.input)) {
    p.kind = KernelKind::View;
    p.input = lc.input;
    p.layout = lc;
    if (!lc.cancels)
      reject(a.name + " (" + graph::opName(a.kind) + "): " + lc.describe);
    return;
  }
  if (a.kind == graph::OpKind::Concat) {
    p.kind = KernelKind::Concat;
    if (grp.nodes.size() != 1)
      reject(a.name + " (Concat): the NPU runs a Concat only as a group of its own");
    else
      concat(a);
    return;
  }
  size_t first = 1; // the anchor's node is the first of the chain (an elementwise anchor: 0)
  if (anchorKernel(a, first))
    fuseChain(a, first);
}

// The kernel kind the anchor node makes the group, and its parameters; false (with the reason)
// when no hand-written kernel takes it. `first` becomes 0 when the anchor is elementwise: it is
// then the chain's first op, applied to the streamed input.
bool GroupAnalysis::anchorKernel(const Node &a, size_t &first) {
  bool ok = true;
  if (a.kind == graph::OpKind::Conv) {
    p.kind = KernelKind::Matmul;
    ok = conv(a);
  } else if (a.kind == graph::OpKind::Gemm) {
    p.kind = KernelKind::Matmul;
    ok = gemm(a);
  } else if (a.kind == graph::OpKind::MatMul) {
    p.kind = KernelKind::Matmul;
    ok = matmul(a);
  } else if (a.kind == graph::OpKind::MaxPool || a.kind == graph::OpKind::AveragePool) {
    p.kind = KernelKind::Pool;
    ok = pool(a);
  } else if (a.kind == graph::OpKind::GlobalAveragePool) {
    p.kind = KernelKind::GlobalAvgPool;
    if (val(a.inputs[0]).shape.size() != 4)
      ok = reject(a.name + " (GlobalAveragePool): only 4-D inputs run on the NPU");
    ok = ok && needOp(isa::VecOp::Add, a) && needOp(isa::VecOp::Mul, a);
    p.input = a.inputs[0];
  } else if (!graph::isElementwiseOp(a.kind)) {
    std::string why = a.name + " (" + graph::opName(a.kind) +
                      "): the NPU backend has no kernel for " + graph::opName(a.kind);
    if ((a.kind == graph::OpKind::Softmax || a.kind == graph::OpKind::LogSoftmax) &&
        !hw.vectorHas(isa::VecOp::Exp))
      why += ", and the target's vector unit has no 'exp' op";
    return reject(why);
  } else {
    p.kind = KernelKind::Eltwise;
    first = 0;
    // The streamed input: the first non-constant input with the output's shape.
    for (ValueId v : a.inputs)
      if (v != graph::kNoValue && !constant(v) && val(v).shape == val(a.outputs[0]).shape) {
        p.input = v;
        break;
      }
    if (p.input == graph::kNoValue)
      ok = reject(a.name + " (" + graph::opName(a.kind) +
                  "): no input with the output's shape to stream");
  }
  return ok;
}

// The nodes after the anchor (an elementwise anchor included) as its epilogue, in order; the
// chain must end at the group's output.
void GroupAnalysis::fuseChain(const Node &a, size_t first) {
  const Value &out = val(p.output);
  ValueId cur = grp.nodes.front() == grp.anchor && first == 0 ? p.input : a.outputs[0];
  // The streamed input is read again from its tensor (a residual), not saved.
  if (cur != p.input)
    chainAt[cur] = 0;
  for (size_t i = 0; i < grp.nodes.size(); ++i) {
    const Node &n = g.node(grp.nodes[i]);
    if ((n.id == grp.anchor && first == 1) || folded.count(n.id))
      continue;
    if (n.kind == graph::OpKind::Softmax && p.kind == KernelKind::BatchMatmul) {
      attention(n, cur, i);
      return;
    }
    if (!epilogue(n, cur))
      return;
    cur = n.outputs[0];
    chainAt[cur] = p.epilogue.size();
  }
  if (cur != p.output)
    reject(grp.name + ": the group's output is not the end of its op chain");
  // The epilogue indexes per-channel operands by the tile's columns (the last axis), which is
  // the channel axis of the NPU layout except for a 4-D (NHWC) output, whose channel is axis 1.
  if (p.kind == KernelKind::BatchMatmul && out.shape != val(a.outputs[0]).shape)
    reject(grp.name + ": the epilogue broadcasts the batched MatMul's result to another shape");
  if (p.kind == KernelKind::BatchMatmul && out.shape.size() == 4)
    for (const EpilogueOp &e : p.epilogue)
      if (e.constant.size() > 1 || e.count > 1)
        reject(grp.name + ": a per-channel epilogue operand of a 4-D batched MatMul output is "
                          "not supported on the NPU (scalars and same-shape tensors are)");
}

// Concat as copies in the NPU layout (see ConcatParams): the concatenated axis splits the
// output's physical dims into outer x (axis x inner).
bool GroupAnalysis::concat(const Node &n) {
  const Value &y = val(n.outputs[0]);
  if (y.dtype != graph::DType::F32)
    return reject(n.name + " (Concat): only float tensors are concatenated on the NPU (its fp16 "
                           "storage would round integer values)");
  const int64_t rank = static_cast<int64_t>(y.shape.size());
  int64_t axis = n.attrInt("axis", 0);
  if (axis < 0)
    axis += rank;
  NPUC_ASSERT(axis >= 0 && axis < rank, "shape inference checked Concat's axis");
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i)
    perm[static_cast<size_t>(i)] = i;
  if (isNhwc(y))
    perm = {0, 2, 3, 1}; // physical order of the logical N, C, H, W axes
  ConcatParams &c = p.concat;
  int64_t inner = 1;
  bool after = false;
  c.outer = 1;
  for (int64_t a : perm) {
    if (a == axis)
      after = true;
    else
      (after ? inner : c.outer) *= y.shape[static_cast<size_t>(a)];
  }
  int64_t col = 0;
  for (ValueId v : n.inputs) {
    if (v == graph::kNoValue)
      continue;
    int64_t ext = val(v).shape[static_cast<size_t>(axis)];
    c.parts.push_back({v, ext * inner, col * inner});
    col += ext;
  }
  NPUC_ASSERT(col == y.shape[static_cast<size_t>(axis)],
              "shape inference made Concat's output the sum of its inputs along the axis");
  c.outRow = col * inner;
  p.input = c.parts.empty() ? graph::kNoValue : c.parts.front().value;
  return true;
}

bool GroupAnalysis::pool(const Node &n) {
  const Value &x = val(n.inputs[0]);
  const Value &y = val(n.outputs[0]);
  if (x.shape.size() != 4)
    return reject(n.name + " (" + graph::opName(n.kind) + "): only 2-D pooling runs on the NPU");
  PoolParams &q = p.pool;
  q.isMax = n.kind == graph::OpKind::MaxPool;
  if (!needOp(q.isMax ? isa::VecOp::Max : isa::VecOp::Add, n) ||
      (!q.isMax && !needOp(isa::VecOp::Mul, n)))
    return false;
  auto dl = n.attrInts("dilations", {1, 1});
  if (dl[0] != 1 || dl[1] != 1)
    return reject(n.name + " (" + graph::opName(n.kind) +
                  "): dilated pooling is not supported on the NPU");
  if (n.outputs.size() > 1 && n.outputs[1] != graph::kNoValue)
    return reject(n.name + " (MaxPool): the Indices output is not supported on the NPU");
  auto ks = n.attrInts("kernel_shape");
  auto st = n.attrInts("strides", {1, 1});
  auto pads = n.attrInts("pads", {0, 0, 0, 0});
  if (n.attrString("auto_pad", "NOTSET") != "NOTSET")
    return reject(n.name + " (" + graph::opName(n.kind) +
                  "): auto_pad is not supported on the NPU");
  q.N = x.shape[0];
  q.C = x.shape[1];
  q.H = x.shape[2];
  q.W = x.shape[3];
  q.OH = y.shape[2];
  q.OW = y.shape[3];
  q.KH = ks.at(0);
  q.KW = ks.at(1);
  q.SH = st[0];
  q.SW = st[1];
  q.padT = pads[0];
  q.padL = pads[1];
  if (!q.isMax) {
    bool includePad = n.attrInt("count_include_pad", 0) != 0;
    int64_t padB = pads[2], padR = pads[3];
    q.divisor.resize(static_cast<size_t>(q.OH * q.OW));
    for (int64_t oy = 0; oy < q.OH; ++oy)
      for (int64_t ox = 0; ox < q.OW; ++ox) {
        int64_t h0 = oy * q.SH - q.padT, w0 = ox * q.SW - q.padL;
        int64_t h1 = std::min(h0 + q.KH, q.H + padB), w1 = std::min(w0 + q.KW, q.W + padR);
        int64_t cnt;
        if (includePad)
          cnt = (h1 - h0) * (w1 - w0);
        else
          cnt = (std::min(h1, q.H) - std::max<int64_t>(h0, 0)) *
                (std::min(w1, q.W) - std::max<int64_t>(w0, 0));
        q.divisor[static_cast<size_t>(oy * q.OW + ox)] =
            1.0f / static_cast<float>(std::max<int64_t>(cnt, 1));
      }
  }
  p.input = n.inputs[0];
  return true;
}

} // namespace analysis

void setOperandStrides(const Shape &y, const Shape &s, const std::vector<int64_t> &st,
                       BatchMatmulParams::Operand &o) {
  const size_t nb = y.size() - 2; // output batch dims, right-aligned into batch[2]
  o.row = st[s.size() - 2];
  o.col = st[s.size() - 1];
  for (size_t j = 0; j < nb; ++j) {
    int64_t dim = static_cast<int64_t>(j) - static_cast<int64_t>(y.size() - s.size());
    if (dim >= 0 && s[static_cast<size_t>(dim)] != 1)
      o.batch[2 - nb + j] = st[static_cast<size_t>(dim)];
  }
}

float QuantParams::of(ValueId v) const {
  auto it = tensors.find(v);
  if (it != tensors.end())
    return it->second;
  NPUC_ASSERT(!calibrated, "a calibrated plan has the scale of every tensor operand");
  return 1.0f;
}

GroupPlan analyzeGroup(const Graph &g, const graph::FusedGroup &grp, const Hw &hw) {
  analysis::GroupAnalysis a{g, grp, hw, {}, {}, {}, {}};
  a.run();
  if (hw.quantised() && a.p.reject.empty())
    a.p.reject = int8Reject(g, a.p, grp);
  return a.p;
}

GroupPlan planGroup(const Graph &g, const graph::FusedGroup &grp, const Hw &hw) {
  GroupPlan p = analyzeGroup(g, grp, hw);
  for (graph::NodeId id : grp.nodes)
    for (const std::vector<ValueId> *vs : {&g.node(id).inputs, &g.node(id).outputs})
      for (ValueId v : *vs)
        if (v != graph::kNoValue && numElements(g.value(v).shape) == 0) {
          // A Slice past the end leaves an axis empty: no work, and no DRAM or L1 to place it in.
          p.reject = fmt::format("the empty tensor '{}' ({}): nothing for the NPU to do",
                                 g.value(v).name, shapeToString(g.value(v).shape));
          return p;
        }
  if (p.reject.empty() || hw.quantised()) // the loop-nest kernel computes in fp16 only
    return p;
  if (const graph::Node &a = g.node(grp.anchor); graph::isRecurrentOp(a.kind)) {
    // The time loop carries the state through every step: fp16 storage would round it at
    // each one, and the nest is sequential, not the vector unit's shape of work.
    p.reject += "; recurrent operators (RNN, GRU, LSTM) run on the CPU: the time loop carries "
                "the hidden state from step to step";
    return p;
  }
  return loopNestPlan(grp, std::move(p.reject));
}

GroupPlan loopNestPlan(const graph::FusedGroup &grp, std::string handReject) {
  GroupPlan ln;
  ln.kind = KernelKind::LoopNest;
  ln.group = &grp;
  ln.handReject = std::move(handReject);
  return ln;
}

} // namespace npuc::npu
