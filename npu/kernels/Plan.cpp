// Plan.cpp - recognising a fused group as one of the NPU's kernel shapes (see Plan.h).
#include "npu/kernels/Plan.h"

#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace npuc::npu {

using graph::Graph;
using graph::Node;
using graph::Value;
using graph::ValueId;

bool isNhwc(const Value &v) {
  return dramLayoutOf(v) == DramLayout::NHWC;
}

namespace {

int64_t channelAxis(const Shape &s) {
  return s.size() == 4 ? 1 : static_cast<int64_t>(s.size()) - 1;
}

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

// The vector op of a binary elementwise graph op, or none when the NPU has none.
std::optional<isa::VecOp> binaryVectorOp(graph::OpKind k) {
  switch (k) {
  case graph::OpKind::Add:
    return isa::VecOp::Add;
  case graph::OpKind::Sub:
    return isa::VecOp::Sub;
  case graph::OpKind::Mul:
    return isa::VecOp::Mul;
  case graph::OpKind::Div:
    return isa::VecOp::Div;
  case graph::OpKind::Max:
    return isa::VecOp::Max;
  case graph::OpKind::Min:
    return isa::VecOp::Min;
  default:
    return std::nullopt;
  }
}

struct Analyzer {
  const Graph &g;
  const graph::FusedGroup &grp;
  const Hw &hw;
  GroupPlan p;

  bool reject(std::string why) {
    if (p.reject.empty())
      p.reject = std::move(why);
    return false;
  }
  const Value &val(ValueId v) { return g.value(v); }
  bool constant(ValueId v) { return v != graph::kNoValue && val(v).isConstant(); }
  bool needOp(isa::VecOp op, const Node &n) {
    if (hw.vectorHas(op))
      return true;
    return reject(n.name + " (" + graph::opName(n.kind) + "): the target's vector unit has no '" +
                  isa::vecOpName(op) + "' op");
  }

  bool conv(const Node &n) {
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
    c.weights = *w.f32;
    if (n.inputs.size() > 2 && n.inputs[2] != graph::kNoValue) {
      if (!constant(n.inputs[2]))
        return reject(n.name + " (Conv): bias is not constant");
      c.bias = *val(n.inputs[2]).f32;
    }
    p.depthwise = c.G == c.C && c.OC == c.C;
    p.input = n.inputs[0];
    return true;
  }

  // A matrix product [M,K] x [K,N] as the 1x1 convolution of an [1,1,M,K] image; w(o, i) is
  // the weight of output column o for input column i.
  template <typename W> void asMatrixProduct(int64_t M, int64_t K, int64_t N, W w) {
    ConvParams &c = p.conv;
    c.W = c.OW = M;
    c.C = K;
    c.OC = N;
    c.weights.assign(static_cast<size_t>(N * K), 0.f);
    for (int64_t o = 0; o < N; ++o)
      for (int64_t i = 0; i < K; ++i)
        c.weights[static_cast<size_t>(o * K + i)] = w(o, i);
  }

  bool gemm(const Node &n) {
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

  // Transposes of the group that feed the batched MatMul's operands, read through strides.
  std::set<graph::NodeId> folded;

  // The DRAM tensor an operand is read from and the element stride of each of the operand's
  // dims: a Transpose in the group whose only consumer is `user` permutes its input's strides
  // (recursively), anything else is read row-major from its own DRAM tensor.
  std::pair<ValueId, std::vector<int64_t>> stridedView(ValueId v, graph::NodeId user) {
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

  // Element strides of a tensor's logical dims in its DRAM layout (npu/hw/DramLayout.h).
  static std::vector<int64_t> layoutStrides(const Value &v) {
    return npu::layoutStrides(v.shape, dramLayoutOf(v));
  }

  // MatMul of two activations (Plan.h BatchMatmulParams).
  bool batchMatmul(const Node &n) {
    const Shape &y = val(n.outputs[0]).shape;
    if (constant(n.inputs[0]) || constant(n.inputs[1]))
      return reject(n.name + " (MatMul): a batched product with a constant operand is not "
                             "supported on the NPU (only a constant 2-D right operand is)");
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
      auto [src, st] = stridedView(v, n.id);
      o.value = src;
      strides(v, st, o);
    };
    operand(n.inputs[0], m.a);
    operand(n.inputs[1], m.b);
    for (ValueId v : {m.a.value, m.b.value})
      if (std::find(grp.inputs.begin(), grp.inputs.end(), v) == grp.inputs.end())
        return reject(n.name + " (MatMul): operand " + val(v).name +
                      " is computed inside the group; the kernel reads its operands from DRAM");
    // The group's output has the MatMul's shape (the epilogue is elementwise on it).
    m.y.value = p.output;
    strides(n.outputs[0], layoutStrides(val(n.outputs[0])), m.y);
    m.folded = static_cast<int>(folded.size());
    p.kind = KernelKind::BatchMatmul;
    p.input = m.a.value;
    return true;
  }

  bool matmul(const Node &n) {
    const Value &a = val(n.inputs[0]);
    if (!constant(n.inputs[1]))
      return batchMatmul(n);
    if (val(n.inputs[1]).shape.size() != 2)
      return reject(n.name + " (MatMul): the right operand must be a constant matrix");
    if (a.shape.size() < 2 || a.shape.size() == 4)
      return reject(n.name + " (MatMul): the left operand must be 2-D or 3-D");
    const Value &b = val(n.inputs[1]);
    int64_t K = b.shape[0], N = b.shape[1];
    int64_t M = numElements(a.shape) / K;
    asMatrixProduct(M, K, N,
                    [&](int64_t o, int64_t i) { return (*b.f32)[static_cast<size_t>(i * N + o)]; });
    p.input = n.inputs[0];
    return true;
  }

  // Concat as copies in the NPU layout (see ConcatParams): the concatenated axis splits the
  // output's physical dims into outer x (axis x inner).
  bool concat(const Node &n) {
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

  bool pool(const Node &n) {
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

  // One elementwise node applied to the chain value `cur`; appends to the epilogue.
  bool epilogue(const Node &n, ValueId cur) {
    EpilogueOp e;
    const Shape &out = val(n.outputs[0]).shape;
    auto unary = [&](isa::VecOp op) {
      if (!needOp(op, n))
        return false;
      e.op = op;
      p.epilogue.push_back(e);
      return true;
    };
    if (n.kind == graph::OpKind::Relu)
      return unary(isa::VecOp::Relu);
    if (n.kind == graph::OpKind::Sigmoid)
      return unary(isa::VecOp::Sigmoid);
    if (n.kind == graph::OpKind::Tanh)
      return unary(isa::VecOp::Tanh);
    if (n.kind == graph::OpKind::Exp)
      return unary(isa::VecOp::Exp);
    if (n.kind == graph::OpKind::Clip) {
      float lo = -std::numeric_limits<float>::infinity(), hi = -lo;
      if (n.hasAttr("min"))
        lo = static_cast<float>(n.attrFloat("min", lo));
      if (n.hasAttr("max"))
        hi = static_cast<float>(n.attrFloat("max", hi));
      for (size_t i = 1; i < n.inputs.size() && i < 3; ++i) {
        if (n.inputs[i] == graph::kNoValue)
          continue;
        if (!constant(n.inputs[i]))
          return reject(n.name + " (Clip): bounds must be constant");
        (i == 1 ? lo : hi) = (*val(n.inputs[i]).f32)[0];
      }
      if (!needOp(isa::VecOp::Clip, n))
        return false;
      e.op = isa::VecOp::Clip;
      e.imm0 = lo;
      e.imm1 = hi;
      p.epilogue.push_back(e);
      return true;
    }
    const std::optional<isa::VecOp> vop = binaryVectorOp(n.kind);
    if (!vop || n.inputs.size() != 2)
      return reject(n.name + " (" + graph::opName(n.kind) +
                    "): not an elementwise op the NPU runs");
    bool curFirst = n.inputs[0] == cur;
    ValueId other = curFirst ? n.inputs[1] : n.inputs[0];
    e.operandFirst = !curFirst;
    e.op = *vop;
    if (constant(other)) {
      e.operand = EpilogueOp::Operand::Const;
      e.constant = channelConstant(val(other), out);
      if (e.constant.empty())
        return reject(n.name + " (" + graph::opName(n.kind) + "): constant operand " +
                      val(other).name + " broadcasts beyond a per-channel vector");
      if (e.op == isa::VecOp::Div && !e.operandFirst) { // x / c == x * (1/c), exactly as the CPU would round
        e.op = isa::VecOp::Mul;
        for (float &v : e.constant)
          v = 1.0f / v;
      }
    } else {
      // The chain value is the streamed tile, so it must have the output's shape; the other
      // operand is a residual of the same shape or a per-channel/scalar tensor (an SE gate).
      if (val(cur).shape != out)
        return reject(n.name + " (" + graph::opName(n.kind) + "): the chain value " +
                      val(cur).name + " is broadcast to the output's shape");
      e.tensor = other;
      if (val(other).shape == out) {
        e.operand = EpilogueOp::Operand::Tensor;
      } else if (int64_t count = channelBroadcast(val(other).shape, out); count > 0) {
        e.operand = EpilogueOp::Operand::Broadcast;
        e.count = count;
      } else {
        return reject(n.name + " (" + graph::opName(n.kind) + "): tensor operand " +
                      val(other).name + " broadcasts beyond a per-channel vector");
      }
    }
    return needOp(e.op, n) && (p.epilogue.push_back(e), true);
  }

  void run() {
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
    bool ok = true;
    size_t first = 1;
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
      reject(why);
      return;
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
    if (!ok)
      return;
    ValueId cur = grp.nodes.front() == grp.anchor && first == 0 ? p.input : a.outputs[0];
    for (size_t i = 0; i < grp.nodes.size(); ++i) {
      const Node &n = g.node(grp.nodes[i]);
      if ((n.id == grp.anchor && first == 1) || folded.count(n.id))
        continue;
      if (!epilogue(n, cur))
        return;
      cur = n.outputs[0];
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
};

} // namespace

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
  Analyzer a{g, grp, hw, {}, {}};
  a.run();
  if (hw.quantised() && a.p.reject.empty())
    a.p.reject = int8Reject(g, a.p, grp);
  return a.p;
}

GroupPlan planGroup(const Graph &g, const graph::FusedGroup &grp, const Hw &hw) {
  GroupPlan p = analyzeGroup(g, grp, hw);
  if (p.reject.empty() || hw.quantised()) // the loop-nest kernel computes in fp16 only
    return p;
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
