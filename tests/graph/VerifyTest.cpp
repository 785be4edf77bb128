// VerifyTest.cpp - the graph verifier graph-opt runs between passes (graph/Verify.h): a valid
// graph has no problems, and each broken invariant is reported by name.
#include "graph/Passes.h"
#include "graph/Verify.h"
#include "tests/common/GraphText.h"

#include <gtest/gtest.h>

using namespace npuc;
using namespace npuc::graph;
using namespace npuc::test;

namespace {

Graph fused() {
  Graph g = graphFromText(R"(graph "v"
    input %x: f32[1x4]
    %a: f32[1x4] = Relu "a"(%x)
    %b: f32[1x4] = Neg "b"(%a)
    %c: f32[1x4] = Softmax "c"(%b) {axis=1}
    output %c)");
  fuseOps(g);
  return g;
}

TEST(Verify, AFusedGraphIsValid) {
  Graph g = fused();
  ASSERT_EQ(g.groups.size(), 2u); // Relu + Neg, and the opaque Softmax
  EXPECT_EQ(verifyGraph(g), std::vector<std::string>{});
}

TEST(Verify, ARewriteAfterFusionLeavesGroupsNamingRemovedNodes) {
  Graph g = fused();
  // What a rewrite pass would do: bypass the Neg, leaving it dead in group 0.
  g.node(nodeNamed(g, "b")).dead = true;
  g.replaceAllUses(valueNamed(g, "b"), valueNamed(g, "a"));
  std::vector<std::string> p = verifyGraph(g);
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p[0], "group 0 'a' lists a node that is not live (id 1)");
}

TEST(Verify, StaleBoundaryAndUngroupedNodes) {
  Graph g = fused();
  g.groups[1].inputs.clear();
  std::vector<std::string> p = verifyGraph(g);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0], "group 1 'c': its boundary is inputs [] outputs [%c], its nodes give inputs "
                  "[%b] outputs [%c]");
  g = fused();
  g.groups.pop_back();
  EXPECT_EQ(verifyGraph(g), std::vector<std::string>{"node 'c' (Softmax) is in no group"});
}

TEST(Verify, ReadsOfValuesNothingDefines) {
  Graph g = fused();
  g.groups.clear();
  g.node(nodeNamed(g, "a")).dead = true; // %a now has no live producer; the Neg still reads it
  EXPECT_EQ(verifyGraph(g), std::vector<std::string>{
                                "node 'b' (Neg) reads value 1, which nothing live defines"});
}

} // namespace
