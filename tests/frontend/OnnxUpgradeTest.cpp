// OnnxUpgradeTest.cpp - models below opset 9 through ONNX's version converter (what it cannot
// adapt is an error naming the step and the operator), run-time operands (Clip's bounds, Pad's
// constant_value) and the error for operands that must be constants, and --bind (graph inputs
// made constants before import), on models built with the ONNX protobuf API.
#include "frontend/Onnx.h"
#include "graph/Reference.h"
#include "support/Error.h"
#include "support/File.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

using namespace npuc;

namespace {

using TP = onnx::TensorProto;

// A model of the given opset with float inputs of the given shapes.
onnx::ModelProto model(int64_t opset, const std::vector<std::pair<std::string, Shape>> &inputs,
                       int elemType = TP::FLOAT) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  auto *op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  m.mutable_graph()->set_name("t");
  for (const auto &[name, shape] : inputs) {
    auto *in = m.mutable_graph()->add_input();
    in->set_name(name);
    auto *tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(name == "shape" ? elemType : TP::FLOAT);
    tt->mutable_shape();
    for (int64_t d : shape)
      tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  return m;
}

onnx::NodeProto *node(onnx::ModelProto &m, const std::string &op, const std::string &name,
                      std::vector<std::string> ins, const std::string &out) {
  auto *n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto &i : ins)
    n->add_input(i);
  n->add_output(out);
  return n;
}

void intAttr(onnx::NodeProto *n, const std::string &name, int64_t v) {
  auto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void output(onnx::ModelProto &m, const std::string &name) {
  m.mutable_graph()->add_output()->set_name(name);
  m.mutable_graph()
      ->mutable_output()
      ->rbegin()
      ->mutable_type()
      ->mutable_tensor_type()
      ->set_elem_type(TP::FLOAT);
}

void floatInit(onnx::ModelProto &m, const std::string &name, const Shape &dims,
               const std::vector<float> &v) {
  auto *t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(TP::FLOAT);
  for (int64_t d : dims)
    t->add_dims(d);
  for (float f : v)
    t->add_float_data(f);
}

class Upgrade : public ::testing::Test {
protected:
  std::string path_ = (std::filesystem::temp_directory_path() /
                       ("npuc_upgrade_" + std::to_string(::getpid()) + ".onnx"))
                          .string();
  void TearDown() override { std::filesystem::remove(path_); }

  const std::string &save(const onnx::ModelProto &m) {
    std::string bytes;
    EXPECT_TRUE(m.SerializeToString(&bytes));
    writeFileAtomic(path_, bytes);
    return path_;
  }
  std::string error(const onnx::ModelProto &m, const frontend::ImportOptions &o = {}) {
    try {
      frontend::importOnnx(save(m), o);
    } catch (const Error &e) {
      return e.what();
    }
    return "";
  }
};

bool has(const std::string &s, const std::string &sub) {
  return s.find(sub) != std::string::npos;
}

// Runs the reference on one input and returns the single output.
HostTensor runRef(const graph::Graph &g, std::map<std::string, HostTensor> named) {
  std::map<graph::ValueId, HostTensor> in;
  for (auto &[name, t] : named)
    in[*g.findValue(name)] = std::move(t);
  return graph::runReference(g, in).at(g.outputs.at(0));
}

TEST_F(Upgrade, CastWithStringTypeHasNoAdapter) {
  // Cast-1 names its type as a string ("FLOAT"); ONNX 1.12 has no adapter to Cast-6.
  onnx::ModelProto m = model(1, {{"x", {2}}});
  auto *n = node(m, "Cast", "c", {"x"}, "y");
  auto *a = n->add_attribute();
  a->set_name("to");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("FLOAT");
  output(m, "y");
  std::string e = error(m);
  EXPECT_TRUE(has(e, "opset 1 is converted to opset 13 with ONNX's version converter, which fails "
                     "at step 5 -> 6 (Cast change there): No Adapter From Version $5 for Cast"))
      << e;
}

TEST_F(Upgrade, BatchNormSpatialZeroNamesStepAndAttribute) {
  onnx::ModelProto m = model(7, {{"x", {1, 2, 3, 3}}});
  auto *n = node(m, "BatchNormalization", "bn", {"x", "s", "b", "m", "v"}, "y");
  intAttr(n, "spatial", 0);
  for (const char *p : {"s", "b", "m", "v"})
    floatInit(m, p, {2}, {1, 1});
  output(m, "y");
  std::string e = error(m);
  EXPECT_TRUE(has(e, "step 8 -> 9 (BatchNormalization change there): Attribute spatial must have "
                     "value 1"))
      << e;
}

TEST_F(Upgrade, MissingLegacyAttributeIsNamed) {
  onnx::ModelProto m = model(4, {{"x", {2, 3}}});
  node(m, "Reshape", "r", {"x"}, "y");
  output(m, "y");
  EXPECT_TRUE(has(error(m), "which fails at step 4 -> 5 (Reshape change there): required "
                            "undefined attribute 'shape'"))
      << error(m);
}

TEST_F(Upgrade, UnknownOperatorIsNamedBeforeConversion) {
  onnx::ModelProto m = model(7, {{"x", {2}}});
  node(m, "Frobnicate", "f", {"x"}, "y");
  output(m, "y");
  std::string e = error(m);
  EXPECT_TRUE(has(e, "node 'f' (Frobnicate): unsupported operator (ONNX defines no Frobnicate at "
                     "opset 7)"))
      << e;
}

// ONNX 1.12's converter crashes on a graph output nothing defines; it is checked before.
TEST_F(Upgrade, UndefinedValuesAreNamedBeforeConversion) {
  onnx::ModelProto m = model(7, {{"x", {2}}});
  node(m, "Relu", "r", {"x"}, "z");
  output(m, "y");
  EXPECT_TRUE(has(error(m), "graph output: input 'y' is not defined by any earlier node, "
                            "initializer or graph input"))
      << error(m);
  onnx::ModelProto n = model(7, {{"x", {2}}});
  node(n, "Relu", "r", {"nope"}, "y");
  output(n, "y");
  EXPECT_TRUE(has(error(n), "node 'r' (Relu): input 'nope' is not defined by any earlier node"))
      << error(n);
}

TEST_F(Upgrade, LegacyBroadcastAxisOutOfRange) {
  onnx::ModelProto m = model(6, {{"x", {2, 3}}});
  auto *n = node(m, "Add", "add", {"x", "b"}, "y");
  intAttr(n, "broadcast", 1);
  intAttr(n, "axis", 1);
  floatInit(m, "b", {2, 3}, {1, 2, 3, 4, 5, 6});
  output(m, "y");
  EXPECT_TRUE(has(error(m), "node 'add' (Add): attribute axis=1 cannot align a rank-2 B with a "
                            "rank-2 A"))
      << error(m);
}

// Add-6 with broadcast=1, axis=1: B (3) is aligned with A's channel axis. ONNX 1.12's adapter
// alone fails on this; the values are A + B[c] per channel, hand-computed.
TEST_F(Upgrade, LegacyBroadcastAxisIsAligned) {
  onnx::ModelProto m = model(6, {{"x", {1, 3, 1, 2}}});
  auto *n = node(m, "Add", "add", {"x", "b"}, "y");
  intAttr(n, "broadcast", 1);
  intAttr(n, "axis", 1);
  floatInit(m, "b", {3}, {10, 20, 30});
  output(m, "y");
  graph::Graph g = frontend::importOnnx(save(m));
  HostTensor y = runRef(g, {{"x", HostTensor({1, 3, 1, 2}, {1, 2, 3, 4, 5, 6})}});
  EXPECT_EQ(y.shape, (Shape{1, 3, 1, 2}));
  EXPECT_EQ(y.data, (std::vector<float>{11, 12, 23, 24, 35, 36}));
}

TEST_F(Upgrade, RuntimeClipBoundsAreMaxAndMin) {
  onnx::ModelProto m = model(13, {{"x", {4}}, {"lo", {}}, {"hi", {}}});
  node(m, "Clip", "c", {"x", "lo", "hi"}, "y");
  output(m, "y");
  graph::Graph g = frontend::importOnnx(save(m));
  HostTensor y = runRef(g, {{"x", HostTensor({4}, {-3, -0.25f, 0.5f, 3})},
                            {"lo", HostTensor({}, {-1})},
                            {"hi", HostTensor({}, {1})}});
  EXPECT_EQ(y.data, (std::vector<float>{-1, -0.25f, 0.5f, 1}));
  // min > max: numpy.clip gives max everywhere.
  y = runRef(g, {{"x", HostTensor({4}, {-3, -0.25f, 0.5f, 3})},
                 {"lo", HostTensor({}, {2})},
                 {"hi", HostTensor({}, {1})}});
  EXPECT_EQ(y.data, (std::vector<float>{1, 1, 1, 1}));
}

TEST_F(Upgrade, RuntimePadValue) {
  onnx::ModelProto m = model(13, {{"x", {2}}, {"v", {}}});
  node(m, "Pad", "p", {"x", "pads", "v"}, "y");
  auto *t = m.mutable_graph()->add_initializer();
  t->set_name("pads");
  t->set_data_type(TP::INT64);
  t->add_dims(2);
  t->add_int64_data(1);
  t->add_int64_data(2);
  output(m, "y");
  graph::Graph g = frontend::importOnnx(save(m));
  HostTensor y = runRef(g, {{"x", HostTensor({2}, {1, 2})}, {"v", HostTensor({}, {-7})}});
  EXPECT_EQ(y.data, (std::vector<float>{-7, 1, 2, -7, -7}));
  m.mutable_graph()
      ->mutable_input(1)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->add_dim()
      ->set_dim_value(2);
  EXPECT_TRUE(has(error(m), "node 'p' (Pad): constant_value must be a scalar, got shape 2"))
      << error(m);
}

TEST_F(Upgrade, ShapeOperandFromGraphInputSuggestsBind) {
  onnx::ModelProto m = model(13, {{"x", {4}}});
  node(m, "Slice", "sl", {"x", "x", "x"}, "y");
  output(m, "y");
  EXPECT_TRUE(has(error(m), "node 'sl' (Slice): starts (input 1) sets the output shape, and npuc "
                            "compiles static shapes: it must be a constant, but it is graph input "
                            "'x'; pin it with --bind x=FILE.npy"))
      << error(m);
}

TEST_F(Upgrade, ShapeOperandComputedAtRunTimeNamesProducerAndInputs) {
  onnx::ModelProto m = model(13, {{"x", {4}}, {"s", {2}}});
  node(m, "Abs", "abs", {"s"}, "r");
  node(m, "Resize", "rs", {"x", "", "r"}, "y");
  output(m, "y");
  EXPECT_TRUE(has(error(m), "node 'rs' (Resize): scales (input 2) sets the output shape, and npuc "
                            "compiles static shapes: it must be a constant, but it is computed at "
                            "run time by node 'abs' (Abs); pin the graph inputs it comes from "
                            "with --bind s=FILE.npy"))
      << error(m);
}

TEST_F(Upgrade, RangeOperandsSetTheShape) {
  onnx::ModelProto m = model(13, {{"x", {}}});
  node(m, "Range", "rg", {"x", "x", "x"}, "y");
  output(m, "y");
  EXPECT_TRUE(has(error(m), "node 'rg' (Range): start (input 0) sets the output shape, and npuc "
                            "compiles static shapes: it must be a constant, but it is graph input "
                            "'x'; pin it with --bind x=FILE.npy"))
      << error(m);
}

TEST_F(Upgrade, ParameterOperandSaysCompileTime) {
  onnx::ModelProto m = model(14, {{"x", {4}}, {"a", {}}});
  node(m, "CumSum", "cs", {"x", "a"}, "y");
  output(m, "y");
  EXPECT_TRUE(has(error(m), "node 'cs' (CumSum): axis (input 1) is read at compile time: it must "
                            "be a constant, but it is graph input 'a'; pin it with --bind "
                            "a=FILE.npy"))
      << error(m);
}

NpyArray int64Array(const Shape &shape, const std::vector<int64_t> &v, const char *descr = "<i8") {
  NpyArray a;
  a.path = "shape.npy";
  a.descr = descr;
  a.shape = shape;
  a.bytes.resize(v.size() * sizeof(int64_t));
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

// Reshape whose shape is an int64 graph input: bound, it is a constant and the model imports.
onnx::ModelProto reshapeModel() {
  onnx::ModelProto m = model(13, {{"x", {2, 3}}, {"shape", {2}}}, TP::INT64);
  node(m, "Reshape", "r", {"x", "shape"}, "y");
  output(m, "y");
  return m;
}

TEST_F(Upgrade, BindMakesAnInputAConstant) {
  frontend::ImportOptions o;
  o.bound["shape"] = int64Array({2}, {3, -1});
  graph::Graph g = frontend::importOnnx(save(reshapeModel()), o);
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.value(g.outputs.at(0)).shape, (Shape{3, 2}));
}

TEST_F(Upgrade, BindErrors) {
  frontend::ImportOptions unknown;
  unknown.bound["nope"] = int64Array({2}, {3, 2});
  EXPECT_TRUE(has(error(reshapeModel(), unknown), "--bind nope=shape.npy: the model has no input "
                                                  "'nope' (its inputs: 'x', 'shape')"))
      << error(reshapeModel(), unknown);
  frontend::ImportOptions dtype;
  dtype.bound["shape"] = int64Array({2}, {3, 2}, "<i4");
  dtype.bound["shape"].bytes.resize(8);
  EXPECT_TRUE(has(error(reshapeModel(), dtype),
                  "--bind shape=shape.npy: input 'shape' is INT64 in the model, the file holds "
                  "INT32 ('<i4')"))
      << error(reshapeModel(), dtype);
  frontend::ImportOptions shape;
  shape.bound["shape"] = int64Array({3}, {3, 2, 1});
  EXPECT_TRUE(has(error(reshapeModel(), shape),
                  "--bind shape=shape.npy: the file's shape 3 does not match input 'shape' (2)"))
      << error(reshapeModel(), shape);
  frontend::ImportOptions pinned(std::map<std::string, Shape>{{"shape", {2}}});
  pinned.bound["shape"] = int64Array({2}, {3, 2});
  EXPECT_TRUE(has(error(reshapeModel(), pinned), "input 'shape' is also pinned with --input-shape"))
      << error(reshapeModel(), pinned);
}

} // namespace

// Found by the fuzz_Onnx campaign: the legacy-broadcast alignment looked up input 1 of every
// node whose input 0 it had found a rank for, and it found one for a one-input node through an
// initializer named "" (protobuf's CHECK on input(1) then terminated the process). Only binary
// nodes are aligned; this model converts and imports.
TEST_F(Upgrade, OneInputNodeBesideAnUnnamedInitializer) {
  onnx::ModelProto m = model(2, {{"x", {2, 3}}});
  floatInit(m, "", {1, 1}, {0.f});
  node(m, "Relu", "r", {"x"}, "y");
  output(m, "y");
  EXPECT_EQ(error(m), "");
}
