// OnnxImportTest.cpp - imports every bundled model and compares the reference executor (before
// and after the graph passes) with the outputs torch computed when the model was generated
// (models/<name>_expected.npy, an oracle independent of npuc).
#include "frontend/Onnx.h"
#include "graph/Passes.h"
#include "graph/Reference.h"
#include "support/Error.h"
#include "support/Npy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

using namespace npuc;

namespace {

std::string model(const std::string &name) {
  return std::string(NPUC_MODELS_DIR) + "/" + name;
}

void expectClose(const HostTensor &got, const HostTensor &want, const std::string &what) {
  ASSERT_EQ(got.shape, want.shape) << what;
  for (int64_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got.data[i], want.data[i], 1e-4 * std::max(1.0f, std::fabs(want.data[i])))
        << what << " element " << i;
}

HostTensor runOne(const graph::Graph &g, const HostTensor &input) {
  auto outs = graph::runReference(g, {{g.inputs.at(0), input}});
  return outs.at(g.outputs.at(0));
}

class BundledModel : public ::testing::TestWithParam<std::string> {};

TEST_P(BundledModel, ReferenceMatchesTorch) {
  const std::string name = GetParam();
  graph::Graph g = frontend::importOnnx(model(name + ".onnx"));
  ASSERT_EQ(g.inputs.size(), 1u);
  ASSERT_EQ(g.outputs.size(), 1u);
  HostTensor input = readNpy(model(name + "_input.npy"));
  HostTensor want = readNpy(model(name + "_expected.npy"));
  EXPECT_EQ(g.value(g.inputs[0]).shape, input.shape);
  expectClose(runOne(g, input), want, name + " as imported");

  // The passes must preserve semantics, and leave no BN/Identity behind.
  graph::simplify(g);
  graph::foldBatchNorm(g);
  graph::inferShapes(g);
  for (graph::NodeId n : g.topoOrder()) {
    EXPECT_NE(g.node(n).kind, graph::OpKind::BatchNormalization);
    EXPECT_NE(g.node(n).kind, graph::OpKind::Identity);
  }
  expectClose(runOne(g, input), want, name + " after simplify+foldBatchNorm");
  graph::fuseOps(g);
  EXPECT_FALSE(g.groups.empty());
}

INSTANTIATE_TEST_SUITE_P(Models, BundledModel,
                         ::testing::Values("tinycnn", "mlp", "dwnet", "branchy"));

TEST(OnnxImport, TinyCnnStructure) {
  graph::Graph g = frontend::importOnnx(model("tinycnn.onnx"));
  int convs = 0, bns = 0;
  for (graph::NodeId n : g.topoOrder()) {
    convs += g.node(n).kind == graph::OpKind::Conv;
    bns += g.node(n).kind == graph::OpKind::BatchNormalization;
  }
  EXPECT_EQ(convs, 5);
  EXPECT_EQ(bns, 5);
  EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{1, 10}));
  // Normalised Conv attributes are always explicit.
  for (graph::NodeId n : g.topoOrder())
    if (g.node(n).kind == graph::OpKind::Conv) {
      EXPECT_EQ(g.node(n).attrInts("pads").size(), 4u);
      EXPECT_EQ(g.node(n).attrInts("strides").size(), 2u);
      EXPECT_TRUE(g.node(n).hasAttr("group"));
    }
  // After BN folding every conv-bn pair became a single conv with a bias.
  graph::simplify(g);
  graph::foldBatchNorm(g);
  int withBias = 0;
  for (graph::NodeId n : g.topoOrder())
    if (g.node(n).kind == graph::OpKind::Conv)
      withBias += g.node(n).inputs.size() == 3;
  EXPECT_EQ(withBias, 5);
}

TEST(OnnxImport, DwNetClipBoundsAndPadRemoval) {
  graph::Graph g = frontend::importOnnx(model("dwnet.onnx"));
  bool sawDepthwise = false;
  for (graph::NodeId n : g.topoOrder()) {
    const graph::Node &nd = g.node(n);
    if (nd.kind == graph::OpKind::Clip) {
      EXPECT_EQ(nd.inputs.size(), 1u);
      EXPECT_DOUBLE_EQ(nd.attrFloat("min", -1), 0.0);
      EXPECT_DOUBLE_EQ(nd.attrFloat("max", -1), 6.0);
    }
    if (nd.kind == graph::OpKind::Conv && nd.attrInt("group", 1) == 16)
      sawDepthwise = true;
  }
  EXPECT_TRUE(sawDepthwise);
  graph::simplify(g);
  for (graph::NodeId n : g.topoOrder())
    EXPECT_NE(g.node(n).kind, graph::OpKind::Pad) << "all-zero Pad is a no-op";
}

TEST(OnnxImport, ReferenceRejectsWrongInputShape) {
  graph::Graph g = frontend::importOnnx(model("mlp.onnx"));
  try {
    graph::runReference(g, {{g.inputs[0], HostTensor(Shape{1, 63})}});
    FAIL() << "expected an error";
  } catch (const Error &e) {
    std::string m = e.what();
    EXPECT_NE(m.find("input"), std::string::npos) << m;
    EXPECT_NE(m.find("1x64"), std::string::npos) << m;
    EXPECT_NE(m.find("1x63"), std::string::npos) << m;
  }
}

} // namespace

namespace {

// ResNet-18 is too big to bundle: generate it with
// `models/make_models.py <dir> --resnet18` and set NPUC_RESNET18_DIR=<dir> to run this test.
} // namespace
