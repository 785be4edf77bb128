// PassRegistryTest.cpp - the pass registry and the pass context: which passes a registry knows
// depends on who registered them, parsed pipelines carry every option's value, and what passes
// keep between runs (loaded targets, Z3 answers) lives in the caller's context, one per context.
#include "DiffUtil.h"

#include "npu/isel/Passes.h"
#include "support/Error.h"
#include "tir/Parser.h"
#include "tir/PassManager.h"

#include <gtest/gtest.h>

using namespace npuc;
using namespace npuc::tir;

namespace {

std::string parseError(const PassRegistry &r, const std::string &spec) {
  try {
    parsePipeline(r, spec);
  } catch (const npuc::Error &e) {
    return e.what();
  }
  return "";
}

TEST(PassRegistry, TheCoreAloneKnowsNoTargetPasses) {
  PassRegistry core;
  registerCorePasses(core);
  EXPECT_EQ(core.find("emit-npu"), nullptr);
  EXPECT_EQ(core.find("pre-process"), nullptr);
  EXPECT_EQ(parseError(core, "simplify,emit-npu"),
            "pipeline 'simplify,emit-npu': unknown pass 'emit-npu' (known: simplify, remove-no-op, "
            "loop-shift, loop-collapse, loop-partition, loop-fission, if-promotion, "
            "loop-split-div, bound-simplify, storage-flatten)");
}

TEST(PassRegistry, InstructionSelectionAddsItsPassesAfterTheCore) {
  PassRegistry r;
  registerCorePasses(r);
  registerIselPasses(r);
  std::vector<std::string> names;
  for (const PassInfo &p : r.passes())
    names.push_back(p.name);
  std::vector<std::string> want = {"simplify",        "remove-no-op",   "loop-shift",
                                   "loop-collapse",   "loop-partition", "loop-fission",
                                   "if-promotion",    "loop-split-div", "bound-simplify",
                                   "storage-flatten", "pre-process",    "emit-npu"};
  EXPECT_EQ(names, want);
}

TEST(PassRegistry, APassRegisteredTwiceIsACompilerBug) {
  PassRegistry r;
  registerCorePasses(r);
  EXPECT_DEATH(registerCorePasses(r), "pass simplify is registered twice");
}

TEST(PassRegistry, ParsedPipelinesCarryEveryOptionsValue) {
  PassRegistry r;
  registerCorePasses(r);
  std::vector<PipelineEntry> p = parsePipeline(r, "loop-shift,loop-partition{z3=0}");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_TRUE(p[0].options.empty());
  // z3 as given, the others at the defaults --list-passes shows.
  PassOptions want = {{"max-pieces", "5"}, {"z3", "0"}, {"z3-timeout-ms", "200"}};
  EXPECT_EQ(p[1].options, want);
}

const char *kFill = R"(func f(A: float32[4] @l1) {
  for (i, 0, 4) {
    A[i] = 0.0f
  }
})";

TEST(PassContext, LoadsEachTargetOncePerContext) {
  PrimFunc f = parseFunc(kFill);
  std::string base = std::string(NPUC_SOURCE_DIR) + "/configs/npu-base.yaml";
  std::string tiny = std::string(NPUC_SOURCE_DIR) + "/configs/npu-tiny.yaml";
  PassContext ctx;
  EXPECT_EQ(ctx.state<LoadedTargets>().size(), 0u);
  PassManager emit(test::pipeline("pre-process{target=" + base + "},emit-npu{target=" + base + "}"),
                   ctx);
  emit.run(f);
  emit.run(f);
  EXPECT_EQ(ctx.state<LoadedTargets>().size(), 1u); // two passes, two runs, one path
  PassManager other(test::pipeline("emit-npu{target=" + tiny + "}"), ctx);
  other.run(f);
  EXPECT_EQ(ctx.state<LoadedTargets>().size(), 2u);
  PassContext fresh; // another caller's context starts with nothing loaded
  EXPECT_EQ(fresh.state<LoadedTargets>().size(), 0u);
}

TEST(PassContext, KeepsZ3AnswersForItsOwnRunsOnly) {
  // i * i + 1 > 0 over i in [-4, 12): the rules cannot decide it, Z3 can (if-promotion-z3.tir).
  PrimFunc f = parseFunc(R"(func square(A: float32[16] @global) {
  for (i, -4, 12) {
    if (i * i + 1 > 0) {
      A[i + 4] = 1.0f
    }
  }
})");
  PassContext ctx;
  PassManager pm(test::pipeline("if-promotion"), ctx);
  PrimFunc out = pm.run(f);
  EXPECT_EQ(toText(out).find("if ("), std::string::npos) << toText(out);
  size_t asked = ctx.proverCache().size();
  EXPECT_GE(asked, 1u);
  pm.run(f); // the same questions again: answered from the cache, nothing added
  EXPECT_EQ(ctx.proverCache().size(), asked);
  PassContext other;
  EXPECT_EQ(other.proverCache().size(), 0u);
}

} // namespace
