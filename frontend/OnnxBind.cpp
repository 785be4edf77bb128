// OnnxBind.cpp - `--bind NAME=FILE.npy`: a graph input becomes a constant initializer holding the
// file's data before import (TVM's freeze_params), so that operands which set output shapes
// (Reshape's shape, Resize's sizes, ...) may come from graph inputs in this static-shape compiler.
#include "frontend/OnnxImpl.h"

#include "support/Error.h"

#include <algorithm>

namespace npuc::frontend::detail {

namespace {

using TP = onnx::TensorProto;

// The ONNX element type of a .npy dtype descr ('<i8', '|b1', 'float32', ...), or UNDEFINED.
TP::DataType onnxType(std::string descr) {
  static const std::pair<const char *, TP::DataType> table[] = {
      {"<f4", TP::FLOAT},   {"float32", TP::FLOAT},   {"<f8", TP::DOUBLE}, {"float64", TP::DOUBLE},
      {"<f2", TP::FLOAT16}, {"float16", TP::FLOAT16}, {"<i8", TP::INT64},  {"int64", TP::INT64},
      {"<i4", TP::INT32},   {"int32", TP::INT32},     {"<i2", TP::INT16},  {"int16", TP::INT16},
      {"|i1", TP::INT8},    {"int8", TP::INT8},       {"|u1", TP::UINT8},  {"uint8", TP::UINT8},
      {"<u2", TP::UINT16},  {"<u4", TP::UINT32},      {"<u8", TP::UINT64}, {"|b1", TP::BOOL},
      {"bool", TP::BOOL}};
  if (!descr.empty() && descr[0] == '=') // native byte order: npuc runs little endian
    descr[0] = '<';
  for (const auto &[d, t] : table)
    if (descr == d)
      return t;
  return TP::UNDEFINED;
}

std::string typeName(int t) {
  return TP::DataType_Name(static_cast<TP::DataType>(t));
}

// The input's declared shape, dynamic dimensions as '?'.
std::string declared(const onnx::TensorShapeProto &s) {
  std::string out;
  for (const auto &d : s.dim()) {
    if (!out.empty())
      out += 'x';
    out += d.has_dim_value() && d.dim_value() > 0 ? std::to_string(d.dim_value()) : "?";
  }
  return out.empty() ? "scalar" : out;
}

void bindOne(onnx::GraphProto &gp, int index, const NpyArray &a) {
  const onnx::ValueInfoProto &in = gp.input(index);
  const std::string arg = fmt::format("--bind {}={}", in.name(), a.path);
  if (!in.type().has_tensor_type())
    fail("{}: input '{}' is not a tensor", arg, in.name());
  const onnx::TypeProto::Tensor &tt = in.type().tensor_type();
  TP::DataType t = onnxType(a.descr);
  if (t != tt.elem_type())
    fail("{}: input '{}' is {} in the model, the file holds {} ('{}')", arg, in.name(),
         typeName(tt.elem_type()), t == TP::UNDEFINED ? "an unsupported dtype" : typeName(t),
         a.descr);
  if (tt.has_shape()) {
    const auto &dims = tt.shape().dim();
    bool ok = dims.size() == static_cast<int>(a.shape.size());
    for (int i = 0; ok && i < dims.size(); ++i)
      ok = !(dims[i].has_dim_value() && dims[i].dim_value() > 0) ||
           dims[i].dim_value() == a.shape[static_cast<size_t>(i)];
    if (!ok)
      fail("{}: the file's shape {} does not match input '{}' ({})", arg, shapeToString(a.shape),
           in.name(), declared(tt.shape()));
  }
  TP *init = gp.add_initializer();
  init->set_name(in.name());
  init->set_data_type(t);
  for (int64_t d : a.shape)
    init->add_dims(d);
  init->set_raw_data(a.bytes); // .npy data is little endian and C order, as ONNX's raw_data
  gp.mutable_input()->DeleteSubrange(index, 1);
}

} // namespace

void bindInputs(onnx::ModelProto &m, const std::map<std::string, NpyArray> &bound,
                const std::map<std::string, Shape> &pinned) {
  onnx::GraphProto &gp = *m.mutable_graph();
  for (const auto &[name, a] : bound) {
    if (pinned.count(name))
      fail("--bind {}={}: input '{}' is also pinned with --input-shape; a bound input has the "
           "file's shape",
           name, a.path, name);
    auto isInit = [&](const onnx::TensorProto &t) { return t.name() == name; };
    if (std::any_of(gp.initializer().begin(), gp.initializer().end(), isInit))
      fail("--bind {}={}: '{}' is an initializer of the model, not an input", name, a.path, name);
    int index = -1;
    std::string inputs;
    for (int i = 0; i < gp.input_size(); ++i) {
      if (gp.input(i).name() == name)
        index = i;
      inputs += (inputs.empty() ? "'" : ", '") + gp.input(i).name() + "'";
    }
    if (index < 0)
      fail("--bind {}={}: the model has no input '{}' (its inputs: {})", name, a.path, name,
           inputs.empty() ? "none" : inputs);
    bindOne(gp, index, a);
  }
}

} // namespace npuc::frontend::detail
