// PassDiffTest.cpp - differential tests of the passes: every function of the lit pass tests and
// the loop nests lowerGroup produces for padded convolutions, border pooling windows, pads,
// transposes and softmax are run through each pass alone and through the whole normalisation
// pipeline; the interpreter (Interp.h) gives the same buffers before and after, on random
// inputs. Every result is also verified and must print and re-parse to the same text.
#include "Interp.h"
#include "TestGraphs.h"

#include "isa/Target.h"
#include "tir/LowerOps.h"
#include "tir/Parser.h"
#include "tir/PassManager.h"
#include "tir/Printer.h"
#include "tir/Verify.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

using namespace npuc;
using namespace npuc::tir;
using graph::Graph;
using graph::ValueId;
using testgraphs::input;
using testgraphs::node;

namespace {

const char *kPipeline = "simplify,if-promotion,loop-partition,loop-shift,loop-fission,"
                        "loop-collapse,remove-no-op,simplify";

std::vector<std::vector<double>> randomParams(const PrimFunc &f, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> real(-2, 2);
  std::uniform_int_distribution<int> small(0, 3);
  std::vector<std::vector<double>> out;
  for (const Buffer &b : f.params) {
    std::vector<double> v(static_cast<size_t>(b->numElements()));
    for (double &x : v)
      x = b->dtype.isFloat() ? real(rng) : small(rng);
    out.push_back(v);
  }
  return out;
}

const std::string kTargetPath = std::string(NPUC_SOURCE_DIR) + "/configs/npu-base.yaml";

const isa::Target &target() {
  static const isa::Target t = isa::loadTarget(kTargetPath);
  return t;
}

// The pass's pipeline entry; passes that read a target get npu-base.
std::string passSpec(const PassInfo &p) {
  for (const PassOption &o : p.options)
    if (std::string(o.name) == "target")
      return std::string(p.name) + "{target=" + kTargetPath + "}";
  return p.name;
}

void expectSameResults(const PrimFunc &before, const PrimFunc &after, const std::string &what) {
  SCOPED_TRACE(what + "\n--- before\n" + toText(before) + "--- after\n" + toText(after));
  EXPECT_TRUE(verifyErrors(after).empty());
  EXPECT_EQ(toText(parseFunc(toText(after))), toText(after));
  for (unsigned seed : {1u, 2u}) {
    std::vector<std::vector<double>> a = randomParams(before, seed), b = a;
    test::Interp ia, ib;
    ia.vectorOps = ib.vectorOps = target().vector.ops;
    ia.run(before, a);
    ib.run(after, b);
    for (size_t p = 0; p < a.size(); ++p)
      for (size_t i = 0; i < a[p].size(); ++i)
        ASSERT_NEAR(a[p][i], b[p][i], 1e-6 * (1 + std::abs(a[p][i])))
            << "parameter " << before.params[p]->name << " element " << i;
  }
}

void checkAllPasses(const PrimFunc &f) {
  for (const PassInfo &p : passTable()) {
    PassManager pm(parsePipeline(passSpec(p)));
    expectSameResults(f, pm.run(f), std::string("pass ") + p.name);
  }
  PassManager pm(parsePipeline(kPipeline));
  expectSameResults(f, pm.run(f), "the normalisation pipeline");
  std::string target = "{target=" + kTargetPath + "}";
  PassManager emit(
      parsePipeline(std::string(kPipeline) + ",pre-process" + target + ",emit-npu" + target));
  expectSameResults(f, emit.run(f), "normalisation, pre-process and emission");
}

TEST(PassDiff, LitCorpus) {
  const char *files[] = {"loop-shift",   "remove-no-op",    "loop-collapse",  "loop-fission",
                         "if-promotion", "if-promotion-z3", "loop-partition", "loop-partition-z3",
                         "pre-process",  "emit-npu"};
  int functions = 0;
  for (const char *name : files) {
    std::string path = std::string(NPUC_SOURCE_DIR) + "/tests/lit/transform/" + name + ".tir";
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    std::stringstream ss;
    ss << in.rdbuf();
    // The split markers are comments, so a whole file parses as one list of functions.
    for (const PrimFunc &f : parseFuncs(ss.str(), {path, 1})) {
      SCOPED_TRACE(path + ": " + f.name);
      checkAllPasses(f);
      ++functions;
    }
  }
  EXPECT_GE(functions, 15);
}

void checkEachNode(Graph &g) {
  testgraphs::forEachNodeLowered(g, [](const PrimFunc &f) { checkAllPasses(f); });
}

TEST(PassDiff, LoweredOperators) {
  Graph g;
  ValueId x = input(g, "x", {1, 2, 7, 5}); // odd, prime extents
  ValueId w = g.addConstant("w", {3, 2, 3, 3}, std::vector<float>(54, 0.25f));
  node(g, "Conv", {x, w}, {1, 3, 4, 3},
       {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  std::map<std::string, graph::AttrValue> win{{"kernel_shape", std::vector<int64_t>{3, 3}},
                                              {"strides", std::vector<int64_t>{2, 2}},
                                              {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  node(g, "MaxPool", {x}, {1, 2, 4, 3}, win);
  node(g, "AveragePool", {x}, {1, 2, 4, 3}, win);
  node(g, "Pad", {x}, {1, 2, 9, 8}, {{"pads", std::vector<int64_t>{0, 0, 1, 2, 0, 0, 1, 1}}});
  node(g, "Transpose", {x}, {1, 5, 7, 2}, {{"perm", std::vector<int64_t>{0, 3, 2, 1}}});
  node(g, "Softmax", {x}, {1, 2, 7, 5}, {{"axis", int64_t{2}}});
  node(g, "Concat", {x, x}, {1, 2, 14, 5}, {{"axis", int64_t{2}}});
  checkEachNode(g);
}

} // namespace
