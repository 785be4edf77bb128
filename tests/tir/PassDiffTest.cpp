// PassDiffTest.cpp - differential tests of the passes: every function of the lit pass tests and
// the loop nests lowerGroup produces for padded convolutions, border pooling windows, pads,
// transposes and softmax are run through each pass alone and through the whole normalisation
// pipeline; the interpreter (Interp.h) gives the same buffers before and after, on random
// inputs. Every result is also verified and must print and re-parse to the same text.
#include "DiffUtil.h"
#include "TestGraphs.h"

#include "lowering/LowerOps.h"
#include "tir/Parser.h"
#include "tir/PassManager.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace npuc;
using namespace npuc::tir;
using graph::Graph;
using graph::ValueId;
using test::expectSameResults;
using test::kPipeline;
using test::kTargetPath;
using test::passSpec;
using testgraphs::input;
using testgraphs::node;

namespace {

void checkAllPasses(const PrimFunc &f) {
  PassContext ctx;
  PassRegistry passes = test::allPasses();
  for (const PassInfo &p : passes.passes()) {
    PassManager pm(test::pipeline(passSpec(p)), ctx);
    expectSameResults(f, pm.run(f), std::string("pass ") + p.name);
  }
  PassManager pm(test::pipeline(kPipeline), ctx);
  expectSameResults(f, pm.run(f), "the normalisation pipeline");
  std::string target = "{target=" + kTargetPath + "}";
  PassManager emit(
      test::pipeline(std::string(kPipeline) + ",pre-process" + target + ",emit-npu" + target), ctx);
  expectSameResults(f, emit.run(f), "normalisation, pre-process and emission");
}

TEST(PassDiff, LitCorpus) {
  const char *files[] = {"loop-shift",    "remove-no-op",    "loop-collapse",   "loop-fission",
                         "if-promotion",  "if-promotion-z3", "loop-partition",  "loop-partition-z3",
                         "pre-process",   "emit-npu",        "storage-flatten", "bound-simplify",
                         "loop-split-div"};
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
  node(g, graph::OpKind::Conv, {x, w}, {1, 3, 4, 3},
       {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  std::map<std::string, graph::AttrValue> win{{"kernel_shape", std::vector<int64_t>{3, 3}},
                                              {"strides", std::vector<int64_t>{2, 2}},
                                              {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  node(g, graph::OpKind::MaxPool, {x}, {1, 2, 4, 3}, win);
  node(g, graph::OpKind::AveragePool, {x}, {1, 2, 4, 3}, win);
  node(g, graph::OpKind::Pad, {x}, {1, 2, 9, 8},
       {{"pads", std::vector<int64_t>{0, 0, 1, 2, 0, 0, 1, 1}}});
  node(g, graph::OpKind::Transpose, {x}, {1, 5, 7, 2},
       {{"perm", std::vector<int64_t>{0, 3, 2, 1}}});
  node(g, graph::OpKind::Softmax, {x}, {1, 2, 7, 5}, {{"axis", int64_t{2}}});
  node(g, graph::OpKind::Concat, {x, x}, {1, 2, 14, 5}, {{"axis", int64_t{2}}});
  checkEachNode(g);
}

} // namespace
