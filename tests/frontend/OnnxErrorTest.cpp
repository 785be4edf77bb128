// OnnxErrorTest.cpp - import diagnostics and opset-dependent normalisation, on models built with
// the ONNX protobuf API (or damaged copies of a bundled model) written to temporary files.
#include "frontend/Onnx.h"
#include "graph/Reference.h"
#include "support/Error.h"
#include "support/Npy.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

using namespace npuc;

namespace {

std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() /
          ("npuc_frontend_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// A model with one float input "x" of the given dims ("" entries of dimParams are dynamic).
onnx::ModelProto baseModel(int64_t opset, const std::vector<int64_t> &dims,
                           const std::vector<std::string> &dimParams = {}) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  auto *op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  auto *g = m.mutable_graph();
  g->set_name("t");
  auto *in = g->add_input();
  in->set_name("x");
  auto *tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (size_t i = 0; i < dims.size(); ++i) {
    auto *d = tt->mutable_shape()->add_dim();
    if (i < dimParams.size() && !dimParams[i].empty())
      d->set_dim_param(dimParams[i]);
    else
      d->set_dim_value(dims[i]);
  }
  return m;
}

onnx::NodeProto *addNode(onnx::ModelProto &m, const std::string &op, const std::string &name,
                         std::vector<std::string> ins, std::vector<std::string> outs) {
  auto *n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto &i : ins)
    n->add_input(i);
  for (auto &o : outs)
    n->add_output(o);
  return n;
}

void addOutput(onnx::ModelProto &m, const std::string &name) {
  auto *o = m.mutable_graph()->add_output();
  o->set_name(name);
  o->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
}

void addInitializer(onnx::ModelProto &m, const std::string &name, const std::vector<int64_t> &dims,
                    const std::vector<float> &data) {
  auto *t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims)
    t->add_dims(d);
  for (float f : data)
    t->add_float_data(f);
}

void addInt64Initializer(onnx::ModelProto &m, const std::string &name,
                         const std::vector<int64_t> &data) {
  auto *t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(data.size()));
  for (int64_t v : data)
    t->add_int64_data(v);
}

std::string save(const onnx::ModelProto &m, const std::string &name) {
  std::string path = tempPath(name);
  std::string bytes;
  EXPECT_TRUE(m.SerializeToString(&bytes));
  writeFileAtomic(path, bytes);
  return path;
}

// Runs importOnnx and returns the error message ("" when it succeeded).
std::string importError(const std::string &path, const std::map<std::string, Shape> &pins = {}) {
  try {
    frontend::importOnnx(path, pins);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string &s, const std::string &sub) {
  return s.find(sub) != std::string::npos;
}

TEST(OnnxErrors, MissingFile) {
  std::string msg = importError("/nonexistent/dir/model.onnx");
  EXPECT_TRUE(contains(msg, "/nonexistent/dir/model.onnx")) << msg;
}

TEST(OnnxErrors, TruncatedModel) {
  std::string bytes = readFile(std::string(NPUC_MODELS_DIR) + "/tinycnn.onnx");
  std::string path = tempPath("truncated.onnx");
  writeFileAtomic(path, bytes.substr(0, bytes.size() / 2));
  std::string msg = importError(path);
  EXPECT_TRUE(contains(msg, path + ": not a valid ONNX model (")) << msg;
  std::filesystem::remove(path);
}

TEST(OnnxErrors, UnsupportedOperator) {
  onnx::ModelProto m = baseModel(14, {1, 4});
  addNode(m, "Bernoulli", "nz", {"x"}, {"y"});
  addOutput(m, "y");
  std::string path = save(m, "unsupported.onnx");
  std::string msg = importError(path);
  EXPECT_EQ(msg, path + ": node 'nz' (Bernoulli): unsupported operator");
  std::filesystem::remove(path);
}

// MeanVarianceNormalization's default axes [0, 2, 3] need a 4-D input.
TEST(OnnxErrors, MvnDefaultAxesNeedRank4) {
  onnx::ModelProto m = baseModel(14, {1, 4});
  addNode(m, "MeanVarianceNormalization", "nz", {"x"}, {"y"});
  addOutput(m, "y");
  std::string path = save(m, "mvn.onnx");
  std::string msg = importError(path);
  EXPECT_EQ(msg, path + ": node 'nz' (MeanVarianceNormalization): axis 2 out of range for rank 2");
  std::filesystem::remove(path);
}

TEST(OnnxErrors, UnnamedNodeGetsOpTypeAndIndex) {
  onnx::ModelProto m = baseModel(13, {1, 4});
  addNode(m, "Relu", "", {"x"}, {"r"});
  addNode(m, "MeanVarianceNormalization", "", {"r"}, {"y"});
  addOutput(m, "y");
  std::string path = save(m, "unnamed.onnx");
  EXPECT_TRUE(contains(importError(path),
                       "node 'MeanVarianceNormalization_1' (MeanVarianceNormalization)"));
  std::filesystem::remove(path);
}

TEST(OnnxErrors, DynamicDimMustBePinned) {
  onnx::ModelProto m = baseModel(13, {0, 4}, {"batch", ""});
  addNode(m, "Relu", "r", {"x"}, {"y"});
  addOutput(m, "y");
  std::string path = save(m, "dynamic.onnx");
  std::string msg = importError(path);
  EXPECT_TRUE(contains(msg, "input 'x'")) << msg;
  EXPECT_TRUE(contains(msg, "dim 0")) << msg;
  EXPECT_TRUE(contains(msg, "batch")) << msg;
  // Pinned: imports, and the shape propagates.
  graph::Graph g = frontend::importOnnx(path, std::map<std::string, Shape>{{"x", {3, 4}}});
  EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{3, 4}));
  // A pin contradicting a fixed dim is an error.
  EXPECT_TRUE(contains(importError(path, {{"x", {3, 5}}}), "model fixes it to 4"));
  EXPECT_TRUE(contains(importError(path, {{"x", {3, 4}}, {"nope", {3, 4}}}), "'nope'"));
  std::filesystem::remove(path);
}

TEST(OnnxErrors, OpsetOutOfRange) {
  // The supported range is 1-18 (below 9 through ONNX's version converter): one below and one
  // above each edge, and both sides of the conversion threshold.
  for (auto [opset, ok] : {std::pair<int64_t, bool>{0, false},
                           {1, true},
                           {8, true},
                           {9, true},
                           {18, true},
                           {19, false}}) {
    onnx::ModelProto m = baseModel(opset, {1, 4});
    addNode(m, "Relu", "r", {"x"}, {"y"});
    addOutput(m, "y");
    std::string path = save(m, fmt::format("opset{}.onnx", opset));
    std::string err = importError(path);
    if (ok)
      EXPECT_EQ(err, "") << "opset " << opset;
    else
      EXPECT_TRUE(contains(err, fmt::format("opset {} is not supported (supported: 1-18)", opset)))
          << err;
    std::filesystem::remove(path);
  }
}

TEST(OnnxErrors, Opset18ResizeAntialiasAndSplitNumOutputsAreChecked) {
  {
    onnx::ModelProto m = baseModel(18, {1, 1, 4, 4});
    auto *n = addNode(m, "Resize", "rs", {"x", "", "scales"}, {"y"});
    auto *a = n->add_attribute();
    a->set_name("antialias");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(1);
    addInitializer(m, "scales", {4}, {1, 1, 0.5f, 0.5f});
    addOutput(m, "y");
    std::string path = save(m, "antialias.onnx");
    EXPECT_TRUE(
        contains(importError(path), "node 'rs' (Resize): attribute antialias=1 not supported"))
        << importError(path);
    std::filesystem::remove(path);
  }
  {
    onnx::ModelProto m = baseModel(18, {2, 7});
    auto *n = addNode(m, "Split", "sp", {"x"}, {"a", "b"});
    auto *a = n->add_attribute();
    a->set_name("num_outputs");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(3);
    addOutput(m, "a");
    addOutput(m, "b");
    std::string path = save(m, "numout.onnx");
    EXPECT_TRUE(contains(importError(path),
                         "node 'sp' (Split): attribute num_outputs=3 but the node has 2 outputs"))
        << importError(path);
    std::filesystem::remove(path);
  }
}

namespace {

// A Pad node "p" of mode `mode` with constant pads `pads` on a [1, 1, 4, 4] input (opset 13).
std::string padModel(const std::string &mode, const std::vector<int64_t> &pads,
                     const std::string &file) {
  onnx::ModelProto m = baseModel(13, {1, 1, 4, 4});
  auto *n = addNode(m, "Pad", "p", {"x", "pads"}, {"y"});
  auto *a = n->add_attribute();
  a->set_name("mode");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(mode);
  addInt64Initializer(m, "pads", pads);
  addOutput(m, "y");
  return save(m, file);
}

} // namespace

TEST(OnnxErrors, UnsupportedAttributeValue) {
  // wrap is opset 19's; npuc's opsets have constant, edge and reflect.
  std::string path = padModel("wrap", {0, 0, 1, 1, 0, 0, 1, 1}, "padmode.onnx");
  EXPECT_TRUE(contains(importError(path), "node 'p' (Pad): attribute mode=wrap not supported "
                                          "(constant, edge or reflect)"))
      << importError(path);
  std::filesystem::remove(path);
}

TEST(OnnxErrors, PadReflectLimitAndCropsNameTheAxis) {
  // A reflect pad must be smaller than the extent it mirrors: 4 on an extent of 4 is not.
  std::string path = padModel("reflect", {0, 0, 0, 4, 0, 0, 0, 0}, "padreflect.onnx");
  EXPECT_TRUE(contains(importError(path), "node 'p' (Pad): mode=reflect pads axis 3 by 4, but a "
                                          "reflect pad must be smaller than the axis extent 4"))
      << importError(path);
  // After a crop of 2 the kept extent is 2, so a reflect pad of 2 on the other side is too large.
  path = padModel("reflect", {0, 0, -2, 0, 0, 0, 2, 0}, "padreflect.onnx");
  EXPECT_TRUE(contains(importError(path), "mode=reflect pads axis 2 by 2, but a reflect pad must "
                                          "be smaller than the axis extent 2 (after cropping)"))
      << importError(path);
  // Cropping more than the extent.
  path = padModel("edge", {0, 0, -3, 0, 0, 0, -2, 0}, "padreflect.onnx");
  EXPECT_TRUE(contains(importError(path), "node 'p' (Pad): pads -3 and -2 crop 5 elements from "
                                          "axis 2 of extent 4"))
      << importError(path);
  // Edge-padding an axis cropped to nothing.
  path = padModel("edge", {0, 0, -4, 0, 0, 0, 1, 0}, "padreflect.onnx");
  EXPECT_TRUE(contains(importError(path), "mode=edge pads axis 2, which the negative pads crop "
                                          "to nothing"))
      << importError(path);
  std::filesystem::remove(path);
}

TEST(OnnxErrors, ResizeUnknownModeNamesTheAttribute) {
  onnx::ModelProto m = baseModel(13, {1, 1, 2, 2});
  auto *n = addNode(m, "Resize", "rs", {"x", "", "scales"}, {"y"});
  auto *a = n->add_attribute();
  a->set_name("mode");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("lanczos");
  addInitializer(m, "scales", {4}, {1, 1, 2, 2});
  addOutput(m, "y");
  std::string path = save(m, "lanczos.onnx");
  EXPECT_TRUE(
      contains(importError(path), "node 'rs' (Resize): attribute mode=lanczos not supported"))
      << importError(path);
  std::filesystem::remove(path);
}

TEST(OnnxErrors, RuntimeSliceBoundIsAnError) {
  onnx::ModelProto m = baseModel(13, {4});
  addNode(m, "Slice", "sl", {"x", "x", "x"}, {"y"});
  addOutput(m, "y");
  std::string path = save(m, "slice.onnx");
  EXPECT_TRUE(contains(importError(path), "node 'sl' (Slice): starts (input 1) sets the output "
                                          "shape, and npuc compiles static shapes: it must be a "
                                          "constant"))
      << importError(path);
  std::filesystem::remove(path);
}

// A zero stride once crashed the import with SIGFPE: in ONNX's own shape inference (which ran
// before ours) and, with auto_pad=SAME_*, where the frontend derives the pads. Both are now our
// error naming the node and the attribute, before either divides.
TEST(OnnxErrors, ZeroStrideNamesNodeAndAttribute) {
  for (const char *autoPad : {"NOTSET", "SAME_UPPER"}) {
    onnx::ModelProto m = baseModel(13, {1, 1, 5, 5});
    auto *n = addNode(m, "Conv", "c", {"x", "w"}, {"y"});
    auto *a = n->add_attribute();
    a->set_name("auto_pad");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(autoPad);
    auto *s = n->add_attribute();
    s->set_name("strides");
    s->set_type(onnx::AttributeProto::INTS);
    s->add_ints(0);
    s->add_ints(0);
    addInitializer(m, "w", {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
    addOutput(m, "y");
    std::string path = save(m, "stride0.onnx");
    EXPECT_EQ(importError(path),
              path + ": node 'c' (Conv): attribute strides = [0, 0] must be at least 1 in every "
                     "entry")
        << autoPad;
    std::filesystem::remove(path);
  }
}

TEST(OnnxErrors, ZeroPoolKernelNamesNodeAndAttribute) {
  onnx::ModelProto m = baseModel(13, {1, 1, 5, 5});
  auto *n = addNode(m, "MaxPool", "p", {"x"}, {"y"});
  auto *k = n->add_attribute();
  k->set_name("kernel_shape");
  k->set_type(onnx::AttributeProto::INTS);
  k->add_ints(0);
  k->add_ints(0);
  addOutput(m, "y");
  std::string path = save(m, "pool0.onnx");
  EXPECT_EQ(importError(path), path + ": node 'p' (MaxPool): attribute kernel_shape = [0, 0] "
                                      "must be at least 1 in every entry");
  std::filesystem::remove(path);
}

TEST(OnnxImport, ConvAutoPadSameUpper) {
  // 1x1x5x5 input, 3x3 kernel of ones, stride 2, SAME_UPPER: output 3x3, total pad 2 -> 1/1.
  onnx::ModelProto m = baseModel(13, {1, 1, 5, 5});
  auto *n = addNode(m, "Conv", "c", {"x", "w"}, {"y"});
  auto *a = n->add_attribute();
  a->set_name("auto_pad");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("SAME_UPPER");
  auto *s = n->add_attribute();
  s->set_name("strides");
  s->set_type(onnx::AttributeProto::INTS);
  s->add_ints(2);
  s->add_ints(2);
  addInitializer(m, "w", {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  addOutput(m, "y");
  std::string path = save(m, "samepad.onnx");
  graph::Graph g = frontend::importOnnx(path);
  ASSERT_EQ(g.value(g.outputs[0]).shape, (Shape{1, 1, 3, 3}));
  const graph::Node &c = g.node(g.value(g.outputs[0]).producer);
  EXPECT_EQ(c.attrInts("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  // Input of ones: the corner output window covers 2x2 real pixels, the centre 3x3.
  HostTensor x(Shape{1, 1, 5, 5}, std::vector<float>(25, 1.0f));
  HostTensor y = graph::runReference(g, {{g.inputs[0], x}}).at(g.outputs[0]);
  EXPECT_FLOAT_EQ(y.data[0], 4.0f);
  EXPECT_FLOAT_EQ(y.data[4], 9.0f);
  EXPECT_FLOAT_EQ(y.data[1], 6.0f);
  std::filesystem::remove(path);
}

TEST(OnnxImport, ShapeIdiomIsFoldedAndReshapeIsStatic) {
  // torchvision's flatten idiom: Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])).
  onnx::ModelProto m = baseModel(13, {2, 3, 4});
  addNode(m, "Shape", "shape", {"x"}, {"s"});
  auto *idx = m.mutable_graph()->add_initializer();
  idx->set_name("zero");
  idx->set_data_type(onnx::TensorProto::INT64);
  idx->add_int64_data(0);
  auto *ax = m.mutable_graph()->add_initializer();
  ax->set_name("axes");
  ax->set_data_type(onnx::TensorProto::INT64);
  ax->add_dims(1);
  ax->add_int64_data(0);
  auto *neg = m.mutable_graph()->add_initializer();
  neg->set_name("minus1");
  neg->set_data_type(onnx::TensorProto::INT64);
  neg->add_dims(1);
  neg->add_int64_data(-1);
  addNode(m, "Gather", "gather", {"s", "zero"}, {"b"});
  addNode(m, "Unsqueeze", "unsq", {"b", "axes"}, {"b1"});
  addNode(m, "Concat", "cat", {"b1", "minus1"}, {"spec"})->add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("axis");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(0);
    return a;
  }());
  addNode(m, "Reshape", "reshape", {"x", "spec"}, {"y"});
  addOutput(m, "y");
  std::string path = save(m, "idiom.onnx");
  graph::Graph g = frontend::importOnnx(path);
  std::vector<graph::NodeId> order = g.topoOrder();
  ASSERT_EQ(order.size(), 1u) << "only the Reshape survives";
  EXPECT_EQ(g.node(order[0]).kind, graph::OpKind::Reshape);
  EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{2, 12}));
  std::filesystem::remove(path);
}

TEST(OnnxImport, OutputsKeepTheirDeclaredNamesThroughRemovedNodes) {
  // relu -> Identity -> "y", and "x" -> Dropout -> "z": the Identity and the Dropout are removed
  // at import. The computed value takes the name "y"; the graph input keeps its name "x".
  onnx::ModelProto m = baseModel(13, {1, 4});
  addNode(m, "Relu", "r", {"x"}, {"t"});
  addNode(m, "Identity", "id", {"t"}, {"y"});
  addNode(m, "Dropout", "dr", {"x"}, {"z"});
  addOutput(m, "y");
  addOutput(m, "z");
  std::string path = save(m, "names.onnx");
  graph::Graph g = frontend::importOnnx(path);
  ASSERT_EQ(g.outputs.size(), 2u);
  EXPECT_EQ(g.value(g.outputs[0]).name, "y");
  EXPECT_EQ(g.value(g.outputs[1]).name, "x");
  EXPECT_EQ(g.outputs[1], g.inputs[0]);
  std::filesystem::remove(path);
}

TEST(OnnxImport, ClipBoundsAsAttributesBeforeOpset11AreNotAccepted) {
  // Opset 11+: bounds are inputs; importer turns them into attributes.
  onnx::ModelProto m = baseModel(12, {1, 4});
  addInitializer(m, "lo", {}, {-1.0f});
  addNode(m, "Clip", "clip", {"x", "lo", ""}, {"y"});
  addOutput(m, "y");
  std::string path = save(m, "clip.onnx");
  graph::Graph g = frontend::importOnnx(path);
  const graph::Node &c = g.node(g.value(g.outputs[0]).producer);
  EXPECT_EQ(c.inputs.size(), 1u);
  EXPECT_DOUBLE_EQ(c.attrFloat("min", 0), -1.0);
  EXPECT_FALSE(c.hasAttr("max"));
  HostTensor x(Shape{1, 4}, {-3.0f, -0.5f, 2.0f, 100.0f});
  HostTensor y = graph::runReference(g, {{g.inputs[0], x}}).at(g.outputs[0]);
  EXPECT_EQ(y.data, (std::vector<float>{-1.0f, -0.5f, 2.0f, 100.0f}));
  std::filesystem::remove(path);
}

} // namespace

TEST(OnnxErrors, ZeroOrNegativeDimIsNamedNotCalledDynamic) {
  for (int64_t bad : {0, -3}) {
    onnx::ModelProto m = baseModel(13, {1, bad});
    addNode(m, "Relu", "r", {"x"}, {"y"});
    addOutput(m, "y");
    std::string path = save(m, "baddim.onnx");
    std::string msg = importError(path);
    EXPECT_TRUE(contains(msg, fmt::format("input 'x': dim 1 is {}; every dimension must be "
                                          "positive",
                                          bad)))
        << msg;
    std::filesystem::remove(path);
  }
}

TEST(OnnxErrors, CycleNamesANodeOnIt) {
  // x -> a (Add x, c) -> b (Relu) -> c (Relu) -> back into a: a cycle a -> b -> c -> a.
  onnx::ModelProto m = baseModel(13, {1, 4});
  addNode(m, "Add", "a", {"x", "cv"}, {"av"});
  addNode(m, "Relu", "b", {"av"}, {"bv"});
  addNode(m, "Relu", "c", {"bv"}, {"cv"});
  addNode(m, "Relu", "out", {"bv"}, {"y"});
  addOutput(m, "y");
  std::string path = save(m, "cycle.onnx");
  std::string msg = importError(path);
  EXPECT_TRUE(contains(msg, "is on a cycle")) << msg;
  // The walk starts at a (the first node) and meets a again through c.
  EXPECT_TRUE(contains(msg, "node 'a' (Add) is on a cycle (each node feeds the next): a -> b -> "
                            "c -> a"))
      << msg;
  std::filesystem::remove(path);
}

TEST(OnnxErrors, DirectoryIsNotAModel) {
  const std::string dir = tempPath("model_dir.onnx");
  std::filesystem::create_directories(dir);
  std::string msg = importError(dir);
  EXPECT_TRUE(contains(msg, dir + ": is a directory, not a file")) << msg;
  EXPECT_FALSE(contains(msg, "protobuf")) << msg;
  std::filesystem::remove(dir);
}

// Found by fuzz_Onnx: a Conv with no inputs read input 0 with .at() (std::out_of_range, an
// "internal error"). The schema's input and output counts are checked before any rule reads.
TEST(OnnxErrors, InputAndOutputCountsFollowTheSchema) {
  onnx::ModelProto none = baseModel(13, {1, 1, 5, 5});
  addNode(none, "Conv", "c", {}, {"y"});
  addOutput(none, "y");
  std::string path = save(none, "conv_no_inputs.onnx");
  EXPECT_EQ(importError(path), path + ": node 'c' (Conv): has 0 inputs; Conv takes 2 to 3");
  onnx::ModelProto many = baseModel(13, {1, 1, 5, 5});
  addNode(many, "Relu", "r", {"x"}, {"y", "z"});
  addOutput(many, "y");
  std::string path2 = save(many, "relu_two_outputs.onnx");
  EXPECT_EQ(importError(path2), path2 + ": node 'r' (Relu): has 2 outputs; Relu gives 1 to 1");
  std::filesystem::remove(path);
  std::filesystem::remove(path2);
}

namespace {

// A graph input of element type `type` and shape `dims`.
void addTypedInput(onnx::ModelProto &m, const std::string &name, int32_t type,
                   const std::vector<int64_t> &dims) {
  auto *in = m.mutable_graph()->add_input();
  in->set_name(name);
  auto *tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(type);
  tt->mutable_shape();
  for (int64_t d : dims)
    tt->mutable_shape()->add_dim()->set_dim_value(d);
}

// A model of one ai.onnx.preview.training node "opt" (no default-domain opset): R, T and the
// float tensors `tensors` (name, dims) as graph inputs, `outs` outputs.
onnx::ModelProto
trainingModel(const std::string &op, int32_t tType,
              const std::vector<std::pair<std::string, std::vector<int64_t>>> &tensors,
              const std::vector<std::string> &outs) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  auto *opset = m.add_opset_import();
  opset->set_domain("ai.onnx.preview.training");
  opset->set_version(1);
  m.mutable_graph()->set_name("t");
  addTypedInput(m, "R", onnx::TensorProto::FLOAT, {});
  addTypedInput(m, "T", tType, {});
  std::vector<std::string> ins{"R", "T"};
  for (const auto &[name, dims] : tensors) {
    addTypedInput(m, name, onnx::TensorProto::FLOAT, dims);
    ins.push_back(name);
  }
  addNode(m, op, "opt", ins, outs)->set_domain("ai.onnx.preview.training");
  for (const std::string &o : outs)
    addOutput(m, o);
  return m;
}

} // namespace

TEST(OnnxErrors, TrainingOptimizersNameTheNodeAndOperand) {
  // A group whose tensors disagree in shape.
  onnx::ModelProto m = trainingModel("Adagrad", onnx::TensorProto::INT64,
                                     {{"X", {2}}, {"G", {3}}, {"H", {2}}}, {"X_new", "H_new"});
  std::string path = save(m, "adagrad_shapes.onnx");
  EXPECT_TRUE(contains(importError(path), "node 'opt' (Adagrad): input 3 has shape 3 but the X "
                                          "of its group (input 2) has 2"))
      << importError(path);
  // T must be an int64 scalar.
  m = trainingModel("Adagrad", onnx::TensorProto::FLOAT, {{"X", {2}}, {"G", {2}}, {"H", {2}}},
                    {"X_new", "H_new"});
  path = save(m, "adagrad_t.onnx");
  EXPECT_TRUE(contains(importError(path), "node 'opt' (Adagrad): T (input 1) must be an int64 "
                                          "scalar, got f32 of shape scalar"))
      << importError(path);
  // Momentum's attributes are required.
  m = trainingModel("Momentum", onnx::TensorProto::INT64, {{"X", {2}}, {"G", {2}}, {"V", {2}}},
                    {"X_new", "V_new"});
  path = save(m, "momentum_attrs.onnx");
  EXPECT_TRUE(contains(importError(path), "node 'opt' (Momentum): attribute alpha is required"))
      << importError(path);
  // Inputs that do not split into groups.
  m = trainingModel("Adam", onnx::TensorProto::INT64, {{"X", {2}}, {"G", {2}}, {"V", {2}}},
                    {"X_new", "V_new", "H_new"});
  path = save(m, "adam_groups.onnx");
  EXPECT_TRUE(contains(importError(path), "node 'opt' (Adam): has 5 inputs; Adam takes R, T and 4 "
                                          "lists of equal length"))
      << importError(path);
  // The domain's other operators.
  m = trainingModel("Gradient", onnx::TensorProto::INT64, {{"X", {2}}}, {"dX"});
  path = save(m, "gradient.onnx");
  EXPECT_TRUE(contains(importError(path), "node 'opt' (Gradient): unsupported operator of domain "
                                          "ai.onnx.preview.training"))
      << importError(path);
  std::filesystem::remove(path);
}

TEST(OnnxErrors, TriluRuntimeKMustBeAnInt64Scalar) {
  onnx::ModelProto m = baseModel(14, {3, 4});
  addTypedInput(m, "k", onnx::TensorProto::INT64, {2});
  addNode(m, "Trilu", "tr", {"x", "k"}, {"y"});
  addOutput(m, "y");
  std::string path = save(m, "trilu_k.onnx");
  EXPECT_TRUE(
      contains(importError(path),
               "node 'tr' (Trilu): k (input 1) must be an int64 scalar, got i64 of shape 2"))
      << importError(path);
  std::filesystem::remove(path);
}

TEST(OnnxErrors, ResizeCropRoiNamesItsLength) {
  onnx::ModelProto m = baseModel(13, {1, 1, 4, 4});
  auto *n = addNode(m, "Resize", "rs", {"x", "roi", "", "sizes"}, {"y"});
  auto *a = n->add_attribute();
  a->set_name("coordinate_transformation_mode");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("tf_crop_and_resize");
  addInitializer(m, "roi", {4}, {0, 0, 1, 1});
  auto *t = m.mutable_graph()->add_initializer();
  t->set_name("sizes");
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(4);
  for (int64_t s : {1, 1, 2, 2})
    t->add_int64_data(s);
  addOutput(m, "y");
  std::string path = save(m, "resize_roi.onnx");
  EXPECT_TRUE(contains(importError(path), "node 'rs' (Resize): roi has 4 entries, expected 8 (a "
                                          "start and an end per axis)"))
      << importError(path);
  std::filesystem::remove(path);
}

// Found by the fuzz_Onnx campaign: a Resize whose required input X is named "" (which marks an
// omitted optional input) reached the attribute rules, which read it unchecked, and aborted with
// std::out_of_range. A required input's empty name is an error naming the node and the input.
TEST(OnnxErrors, RequiredInputWithAnEmptyName) {
  onnx::ModelProto m = baseModel(17, {1, 1, 2, 2});
  addInitializer(m, "scales", {4}, {1, 1, 2, 2});
  addNode(m, "Resize", "up", {"", "", "scales"}, {"y"});
  addOutput(m, "y");
  std::string path = save(m, "empty-required.onnx");
  EXPECT_EQ(importError(path), path + ": node 'up' (Resize): input 0 (X) is required, but its "
                                      "name is empty (omitted)");
  std::filesystem::remove(path);
}

// Found by the fuzz_Onnx campaign (UBSan: a huge Resize scale converted to int64 is undefined):
// a scale that is not finite, or that makes an axis longer than 2^62, is an error naming it.
TEST(OnnxErrors, ResizeScaleBeyondInt64) {
  for (float scale : {1e30f, std::numeric_limits<float>::infinity()}) {
    onnx::ModelProto m = baseModel(17, {1, 1, 2, 2});
    addInitializer(m, "scales", {4}, {1, 1, 1, scale});
    addNode(m, "Resize", "up", {"x", "", "scales"}, {"y"});
    addOutput(m, "y");
    std::string path = save(m, "resize-huge.onnx");
    const std::string msg = importError(path);
    EXPECT_TRUE(contains(msg, "node 'up' (Resize): scales[3] = ")) << msg;
    EXPECT_TRUE(contains(msg, std::isfinite(scale) ? "makes axis 3 longer than 2^62"
                                                   : "must be positive and finite"))
        << msg;
    std::filesystem::remove(path);
  }
}

// Found by the fuzz_Onnx campaign (an allocation of 16 GiB at import): constant folding
// evaluated a Pad of a one-element constant into its padded output. Folding stops where an
// output would have more than max(2^24, its inputs') elements: the Pad stays a node, with its
// shape, and nothing is allocated; a smaller one still folds.
TEST(OnnxImport, ConstantFoldingDoesNotBlowUpTheModel) {
  for (int64_t pad : {int64_t{20000000}, int64_t{1000}}) {
    onnx::ModelProto m = baseModel(17, {1, 1});
    addInitializer(m, "c", {1, 1}, {2.f});
    addInt64Initializer(m, "pads", {0, 0, 0, pad});
    addNode(m, "Pad", "big", {"c", "pads"}, {"p"});
    addNode(m, "Add", "use", {"x", "p"}, {"y"});
    addOutput(m, "y");
    std::string path = save(m, "fold-growth.onnx");
    graph::Graph g = frontend::importOnnx(path, {});
    std::filesystem::remove(path);
    const graph::Value &p = g.value(*g.findValue("p"));
    EXPECT_EQ(p.shape, (Shape{1, 1 + pad}));
    EXPECT_EQ(p.isConstant(), pad == 1000) << "only the small Pad folds";
  }
}

// Found by the fuzz_Onnx campaign (UBSan: signed overflow in numElements of an initializer's
// dims): an initializer whose dims multiply past int64 is an error naming it.
TEST(OnnxErrors, InitializerDimsBeyondInt64) {
  onnx::ModelProto m = baseModel(17, {2});
  addInitializer(m, "huge", {1LL << 32, 1LL << 32}, {});
  addNode(m, "Relu", "r", {"x"}, {"y"});
  addOutput(m, "y");
  std::string path = save(m, "huge-init.onnx");
  EXPECT_EQ(importError(path), path + ": tensor 'huge': shape 4294967296x4294967296 has more "
                                      "elements than int64 holds");
  std::filesystem::remove(path);
}
