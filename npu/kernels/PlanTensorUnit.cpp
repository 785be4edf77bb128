// PlanTensorUnit.cpp - Conv, Gemm and MatMul groups: the tensor unit's operands. A Conv or a
// product with a constant right operand becomes ConvParams (an implicit GEMM; a matrix product is
// the 1x1 convolution of a 1 x M image); a MatMul of two activations becomes BatchMatmulParams,
// its operands read through element strides so that Transposes in the group fold into the loads.
#include "npu/kernels/GroupAnalysis.h"

#include "support/Error.h"

#include <algorithm>
#include <memory>

namespace npuc::npu::analysis {

using graph::Graph;
using graph::Node;
using graph::Value;
using graph::ValueId;

namespace {

// Element strides of a tensor's logical dims in its DRAM layout (npu/hw/DramLayout.h).
std::vector<int64_t> layoutStrides(const Value &v) {
  return npu::layoutStrides(v.shape, dramLayoutOf(v));
}

} // namespace

bool GroupAnalysis::conv(const Node &n) {
  const Value &x = val(n.inputs[0]);
  const Value &y = val(n.outputs[0]);
  if (x.shape.size() != 4)
    return reject(n.name + " (Conv): only 2-D convolutions (4-D tensors) run on the NPU");
  if (!constant(n.inputs[1]))
    return reject(n.name + " (Conv): weights are not constant");
  ConvParams &c = p.conv;
  const Value &w = val(n.inputs[1]);
  c.N = x.shape[0];
  c.C = x.shape[1];
  c.H = x.shape[2];
  c.W = x.shape[3];
  c.OC = y.shape[1];
  c.OH = y.shape[2];
  c.OW = y.shape[3];
  c.KH = w.shape[2];
  c.KW = w.shape[3];
  c.G = n.attrInt("group", 1);
  auto st = n.attrInts("strides", {1, 1});
  auto dl = n.attrInts("dilations", {1, 1});
  auto pads = n.attrInts("pads", {0, 0, 0, 0});
  c.SH = st[0];
  c.SW = st[1];
  c.DH = dl[0];
  c.DW = dl[1];
  c.padT = pads[0];
  c.padL = pads[1];
  std::string ap = n.attrString("auto_pad", "NOTSET");
  if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    int64_t th = std::max<int64_t>(0, (c.OH - 1) * c.SH + (c.KH - 1) * c.DH + 1 - c.H);
    int64_t tw = std::max<int64_t>(0, (c.OW - 1) * c.SW + (c.KW - 1) * c.DW + 1 - c.W);
    c.padT = ap == "SAME_UPPER" ? th / 2 : th - th / 2;
    c.padL = ap == "SAME_UPPER" ? tw / 2 : tw - tw / 2;
  } else if (ap == "VALID") {
    c.padT = c.padL = 0;
  }
  c.weights = w.f32; // shared with the graph's constant: no copy
  if (n.inputs.size() > 2 && n.inputs[2] != graph::kNoValue) {
    if (!constant(n.inputs[2]))
      return reject(n.name + " (Conv): bias is not constant");
    c.bias = *val(n.inputs[2]).f32;
  }
  p.depthwise = c.G == c.C && c.OC == c.C;
  p.input = n.inputs[0];
  return true;
}

// A matrix product [M,K] x [K,N] as the 1x1 convolution of an [M, 1] image (M rows of one
// pixel) with K channels, its weights [N, K] (w[o * K + i]: output column o, input column i),
// shared, not copied. Row-major [M,K] and the NHWC image are the same bytes. The conv kernels tile
// whole output rows, so one-pixel rows let a tile take any number of the M rows: ViT's 197 tokens
// (a prime) or GPT-2's 128 split into row tiles whose input fits L1 beside the weights, which
// rows-outer order (TensorUnit.h `rowouter`) then loads once. Rows of several pixels would only
// coarsen the tiles.
void GroupAnalysis::asMatrixProduct(int64_t M, int64_t K, int64_t N,
                                    std::shared_ptr<const std::vector<float>> w) {
  ConvParams &c = p.conv;
  c.H = c.OH = M;
  c.W = c.OW = 1;
  c.C = K;
  c.OC = N;
  c.weights = std::move(w);
}

// The same with w(o, i) the weight of output column o for input column i.
template <typename W> void GroupAnalysis::asMatrixProduct(int64_t M, int64_t K, int64_t N, W w) {
  auto weights = std::make_shared<std::vector<float>>(static_cast<size_t>(N * K), 0.f);
  for (int64_t o = 0; o < N; ++o)
    for (int64_t i = 0; i < K; ++i)
      (*weights)[static_cast<size_t>(o * K + i)] = w(o, i);
  asMatrixProduct(M, K, N, std::shared_ptr<const std::vector<float>>(std::move(weights)));
}

bool GroupAnalysis::gemm(const Node &n) {
  const Value &a = val(n.inputs[0]);
  if (n.attrInt("transA", 0) != 0)
    return reject(n.name + " (Gemm): transA=1 is not supported on the NPU");
  if (!constant(n.inputs[1]))
    return reject(n.name + " (Gemm): B is not constant");
  const Value &b = val(n.inputs[1]);
  bool tb = n.attrInt("transB", 0) != 0;
  float alpha = static_cast<float>(n.attrFloat("alpha", 1.0));
  float beta = static_cast<float>(n.attrFloat("beta", 1.0));
  int64_t M = a.shape[0], K = a.shape[1], N = tb ? b.shape[0] : b.shape[1];
  // B with alpha 1 is a weight layout itself ([OC][C] transposed, as exporters write Linear
  // layers, else [C][OC]): kept shared, since the placement and fusion dry runs analyse each
  // group again (VGG-11's first Linear has 103 M weights).
  if (alpha == 1.f) {
    asMatrixProduct(M, K, N, std::shared_ptr<const std::vector<float>>(b.f32));
    p.conv.weightsCOC = !tb;
  } else
    asMatrixProduct(M, K, N, [&](int64_t o, int64_t i) {
      return alpha * (*b.f32)[static_cast<size_t>(tb ? o * K + i : i * N + o)];
    });
  ConvParams &c = p.conv;
  if (n.inputs.size() > 2 && n.inputs[2] != graph::kNoValue) {
    if (!constant(n.inputs[2]))
      return reject(n.name + " (Gemm): C is not constant");
    std::vector<float> cv = channelConstant(val(n.inputs[2]), {M, N});
    if (cv.empty())
      return reject(n.name + " (Gemm): C must broadcast per output column");
    c.bias.assign(static_cast<size_t>(N), 0.f);
    for (int64_t o = 0; o < N; ++o)
      c.bias[static_cast<size_t>(o)] = beta * cv[cv.size() == 1 ? 0 : static_cast<size_t>(o)];
  }
  p.input = n.inputs[0];
  return true;
}

// The DRAM tensor an operand is read from and the element stride of each of the operand's
// dims: a Transpose in the group whose only consumer is `user` permutes its input's strides
// (recursively), anything else is read row-major from its own DRAM tensor.
std::pair<ValueId, std::vector<int64_t>> GroupAnalysis::stridedView(ValueId v, graph::NodeId user) {
  const Shape &s = val(v).shape;
  graph::NodeId prod = val(v).producer;
  bool inGroup =
      prod >= 0 && std::find(grp.nodes.begin(), grp.nodes.end(), prod) != grp.nodes.end();
  auto users = g.consumers(v);
  if (inGroup && g.node(prod).kind == graph::OpKind::Transpose && users.size() == 1 &&
      users[0] == user && !g.isGraphOutput(v)) {
    const Node &t = g.node(prod);
    auto [src, in] = stridedView(t.inputs[0], prod);
    std::vector<int64_t> perm = t.attrInts("perm", {});
    if (perm.empty()) // ONNX default: reverse the axes
      for (size_t i = s.size(); i-- > 0;)
        perm.push_back(static_cast<int64_t>(i));
    std::vector<int64_t> st(s.size());
    for (size_t i = 0; i < s.size(); ++i)
      st[i] = in[static_cast<size_t>(perm[i])];
    folded.insert(prod);
    return {src, st};
  }
  return {v, layoutStrides(val(v))};
}

// MatMul of two activations, or of an activation and a constant the implicit GEMM does not take
// (a constant left operand, a batched constant right one), as Plan.h BatchMatmulParams. A
// constant operand is read row-major from bytes the kernel places (LowerBatchMatmul.cpp).
bool GroupAnalysis::batchMatmul(const Node &n) {
  const Shape &y = val(n.outputs[0]).shape;
  if (constant(n.inputs[0]) && constant(n.inputs[1]))
    return reject(n.name + " (MatMul): both operands are constant (constant folding's work)");
  const size_t ra = val(n.inputs[0]).shape.size(), rb = val(n.inputs[1]).shape.size();
  if (ra < 2 || rb < 2 || y.size() > 4)
    return reject(n.name + " (MatMul): the NPU multiplies activations of rank 2 to 4 only");
  BatchMatmulParams &m = p.bmm;
  m.M = y[y.size() - 2];
  m.N = y[y.size() - 1];
  m.K = val(n.inputs[0]).shape[ra - 1];
  const size_t nb = y.size() - 2; // output batch dims, right-aligned into batch[2]
  for (size_t j = 0; j < nb; ++j)
    m.batch[2 - nb + j] = y[j];
  auto strides = [&](ValueId v, const std::vector<int64_t> &st, BatchMatmulParams::Operand &o) {
    setOperandStrides(y, val(v).shape, st, o);
  };
  auto operand = [&](ValueId v, BatchMatmulParams::Operand &o) {
    if (constant(v))
      return plainOperand(v, y, o);
    auto [src, st] = stridedView(v, n.id);
    o.value = src;
    strides(v, st, o);
    return true;
  };
  if (!operand(n.inputs[0], m.a) || !operand(n.inputs[1], m.b))
    return reject(n.name + " (MatMul): an integer constant operand");
  for (ValueId v : {m.a.value, m.b.value})
    if (!constant(v) && std::find(grp.inputs.begin(), grp.inputs.end(), v) == grp.inputs.end())
      return reject(n.name + " (MatMul): operand " + val(v).name +
                    " is computed inside the group; the kernel reads its operands from DRAM");
  // The group's output has the MatMul's shape (the epilogue is elementwise on it).
  m.y.value = p.output;
  strides(n.outputs[0], layoutStrides(val(n.outputs[0])), m.y);
  m.folded = static_cast<int>(folded.size());
  p.kind = KernelKind::BatchMatmul;
  p.input = constant(m.a.value) ? m.b.value : m.a.value; // the activation operand
  return true;
}

bool GroupAnalysis::attention(const Node &sm, ValueId scores, size_t at) {
  const Shape &s = val(scores).shape;
  const std::string what = sm.name + " (Softmax)";
  if (hw.quantised())
    return reject(what + ": int8 targets run attention as separate groups (no quantised kernel "
                         "keeps the scores on chip)");
  const int64_t rank = static_cast<int64_t>(s.size());
  int64_t axis = sm.attrInt("axis", -1);
  if (axis < 0)
    axis += rank;
  if (sm.inputs[0] != scores || axis != rank - 1)
    return reject(what + ": fused attention takes Softmax of the scores along their last axis");
  if (s != val(g.node(grp.anchor).outputs[0]).shape)
    return reject(grp.name +
                  ": the epilogue broadcasts the batched MatMul's result to another shape");
  for (const EpilogueOp &e : p.epilogue)
    if (rank == 4 && (e.constant.size() > 1 || e.count > 1))
      return reject(grp.name + ": a per-channel epilogue operand of 4-D attention scores is not "
                               "supported on the NPU (scalars and same-shape tensors are)");
  for (isa::VecOp op : {isa::VecOp::Copy, isa::VecOp::Max, isa::VecOp::Sub, isa::VecOp::Exp,
                        isa::VecOp::Add, isa::VecOp::Div})
    if (!needOp(op, sm))
      return false;
  if (at + 2 != grp.nodes.size())
    return reject(what + ": in an attention group, the product of the probabilities must be the "
                         "last node");
  const Node &mm = g.node(grp.nodes[at + 1]);
  if (mm.kind != graph::OpKind::MatMul || mm.inputs[0] != sm.outputs[0] ||
      mm.outputs[0] != p.output)
    return reject(what + ": in an attention group, the probabilities must be the left operand of "
                         "the group's last node, a MatMul");
  const Shape &y = val(p.output).shape;
  const size_t r = y.size();
  if (r != s.size() || y[r - 2] != s[r - 2] || !std::equal(s.begin(), s.end() - 2, y.begin()))
    return reject(mm.name + " (MatMul): the second product of an attention group must keep the "
                            "scores' batch dims and rows");
  AttentionParams &q = p.attn;
  q.scores = scores;
  q.probs = sm.outputs[0];
  q.pv.batch[0] = p.bmm.batch[0];
  q.pv.batch[1] = p.bmm.batch[1];
  q.pv.M = p.bmm.M;
  q.pv.K = s.back();
  q.pv.N = y.back();
  const ValueId v = mm.inputs[1];
  if (constant(v)) {
    if (!plainOperand(v, y, q.pv.b))
      return reject(mm.name + " (MatMul): an integer constant operand");
  } else {
    auto [src, st] = stridedView(v, mm.id);
    if (std::find(grp.inputs.begin(), grp.inputs.end(), src) == grp.inputs.end())
      return reject(mm.name + " (MatMul): operand " + val(src).name +
                    " is computed inside the group; the kernel reads its operands from DRAM");
    q.pv.b.value = src;
    setOperandStrides(y, val(v).shape, st, q.pv.b);
  }
  q.pv.y.value = p.output;
  setOperandStrides(y, y, layoutStrides(val(p.output)), q.pv.y);
  q.pv.folded = static_cast<int>(folded.size()) - p.bmm.folded;
  // The scores live on chip; bmm.y keeps their DRAM layout's strides, through which a residual
  // of their shape (a mask) is read.
  p.bmm.y.value = scores;
  p.kind = KernelKind::Attention;
  return true;
}

bool GroupAnalysis::plainOperand(ValueId v, const Shape &y, BatchMatmulParams::Operand &o) const {
  const Value &x = val(v);
  std::vector<int64_t> st;
  if (x.isConstant()) {
    if (!x.f32)
      return false;
    st.assign(x.shape.size(), 1);
    for (size_t i = x.shape.size(); i-- > 1;)
      st[i - 1] = st[i] * x.shape[i];
  } else {
    st = layoutStrides(x);
  }
  o.value = v;
  setOperandStrides(y, x.shape, st, o);
  return true;
}

bool GroupAnalysis::batchResidual(ValueId other, const Shape &out, EpilogueOp &e) {
  if (p.kind != KernelKind::BatchMatmul)
    return false;
  const Shape &s = val(other).shape;
  const size_t r = s.size(), ro = out.size();
  if (r < 2 || r > ro || s[r - 2] != out[ro - 2] || s[r - 1] != out[ro - 1])
    return false;
  for (size_t i = 0; i + 2 < r; ++i)
    if (s[i] != 1 && s[i] != out[i + ro - r])
      return false;
  BatchMatmulParams::Operand o;
  if (!plainOperand(other, out, o))
    return false;
  p.bmm.residuals[other] = o;
  e.operand = EpilogueOp::Operand::Tensor;
  e.tensor = other;
  return true;
}

bool GroupAnalysis::matmul(const Node &n) {
  const Value &a = val(n.inputs[0]);
  // The implicit GEMM takes a constant matrix right of a 2-D or 3-D activation (rows of the
  // output contiguous); a batched constant, a constant left operand or a 4-D left operand (whose
  // output is NHWC in DRAM) go to the batched product, which reads through strides.
  if (!constant(n.inputs[1]) || val(n.inputs[1]).shape.size() != 2 || a.shape.size() < 2 ||
      a.shape.size() == 4)
    return batchMatmul(n);
  const Value &b = val(n.inputs[1]);
  int64_t K = b.shape[0], N = b.shape[1];
  int64_t M = numElements(a.shape) / K;
  // B [K, N] is the [C][OC] weight layout itself: shared, not transposed into a copy (planning
  // analyses each group several times: fusion, placement and the segment's dry runs).
  asMatrixProduct(M, K, N, std::shared_ptr<const std::vector<float>>(b.f32));
  p.conv.weightsCOC = true;
  p.input = n.inputs[0];
  return true;
}

} // namespace npuc::npu::analysis
