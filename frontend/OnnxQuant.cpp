// OnnxQuant.cpp - the quantisation operators of opsets 10-17. ConvInteger and MatMulInteger stay
// nodes (exact integer kernels, graph/Quant.h); the other five become the existing operators
// that compute ONNX's formulas, so `npuc ref`, the CPU and the NPU run them as they run those:
//   QuantizeLinear         y = Cast(Clip(Round(x / scale) + zero_point, qmin, qmax))
//   DequantizeLinear       y = (Cast(x) - Cast(zero_point)) * scale
//   DynamicQuantizeLinear  ONNX's function body (scale from the range widened to hold 0, the
//                          zero point clipped and rounded), then QuantizeLinear
//   QLinearConv/MatMul     y = Cast(Clip(Round(Cast(ConvInteger|MatMulInteger (+ B)) *
//                          (x_scale * w_scale / y_scale)) + y_zero_point, qmin, qmax))
// Round halves to even, as ONNX specifies. Per-axis (per-channel, per-row, per-column) scales and
// zero points are reshaped to broadcast along their axis; constant ones fold at import.
#include "frontend/OnnxImpl.h"

#include "support/Error.h"

#include <fmt/ranges.h>

#include <optional>

namespace npuc::frontend::detail {

using graph::DType;
using graph::kNoValue;
using graph::Node;
using graph::ValueId;

namespace {

// A shape as ONNX writes it in messages: [2, 3, 4], [] for a scalar.
std::string dims(const Shape &s) {
  return fmt::format("[{}]", fmt::join(s, ", "));
}

constexpr int64_t kOnnxFloat = onnx::TensorProto::FLOAT;
// The formulas' intermediates are typed double. npuc holds and computes double in fp32, so they
// are ONNX's float32 arithmetic exactly, and the NPU backend, which keeps float tensors in fp16,
// leaves non-f32 tensors to the CPU: in fp16, x / scale could round to the wrong integer.
constexpr int64_t kOnnxDouble = onnx::TensorProto::DOUBLE;

struct Quant {
  Importer &im;
  const Node &n;

  graph::Graph &g() { return im.g; }
  ValueId in(size_t i) const { return i < n.inputs.size() ? n.inputs[i] : kNoValue; }
  const Shape &shape(ValueId v) { return g().value(v).shape; }
  DType type(ValueId v) { return g().value(v).dtype; }
  std::string name(const std::string &what) const { return n.name + "_" + what; }

  ValueId emit(OpKind k, const std::string &what, std::vector<ValueId> ins,
               std::map<std::string, graph::AttrValue> attrs = {}, ValueId out = kNoValue) {
    return emitNode(im, k, name(what), std::move(ins), std::move(attrs), out);
  }
  // `v` as an intermediate of the formulas (double, see kOnnxDouble).
  ValueId toCalc(ValueId v, const std::string &what) {
    return type(v) == DType::F64 ? v : emit(OpKind::Cast, what, {v}, {{"to", kOnnxDouble}});
  }
  ValueId scalar(const std::string &what, float v) {
    return g().addConstant(n.name + "." + what, {}, {v}, DType::F64);
  }
  // A 1-D per-axis operand [E] as [E, 1, ...] (rank - axis - 1 ones): it broadcasts along `axis`
  // of a rank-`rank` tensor. Per-tensor (one element) operands are kept.
  ValueId alongAxis(ValueId v, int64_t axis, size_t rank, const std::string &what) {
    if (v == kNoValue || numElements(shape(v)) == 1)
      return v;
    Shape s{shape(v)[0]};
    s.resize(rank - static_cast<size_t>(axis), 1);
    ValueId dims =
        g().addConstantI64(n.name + "." + what + "_shape", {static_cast<int64_t>(s.size())}, s);
    return emit(OpKind::Reshape, what + "_along_axis", {v, dims});
  }

  // Input i must be float32 (a scale).
  void requireFloat(size_t i, const char *what) {
    if (type(in(i)) != DType::F32)
      fail("{}: input {} ({}) is {}; it must be float32", where(n), i, what,
           dtypeName(type(in(i))));
  }
  // Input i (a scale or zero point) is one value or, when perAxis > 0, a 1-D tensor of that
  // many (`along` says what they are per).
  void requireCount(size_t i, const char *what, int64_t perAxis, const std::string &along) {
    const Shape &s = shape(in(i));
    if (numElements(s) == 1 && s.size() <= 1)
      return;
    if (perAxis > 0 && s == Shape{perAxis})
      return;
    if (perAxis > 0)
      fail("{}: input {} ({}) has shape {}; it must be a scalar or [{}] ({})", where(n), i, what,
           dims(s), perAxis, along);
    fail("{}: input {} ({}) has shape {}; it must be a scalar", where(n), i, what, dims(s));
  }
  // A zero point of a quantized (8-bit) tensor: uint8 or int8 (`want`, when given, exactly).
  void requireQuantType(size_t i, const char *what, std::optional<DType> want = std::nullopt) {
    DType t = type(in(i));
    if (want && t != *want)
      fail("{}: input {} ({}) is {} but the quantized tensor it belongs to is {}; they must have "
           "one type",
           where(n), i, what, dtypeName(t), dtypeName(*want));
    if (t != DType::U8 && t != DType::I8)
      fail("{}: input {} ({}) is {}; it must be uint8 or int8", where(n), i, what, dtypeName(t));
  }

  // Round, add the zero point, saturate to `t`'s range and convert: the tail of every quantizer.
  ValueId requantize(ValueId real, ValueId zpFloat, DType t, ValueId out) {
    ValueId r = emit(OpKind::Round, "round", {real});
    if (zpFloat != kNoValue)
      r = emit(OpKind::Add, "add_zero_point", {r, zpFloat});
    const bool s8 = t == DType::I8;
    ValueId c = emit(OpKind::Clip, "saturate", {r},
                     {{"min", s8 ? -128.0 : 0.0}, {"max", s8 ? 127.0 : 255.0}});
    return emit(OpKind::Cast, "cast", {c}, {{"to", graph::onnxDTypeCode(t)}}, out);
  }

  // The axis per-axis parameters of input i follow: `axis` of x, checked only when they are
  // per-axis (a scalar input has no axis).
  int64_t paramAxis(ValueId x, size_t i) {
    if (numElements(shape(in(i))) == 1 && shape(in(i)).size() <= 1)
      return 0;
    return normaliseAxis(n, n.attrInt("axis", 1), shape(x).size());
  }
  // QuantizeLinear's and DequantizeLinear's scale (input 1) and zero point (input 2).
  int64_t checkLinearParams(ValueId x) {
    requireFloat(1, n.kind == OpKind::QuantizeLinear ? "y_scale" : "x_scale");
    const int64_t axis = paramAxis(x, 1);
    const char *zpName = n.kind == OpKind::QuantizeLinear ? "y_zero_point" : "x_zero_point";
    const int64_t extent = shape(x).empty() ? 0 : shape(x)[static_cast<size_t>(axis)];
    const std::string along =
        fmt::format("one per element along axis {} of input 0, shape {}", axis, dims(shape(x)));
    requireCount(1, n.kind == OpKind::QuantizeLinear ? "y_scale" : "x_scale", extent, along);
    if (in(2) != kNoValue && numElements(shape(in(2))) != numElements(shape(in(1))))
      fail("{}: input 2 ({}) has shape {} but the scale has shape {}; they must match", where(n),
           zpName, dims(shape(in(2))), dims(shape(in(1))));
    return axis;
  }

  ValueId quantizeLinear(ValueId x, ValueId scale, ValueId zp, DType t, ValueId out) {
    ValueId q =
        emit(OpKind::Div, "div_scale", {toCalc(x, "x_float"), toCalc(scale, "scale_float")});
    return requantize(q, zp == kNoValue ? kNoValue : toCalc(zp, "zero_point_float"), t, out);
  }
};

void importQuantizeLinear(Quant &q, const std::vector<ValueId> &declared) {
  const ValueId x = q.in(0);
  if (q.type(x) != DType::F32 && q.type(x) != DType::I32)
    fail("{}: input 0 (x) is {}; it must be float32 or int32", where(q.n), dtypeName(q.type(x)));
  const int64_t axis = q.checkLinearParams(x);
  DType t = DType::U8; // no zero point: uint8
  if (q.in(2) != kNoValue) {
    q.requireQuantType(2, "y_zero_point");
    t = q.type(q.in(2));
  }
  const size_t r = q.shape(x).size();
  ValueId scale = q.alongAxis(q.in(1), axis, r, "scale");
  ValueId zp = q.alongAxis(q.in(2), axis, r, "zero_point");
  q.quantizeLinear(x, scale, zp, t, declared.at(0));
}

void importDequantizeLinear(Quant &q, const std::vector<ValueId> &declared) {
  const ValueId x = q.in(0);
  const DType t = q.type(x);
  if (t != DType::U8 && t != DType::I8 && t != DType::I32)
    fail("{}: input 0 (x) is {}; it must be uint8, int8 or int32", where(q.n), dtypeName(t));
  const int64_t axis = q.checkLinearParams(x);
  if (q.in(2) != kNoValue && q.type(q.in(2)) != t)
    fail("{}: input 2 (x_zero_point) is {} but input 0 (x) is {}; they must have one type",
         where(q.n), dtypeName(q.type(q.in(2))), dtypeName(t));
  const size_t r = q.shape(x).size();
  ValueId v = q.toCalc(x, "x_float");
  if (q.in(2) != kNoValue)
    v = q.emit(OpKind::Sub, "sub_zero_point",
               {v, q.toCalc(q.alongAxis(q.in(2), axis, r, "zero_point"), "zero_point_float")});
  v = q.emit(OpKind::Mul, "mul_scale",
             {v, q.toCalc(q.alongAxis(q.in(1), axis, r, "scale"), "scale_float")});
  q.emit(OpKind::Cast, "cast", {v}, {{"to", kOnnxFloat}}, declared.at(0));
}

// ONNX's function body of DynamicQuantizeLinear (opset 11), node for node.
void importDynamicQuantizeLinear(Quant &q, const std::vector<ValueId> &declared) {
  const ValueId x = q.in(0);
  if (q.type(x) != DType::F32)
    fail("{}: input 0 (x) is {}; it must be float32", where(q.n), dtypeName(q.type(x)));
  std::vector<int64_t> axes(q.shape(x).size());
  for (size_t i = 0; i < axes.size(); ++i)
    axes[i] = static_cast<int64_t>(i);
  std::map<std::string, graph::AttrValue> all{{"axes", axes}, {"keepdims", int64_t{0}}};
  const ValueId qmin = q.scalar("q_min", 0.0f), qmax = q.scalar("q_max", 255.0f);
  const ValueId xd = q.toCalc(x, "x_float");
  ValueId mn =
      q.emit(OpKind::Min, "min_adjusted", {q.emit(OpKind::ReduceMin, "min", {xd}, all), qmin});
  ValueId mx =
      q.emit(OpKind::Max, "max_adjusted", {q.emit(OpKind::ReduceMax, "max", {xd}, all), qmin});
  ValueId range = q.emit(OpKind::Sub, "range", {mx, mn});
  ValueId scale = q.emit(OpKind::Div, "scale", {range, qmax});
  q.emit(OpKind::Cast, "y_scale", {scale}, {{"to", kOnnxFloat}}, declared.at(1));
  ValueId minScaled = q.emit(OpKind::Div, "min_scaled", {mn, scale});
  ValueId zp0 = q.emit(OpKind::Sub, "initial_zero_point", {qmin, minScaled});
  ValueId zpc = q.emit(OpKind::Clip, "clipped_zero_point", {zp0}, {{"min", 0.0}, {"max", 255.0}});
  ValueId zpr = q.emit(OpKind::Round, "rounded_zero_point", {zpc});
  ValueId zp = q.emit(OpKind::Cast, "zero_point", {zpr}, {{"to", graph::onnxDTypeCode(DType::U8)}},
                      declared.size() > 2 ? declared[2] : kNoValue);
  q.quantizeLinear(xd, scale, zp, DType::U8, declared.at(0));
}

// The tail shared by QLinearConv and QLinearMatMul: acc (int32) * in_scale * w_scale / y_scale,
// requantized with y's zero point. `axis`/`rank` place a per-channel or per-row scale.
void qlinearTail(Quant &q, ValueId acc, ValueId inScale, ValueId wScale, ValueId yScale,
                 ValueId yZp, ValueId out) {
  ValueId mult =
      q.emit(OpKind::Div, "multiplier",
             {q.emit(OpKind::Mul, "scale_product",
                     {q.toCalc(inScale, "in_scale_float"), q.toCalc(wScale, "w_scale_float")}),
              q.toCalc(yScale, "y_scale_float")});
  ValueId real = q.emit(OpKind::Mul, "rescale", {q.toCalc(acc, "acc_float"), mult});
  q.requantize(real, q.toCalc(yZp, "y_zero_point_float"), q.type(q.n.inputs.at(7)), out);
}

void importQLinearConv(Quant &q, const std::vector<ValueId> &declared) {
  const ValueId x = q.in(0), w = q.in(3);
  const Shape &ws = q.shape(w);
  if (ws.empty())
    fail("{}: input 3 (w) must have an output channel axis", where(q.n));
  const int64_t M = ws[0];
  q.requireQuantType(0, "x");
  q.requireQuantType(2, "x_zero_point", q.type(x));
  q.requireQuantType(3, "w");
  q.requireQuantType(5, "w_zero_point", q.type(w));
  q.requireQuantType(7, "y_zero_point");
  for (size_t i : {1, 4, 6})
    q.requireFloat(i, i == 1 ? "x_scale" : i == 4 ? "w_scale" : "y_scale");
  q.requireCount(1, "x_scale", 0, "");
  q.requireCount(4, "w_scale", M, "one per output channel");
  q.requireCount(6, "y_scale", 0, "");
  q.requireCount(7, "y_zero_point", 0, "");
  Node conv;
  conv.kind = OpKind::ConvInteger;
  conv.name = q.n.name;
  conv.inputs = {x, w, q.in(2), q.in(5)};
  conv.attrs = q.n.attrs;
  normaliseWindow(q.im, conv);
  ValueId acc = q.emit(OpKind::ConvInteger, "conv_integer", conv.inputs, conv.attrs);
  const size_t rank = q.shape(acc).size();
  if (ValueId b = q.in(8); b != kNoValue) {
    if (q.type(b) != DType::I32 || q.shape(b) != Shape{M})
      fail("{}: input 8 (B) is {} of shape {}; it must be int32 of shape [{}]", where(q.n),
           dtypeName(q.type(b)), dims(q.shape(b)), M);
    acc = q.emit(OpKind::Add, "add_bias", {acc, q.alongAxis(b, 1, rank, "bias")});
  }
  qlinearTail(q, acc, q.in(1), q.alongAxis(q.in(4), 1, rank, "w_scale"), q.in(6), q.in(7),
              declared.at(0));
}

void importQLinearMatMul(Quant &q, const std::vector<ValueId> &declared) {
  const ValueId a = q.in(0), b = q.in(3);
  q.requireQuantType(0, "a");
  q.requireQuantType(2, "a_zero_point", q.type(a));
  q.requireQuantType(3, "b");
  q.requireQuantType(5, "b_zero_point", q.type(b));
  q.requireQuantType(7, "y_zero_point");
  for (size_t i : {1, 4, 6})
    q.requireFloat(i, i == 1 ? "a_scale" : i == 4 ? "b_scale" : "y_scale");
  ValueId acc = q.emit(OpKind::MatMulInteger, "matmul_integer", {a, b, q.in(2), q.in(5)});
  const Shape &out = q.shape(acc);
  const int64_t M = out[out.size() - 2], N = out.back();
  q.requireCount(1, "a_scale", M, "one per row of a");
  q.requireCount(4, "b_scale", N, "one per column of b");
  q.requireCount(6, "y_scale", M, "one per row of y");
  q.requireCount(7, "y_zero_point", M, "one per row of y");
  const size_t rank = out.size();
  qlinearTail(q, acc, q.alongAxis(q.in(1), static_cast<int64_t>(rank) - 2, rank, "a_scale"),
              q.in(4), q.alongAxis(q.in(6), static_cast<int64_t>(rank) - 2, rank, "y_scale"),
              q.alongAxis(q.in(7), static_cast<int64_t>(rank) - 2, rank, "y_zero_point"),
              declared.at(0));
}

} // namespace

bool importQuant(Importer &im, const Node &n, const onnx::NodeProto &p,
                 const std::vector<ValueId> &declared) {
  Quant q{im, n};
  switch (n.kind) {
  case OpKind::ConvInteger: {
    Node conv = n;
    normaliseWindow(im, conv);
    emitNode(im, OpKind::ConvInteger, n.name, conv.inputs, conv.attrs, declared.at(0));
    break;
  }
  case OpKind::MatMulInteger:
    emitNode(im, OpKind::MatMulInteger, n.name, n.inputs, {}, declared.at(0));
    break;
  case OpKind::QuantizeLinear:
    importQuantizeLinear(q, declared);
    break;
  case OpKind::DequantizeLinear:
    importDequantizeLinear(q, declared);
    break;
  case OpKind::DynamicQuantizeLinear:
    importDynamicQuantizeLinear(q, declared);
    break;
  case OpKind::QLinearConv:
    importQLinearConv(q, declared);
    break;
  case OpKind::QLinearMatMul:
    importQLinearMatMul(q, declared);
    break;
  default:
    return false;
  }
  for (size_t i = 0; i < declared.size(); ++i)
    if (!p.output(static_cast<int>(i)).empty())
      im.names[p.output(static_cast<int>(i))] = declared[i];
  return true;
}

} // namespace npuc::frontend::detail
