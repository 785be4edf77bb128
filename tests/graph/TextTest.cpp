// TextTest.cpp - the graph text form (graph/Text.h): what it prints for a graph built by hand
// (expected text written from the syntax, not from the printer), that every AttrValue kind and
// every float bit pattern reads back exactly, that seeded constants hold the tests' randomData,
// that groups survive, and that parse errors name the line, column and what was expected.
#include "graph/Text.h"
#include "graph/Passes.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

using namespace npuc;
using namespace npuc::graph;

namespace {

std::string parseError(const std::string &text) {
  try {
    parseGraphText(text, {"t.graph", 1});
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GraphText, PrintsTheDocumentedSyntax) {
  Graph g;
  g.name = "tiny";
  ValueId x = g.addValue("x", {1, 2, 2, 2}, DType::F32);
  g.inputs = {x};
  ValueId w = g.addConstant("w", {2, 2, 1, 1}, {1.5f, -2.f, 0.25f, 0.f});
  ValueId z = g.addConstant("z", {2, 1, 1}, {3.f, 3.f});
  ValueId y = g.addValue("conv out", {1, 2, 2, 2}, DType::F32);
  NodeId c = g.addNode(graph::OpKind::Conv, "conv", {x, w}, {y});
  g.node(c).attrs = {{"kernel_shape", std::vector<int64_t>{1, 1}}, {"group", int64_t{1}}};
  ValueId s = g.addValue("s", {1, 2, 2, 2}, DType::F32);
  g.addNode(graph::OpKind::Add, "add", {y, z}, {s});
  g.outputs = {s};
  EXPECT_EQ(printGraphText(g), "graph \"tiny\"\n"
                               "  input %x: f32[1x2x2x2]\n"
                               "  const %w: f32[2x2x1x1] = [1.5, -2, 0.25, 0]\n"
                               "  const %z: f32[2x1x1] = splat(3)\n"
                               "  %\"conv out\": f32[1x2x2x2] = Conv \"conv\"(%x, %w) "
                               "{group=1, kernel_shape=[1, 1]}\n"
                               "  %s: f32[1x2x2x2] = Add \"add\"(%\"conv out\", %z)\n"
                               "  output %s\n");
}

// Print, parse, print: the same text, and the parsed graph holds exactly the original data.
TEST(GraphText, EveryAttributeKindRoundTrips) {
  const std::string text =
      "graph \"attrs\"\n"
      "  input %x: f32[2x3]\n"
      "  %y: f32[2x3] = LeakyRelu \"n\"(%x) {alpha=0.1, big=9007199254740993, empty=[], "
      "emptyf=f64[], floats=[1.0, -0.5, 1e-30], huge=1e+300, ints=[-1, 0, 7], neg=-4, "
      "s=\"a \\\"q\\\" \\\\ \\n\\x01\", whole=2.0}\n"
      "  output %y\n";
  Graph g = parseGraphText(text);
  const Node &n = g.node(0);
  EXPECT_EQ(std::get<double>(n.attrs.at("alpha")), 0.1);
  EXPECT_EQ(std::get<int64_t>(n.attrs.at("big")), 9007199254740993ll);
  EXPECT_EQ(std::get<std::vector<int64_t>>(n.attrs.at("empty")), std::vector<int64_t>{});
  EXPECT_EQ(std::get<std::vector<double>>(n.attrs.at("emptyf")), std::vector<double>{});
  EXPECT_EQ(std::get<std::vector<double>>(n.attrs.at("floats")),
            (std::vector<double>{1.0, -0.5, 1e-30}));
  EXPECT_EQ(std::get<double>(n.attrs.at("huge")), 1e300);
  EXPECT_EQ(std::get<std::vector<int64_t>>(n.attrs.at("ints")), (std::vector<int64_t>{-1, 0, 7}));
  EXPECT_EQ(std::get<int64_t>(n.attrs.at("neg")), -4);
  EXPECT_EQ(std::get<std::string>(n.attrs.at("s")), "a \"q\" \\ \n\x01");
  EXPECT_EQ(std::get<double>(n.attrs.at("whole")), 2.0); // a float, not the integer 2
  EXPECT_EQ(printGraphText(g), text);
}

TEST(GraphText, FloatConstantsKeepTheirBits) {
  std::vector<float> d = {0.1f,
                          -0.f,
                          std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::max(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(),
                          std::bit_cast<float>(0x7fc00001u), // a NaN with a payload
                          1.f / 3.f};
  Graph g;
  ValueId c = g.addConstant("c", {8}, d);
  ValueId y = g.addValue("y", {8}, DType::F32);
  g.addNode(graph::OpKind::Relu, "r", {c}, {y});
  g.outputs = {y};
  std::string text = printGraphText(g);
  EXPECT_NE(text.find("[0.1, -0, 1e-45, 3.4028235e+38, -inf, nan, bits(2143289345), 0.33333334]"),
            std::string::npos)
      << text;
  Graph back = parseGraphText(text);
  const std::vector<float> &e = *back.value(back.node(0).inputs[0]).f32;
  ASSERT_EQ(e.size(), d.size());
  for (size_t i = 0; i < d.size(); ++i)
    EXPECT_EQ(std::bit_cast<uint32_t>(e[i]), std::bit_cast<uint32_t>(d[i])) << "element " << i;
}

TEST(GraphText, RandomIsTheTestsUniformData) {
  Graph g = parseGraphText("graph \"r\"\n"
                           "  const %a: f32[5] = random(7)\n"
                           "  const %b: f32[3] = random(9, 0.5, 1.5)\n"
                           "  const %i: i64[2x2] = splat(-3)\n"
                           "  output %a, %b, %i\n");
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  for (float f : *g.value(g.outputs[0]).f32)
    EXPECT_EQ(f, d(rng));
  for (float f : *g.value(g.outputs[1]).f32) {
    EXPECT_GE(f, 0.5f);
    EXPECT_LT(f, 1.5f);
  }
  EXPECT_EQ(*g.value(g.outputs[2]).i64, (std::vector<int64_t>{-3, -3, -3, -3}));
}

TEST(GraphText, LargeConstantsPrintAsAHashOfTheirData) {
  Graph g;
  std::vector<float> d(10);
  for (size_t i = 0; i < d.size(); ++i)
    d[i] = static_cast<float>(i);
  ValueId a = g.addConstant("a", {10}, d), b = g.addConstant("b", {10}, d);
  d[3] = -1;
  ValueId c = g.addConstant("c", {10}, d);
  g.outputs = {a, b, c};
  std::string text = printGraphText(g, {.inlineLimit = 4});
  Graph back = parseGraphText(text);
  // Equal data gives an equal pattern (CSE still merges them), different data another one.
  EXPECT_EQ(*back.value(back.outputs[0]).f32, *back.value(back.outputs[1]).f32);
  EXPECT_NE(*back.value(back.outputs[0]).f32, *back.value(back.outputs[2]).f32);
  EXPECT_NE(text.find("const %a: f32[10] = random("), std::string::npos) << text;
}

TEST(GraphText, RepeatedAndOddNamesStayDistinct) {
  Graph g;
  ValueId x = g.addValue("v", {2}, DType::F32);
  g.inputs = {x};
  ValueId a = g.addValue("v", {2}, DType::F32), b = g.addValue("", {2}, DType::F32);
  g.addNode(graph::OpKind::Relu, "n", {x}, {a});
  g.addNode(graph::OpKind::Neg, "n", {a}, {b});
  g.outputs = {b};
  std::string text = printGraphText(g);
  EXPECT_EQ(text, "graph \"\"\n"
                  "  input %v: f32[2]\n"
                  "  %v.1: f32[2] = Relu \"n\"(%v)\n"
                  "  %v.2: f32[2] = Neg \"n.1\"(%v.1)\n"
                  "  output %v.2\n");
  EXPECT_EQ(printGraphText(parseGraphText(text)), text);
}

TEST(GraphText, OutputsDeclaredUnderAnotherNameRoundTrip) {
  // `as "NAME"`: the name an output keeps after a pass replaced its value (Graph::outputNames).
  const std::string text = "graph \"g\"\n"
                           "  input %x: f32[2]\n"
                           "  %r: f32[2] = Relu \"r\"(%x)\n"
                           "  output %x as \"id\", %r, %r as \"r 2\"\n";
  Graph g = parseGraphText(text);
  ASSERT_EQ(g.outputs.size(), 3u);
  EXPECT_EQ(g.outputs[0], g.inputs[0]);
  EXPECT_EQ(g.outputName(0), "id");
  EXPECT_EQ(g.outputName(1), "r");
  EXPECT_EQ(g.outputName(2), "r 2");
  EXPECT_EQ(printGraphText(g), text);
  // Without `as`, outputs are named by their values and nothing is recorded.
  EXPECT_TRUE(parseGraphText("graph \"g\"\n  input %x: f32[2]\n  output %x\n").outputNames.empty());
  EXPECT_EQ(parseError("graph \"g\"\n  input %x: f32[2]\n  output %x as y\n"),
            "t.graph:3:16: error: expected the output's name (a string), found 'y'");
}

TEST(GraphText, GroupsRoundTrip) {
  const std::string text = "graph \"g\"\n"
                           "  input %x: f32[1x4]\n"
                           "  %a: f32[1x4] = Relu \"a\"(%x)\n"
                           "  %b: f32[1x4] = Softmax \"b\"(%a) {axis=1}\n"
                           "  output %b\n"
                           "  group 0 \"a\" on npu anchor \"a\" nodes [\"a\"] inputs [%x] "
                           "outputs [%a]\n"
                           "  group 1 \"b\" on cpu anchor \"b\" nodes [\"b\"] inputs [%a] "
                           "outputs [%b] reason \"no Softmax\" note \"split\"\n";
  Graph g = parseGraphText(text);
  ASSERT_EQ(g.groups.size(), 2u);
  EXPECT_EQ(g.groups[1].placement, Placement::Cpu);
  EXPECT_EQ(g.groups[1].cpuReason, "no Softmax");
  EXPECT_EQ(g.groups[1].note, "split");
  EXPECT_EQ(g.groups[1].anchor, 1);
  EXPECT_EQ(printGraphText(g), text);
}

TEST(GraphText, ErrorsNameTheLineColumnAndWhatWasExpected) {
  EXPECT_EQ(parseError("graph \"g\"\n  input %x f32[2]\n"),
            "t.graph:2:12: error: expected ':', found 'f32'");
  EXPECT_EQ(parseError("graph \"g\"\n  input %x: f32[2]\n  %y: f32[2] = Relu \"r\"(%q)\n"),
            "t.graph:3:25: error: unknown value '%q' (values are defined before their uses)");
  EXPECT_EQ(parseError("graph \"g\"\n  input %x: f32[2]\n  %y: f32[3] = Relu \"r\"(%x)\n"),
            "t.graph:3:16: error: node \"r\" (Relu): output '%y' is declared f32[3] but the op "
            "gives f32[2]");
  EXPECT_EQ(parseError("graph \"g\"\n  const %c: f32[3] = [1, 2]\n"),
            "t.graph:2:22: error: constant '%c' of shape [3] needs 3 elements, the list has 2");
  EXPECT_EQ(
      parseError("graph \"g\"\n  input %x: f128[2]\n"),
      "t.graph:2:13: error: unknown type 'f128' (known: f32, f64, f16, i8, i16, i32, i64, u8, "
      "u16, u32, u64, bool)");
  EXPECT_EQ(parseError("graph \"g\"\n  const %c: u8[2] = [1, 256]\n"),
            "t.graph:2:21: error: constant '%c': 256 is not a u8 value");
  EXPECT_EQ(parseError("graph \"g\"\n  input %x: f32[2] $\n"),
            "t.graph:2:20: error: unexpected character '$'");
  EXPECT_EQ(parseError("graph \"g\"\n  input %x: f32[2]\n  %y: f32[2] = Frob \"r\"(%x)\n"),
            "t.graph:3:16: error: node 'r' (Frob): unsupported operator");
  EXPECT_EQ(parseError("graph \"g\"\n  input %x: f32[2]\n  input %x: f32[2]\n"),
            "t.graph:3:9: error: value '%x' is already defined");
  EXPECT_EQ(parseError("graph \"g\"\n  group 1 \"a\" on npu\n"),
            "t.graph:2:9: error: group ids count up from 0 in order: expected 0, found 1");
  EXPECT_EQ(parseError("graph \"g\"\n  input %x: f32[2]\n  %y: f32[2] = Relu \"r\"(%x) "
                       "{a=[1, 2.0]}\n"),
            "t.graph:3:33: error: a list attribute mixes integers and floats (write every float "
            "with a '.')");
  EXPECT_EQ(parseError("graph \"g\n"), "t.graph:1:7: error: unterminated string");
  EXPECT_EQ(parseError("  input %x: f32[2]\n"), "t.graph:1:3: error: expected 'graph', found "
                                                "'input'");
}

} // namespace
