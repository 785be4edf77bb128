// ExtractTest.cpp - graph::extractGroups (graph/Extract.h): which values become the standalone
// graph's inputs, constants and outputs, written from the group boundaries of a hand-made graph,
// and that the result prints as text that reads back (the crash reproducer's file).
#include "graph/Extract.h"
#include "graph/Text.h"

#include <gtest/gtest.h>

using namespace npuc;
using namespace npuc::graph;

namespace {

// x -> conv(w) -> relu -> [group 0]; relu -> sigmoid [group 1]; relu, sigmoid -> add [group 2];
// the graph outputs add and sigmoid.
const char *kText = R"(graph "three"
  input %x: f32[1x2x4x4]
  const %w: f32[2x2x1x1] = [1.0, -1.0, 0.5, 2.0]
  %c: f32[1x2x4x4] = Conv "conv"(%x, %w) {kernel_shape=[1, 1]}
  %r: f32[1x2x4x4] = Relu "relu"(%c)
  %s: f32[1x2x4x4] = Sigmoid "sig"(%r)
  %a: f32[1x2x4x4] = Add "add"(%r, %s)
  output %a
  output %s
  group 0 "conv" on npu anchor "conv" nodes ["conv", "relu"] inputs [%x] outputs [%r]
  group 1 "sig" on npu anchor "sig" nodes ["sig"] inputs [%r] outputs [%s]
  group 2 "add" on cpu anchor "add" nodes ["add"] inputs [%r, %s] outputs [%a]
)";

std::vector<std::string> names(const Graph &g, const std::vector<ValueId> &ids) {
  std::vector<std::string> out;
  for (ValueId v : ids)
    out.push_back(g.value(v).name);
  return out;
}

int liveNodes(const Graph &g) {
  int n = 0;
  for (const Node &nd : g.nodes)
    n += !nd.dead;
  return n;
}

TEST(ExtractGroups, OneGroupReadsItsBoundaryAsInputs) {
  Graph g = parseGraphText(kText);
  Graph one = extractGroups(g, {1});
  EXPECT_EQ(names(one, one.inputs), std::vector<std::string>{"r"});
  EXPECT_EQ(names(one, one.outputs), std::vector<std::string>{"s"});
  EXPECT_EQ(liveNodes(one), 1);
  EXPECT_TRUE(one.groups.empty());
  EXPECT_EQ(one.value(*one.findValue("r")).producer, -1);
}

TEST(ExtractGroups, ConstantsStayConstantsAndInternalValuesStayInside) {
  Graph g = parseGraphText(kText);
  Graph first = extractGroups(g, {0});
  EXPECT_EQ(names(first, first.inputs), std::vector<std::string>{"x"}); // w is a constant
  EXPECT_EQ(names(first, first.outputs), std::vector<std::string>{"r"});
  // Groups 1 and 2 together: r comes from outside; s feeds add inside but is also a graph
  // output, so it stays an output beside a.
  Graph tail = extractGroups(g, {1, 2});
  EXPECT_EQ(names(tail, tail.inputs), std::vector<std::string>{"r"});
  EXPECT_EQ(names(tail, tail.outputs), (std::vector<std::string>{"s", "a"}));
  // Groups 0 and 1: r is read by add (outside), so it is an output; s too (graph output).
  Graph head = extractGroups(g, {0, 1});
  EXPECT_EQ(names(head, head.outputs), (std::vector<std::string>{"r", "s"}));
  EXPECT_EQ(liveNodes(head), 3);
}

TEST(ExtractGroups, PrintsTextThatReadsBack) {
  Graph g = parseGraphText(kText);
  const std::string text = printGraphText(extractGroups(g, {0, 1}));
  EXPECT_EQ(text, "graph \"three\"\n"
                  "  input %x: f32[1x2x4x4]\n"
                  "  const %w: f32[2x2x1x1] = [1, -1, 0.5, 2]\n"
                  "  %c: f32[1x2x4x4] = Conv \"conv\"(%x, %w) {kernel_shape=[1, 1]}\n"
                  "  %r: f32[1x2x4x4] = Relu \"relu\"(%c)\n"
                  "  %s: f32[1x2x4x4] = Sigmoid \"sig\"(%r)\n"
                  "  output %r, %s\n");
  EXPECT_EQ(printGraphText(parseGraphText(text)), text);
}

} // namespace
