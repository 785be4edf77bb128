// OnnxRnnTest.cpp - import of RNN, GRU and LSTM: the normalised attributes (graph/Rnn.h) with
// ONNX's defaults and its in-order alpha/beta lists, and the errors that name the node and the
// attribute or input (bad direction, activation names and counts, shapes, sequence lengths).
#include "frontend/Onnx.h"
#include "graph/Reference.h"
#include "graph/Rnn.h"
#include "support/Error.h"
#include "support/File.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

using namespace npuc;

namespace {

constexpr int64_t S = 3, B = 2, I = 2, H = 2;

struct Model {
  onnx::ModelProto m;
  onnx::NodeProto *node = nullptr;
};

void floatTensor(onnx::TensorProto *t, const std::string &name, const std::vector<int64_t> &dims,
                 float value) {
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    n *= d;
  }
  for (int64_t i = 0; i < n; ++i)
    t->add_float_data(value + 0.01f * static_cast<float>(i % 7));
}

// One `op` node "r" reading input x [S, B, I] and initializers W, R of `gates` gates (and the
// given direction count), outputs Y and Y_h.
Model rnnModel(const std::string &op, int64_t gates, int64_t dirs = 1, int64_t opset = 14) {
  Model r;
  r.m.set_ir_version(7);
  auto *os = r.m.add_opset_import();
  os->set_domain("");
  os->set_version(opset);
  auto *g = r.m.mutable_graph();
  g->set_name("t");
  auto *in = g->add_input();
  in->set_name("x");
  auto *tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {S, B, I})
    tt->mutable_shape()->add_dim()->set_dim_value(d);
  floatTensor(g->add_initializer(), "W", {dirs, gates * H, I}, 0.1f);
  floatTensor(g->add_initializer(), "R", {dirs, gates * H, H}, -0.2f);
  r.node = g->add_node();
  r.node->set_op_type(op);
  r.node->set_name("r");
  for (const char *i : {"x", "W", "R"})
    r.node->add_input(i);
  for (const char *o : {"y", "yh"}) {
    r.node->add_output(o);
    auto *out = g->add_output();
    out->set_name(o);
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  return r;
}

void setString(onnx::NodeProto *n, const std::string &k, const std::string &v) {
  auto *a = n->add_attribute();
  a->set_name(k);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
void setStrings(onnx::NodeProto *n, const std::string &k, const std::vector<std::string> &v) {
  auto *a = n->add_attribute();
  a->set_name(k);
  a->set_type(onnx::AttributeProto::STRINGS);
  for (const auto &s : v)
    a->add_strings(s);
}
void setFloats(onnx::NodeProto *n, const std::string &k, const std::vector<float> &v) {
  auto *a = n->add_attribute();
  a->set_name(k);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float f : v)
    a->add_floats(f);
}
void setInt(onnx::NodeProto *n, const std::string &k, int64_t v) {
  auto *a = n->add_attribute();
  a->set_name(k);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

std::string save(const Model &r, const std::string &name) {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("npuc_rnn_" + std::to_string(::getpid()) + "_" + name))
                         .string();
  std::string bytes;
  EXPECT_TRUE(r.m.SerializeToString(&bytes));
  writeFileAtomic(path, bytes);
  return path;
}

// The import error of the model ("" when it imports).
std::string importError(const Model &r, const std::string &name) {
  std::string path = save(r, name);
  std::string msg;
  try {
    frontend::importOnnx(path);
  } catch (const Error &e) {
    msg = e.what();
  }
  std::filesystem::remove(path);
  return msg;
}

const graph::Node &rnnNode(const graph::Graph &g) {
  for (const graph::Node &n : g.nodes)
    if (!n.dead && graph::isRecurrentOp(n.kind))
      return n;
  ADD_FAILURE() << "no recurrent node";
  return g.nodes.front();
}

TEST(OnnxRnn, DefaultsAndDerivedHiddenSize) {
  Model r = rnnModel("LSTM", 4);
  std::string path = save(r, "lstm_defaults.onnx");
  graph::Graph g = frontend::importOnnx(path); // no hidden_size: W's rows / 4
  std::filesystem::remove(path);
  const graph::Node &n = rnnNode(g);
  EXPECT_EQ(n.attrInt("hidden_size", 0), H);
  EXPECT_EQ(n.attrInt("direction", -1), 0);
  EXPECT_EQ(n.attrInts("activations"), (std::vector<int64_t>{int64_t(graph::RnnActivation::Sigmoid),
                                                             int64_t(graph::RnnActivation::Tanh),
                                                             int64_t(graph::RnnActivation::Tanh)}));
  EXPECT_EQ(g.value(n.outputs[0]).shape, (Shape{S, 1, B, H}));
  EXPECT_EQ(g.value(n.outputs[1]).shape, (Shape{1, B, H}));
}

// activation_alpha/beta hold values only for the functions that take them, in order: the
// bidirectional GRU's LeakyRelu, HardSigmoid (given once, repeated for the second direction)
// read 0.3, 0.4 (first direction) and the defaults 0.01, 0.2 (second); HardSigmoid's betas
// 0.6 and the default 0.5.
TEST(OnnxRnn, AlphaBetaAreConsumedInOrder) {
  Model r = rnnModel("GRU", 3, 2);
  setString(r.node, "direction", "bidirectional");
  setStrings(r.node, "activations", {"leakyrelu", "HardSigmoid"}); // names ignore case
  setFloats(r.node, "activation_alpha", {0.3f, 0.4f});
  setFloats(r.node, "activation_beta", {0.6f});
  std::string path = save(r, "gru_alpha.onnx");
  graph::Graph g = frontend::importOnnx(path);
  std::filesystem::remove(path);
  const graph::Node &n = rnnNode(g);
  graph::RnnSpec s = graph::rnnSpec(g, n);
  ASSERT_EQ(s.acts.size(), 4u);
  EXPECT_EQ(s.act(1, 0).fn, graph::RnnActivation::LeakyRelu);
  EXPECT_FLOAT_EQ(s.act(0, 0).alpha, 0.3f);
  EXPECT_FLOAT_EQ(s.act(0, 1).alpha, 0.4f);
  EXPECT_FLOAT_EQ(s.act(0, 1).beta, 0.6f);
  EXPECT_DOUBLE_EQ(s.act(1, 0).alpha, 0.01);
  EXPECT_DOUBLE_EQ(s.act(1, 1).alpha, 0.2);
  EXPECT_DOUBLE_EQ(s.act(1, 1).beta, 0.5);
  EXPECT_EQ(g.value(n.outputs[0]).shape, (Shape{S, 2, B, H}));
}

TEST(OnnxRnn, AttributeErrorsNameTheNode) {
  Model dir = rnnModel("RNN", 1);
  setString(dir.node, "direction", "sideways");
  EXPECT_NE(importError(dir, "dir.onnx")
                .find("node 'r' (RNN): attribute direction=sideways not supported"),
            std::string::npos);
  Model act = rnnModel("RNN", 1);
  setStrings(act.node, "activations", {"Swish"});
  EXPECT_NE(importError(act, "act.onnx")
                .find("node 'r' (RNN): attribute activations: 'Swish' is not one of"),
            std::string::npos);
  Model count = rnnModel("LSTM", 4);
  setStrings(count.node, "activations", {"Sigmoid", "Tanh"});
  EXPECT_NE(importError(count, "count.onnx")
                .find("node 'r' (LSTM): attribute activations has 2 entries; a one-direction "
                      "LSTM needs 3"),
            std::string::npos);
  Model scaled = rnnModel("RNN", 1);
  setStrings(scaled.node, "activations", {"ScaledTanh"});
  EXPECT_NE(importError(scaled, "scaled.onnx")
                .find("node 'r' (RNN): attribute activation_alpha gives no value for "
                      "ScaledTanh, which has no default"),
            std::string::npos);
  Model clip = rnnModel("GRU", 3);
  auto *c = clip.node->add_attribute();
  c->set_name("clip");
  c->set_type(onnx::AttributeProto::FLOAT);
  c->set_f(-1.0f);
  EXPECT_NE(importError(clip, "clip.onnx")
                .find("node 'r' (GRU): attribute clip = -1 must be "
                      "positive"),
            std::string::npos);
  Model hidden = rnnModel("GRU", 3);
  setInt(hidden.node, "hidden_size", 3); // W has 3 * 2 rows
  EXPECT_NE(importError(hidden, "hidden.onnx")
                .find("node 'r' (GRU): input 1 (W) has shape 1x6x2, expected 1x9x2"),
            std::string::npos);
}

// A constant length past seq_length fails at import; a runtime one in the reference run.
TEST(OnnxRnn, SequenceLengthsOutOfRange) {
  Model r = rnnModel("RNN", 1);
  r.node->add_input(""); // B
  r.node->add_input("lens");
  auto *t = r.m.mutable_graph()->add_initializer();
  t->set_name("lens");
  t->set_data_type(onnx::TensorProto::INT32);
  t->add_dims(B);
  t->add_int32_data(1);
  t->add_int32_data(S + 1);
  EXPECT_NE(importError(r, "lens.onnx")
                .find("node 'r' (RNN): sequence_lens[1] = 4 is not a length in [0, 3]"),
            std::string::npos);

  Model run = rnnModel("RNN", 1);
  std::string path = save(run, "lens_run.onnx");
  graph::Graph g = frontend::importOnnx(path);
  std::filesystem::remove(path);
  const graph::Node &n = rnnNode(g);
  HostTensor lens({B}, {2.0f, -1.0f});
  try {
    graph::checkSequenceLens(n, S, lens);
    ADD_FAILURE() << "a negative length was accepted";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "node 'r' (RNN): sequence_lens[1] = -1 is not a length in [0, 3]");
  }
  EXPECT_NO_THROW(graph::checkSequenceLens(n, S, HostTensor({B}, {0.0f, 3.0f})));
}

} // namespace
