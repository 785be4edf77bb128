// DiffUtil.h - the differential check shared by the pass and coverage tests: a function before
// and after a transformation, run by the interpreter (Interp.h) on the same random inputs, must
// leave every buffer equal; the result must also verify and print/re-parse to the same text.
#pragma once

#include "Interp.h"

#include "isa/Target.h"
#include "npu/isel/Passes.h"
#include "tir/Parser.h"
#include "tir/PassManager.h"
#include "tir/Printer.h"
#include "tir/Verify.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace npuc::tir::test {

// The normalisation passes in front of PreProcess and emission.
inline const char *kPipeline = kNormalisationPipeline;

inline std::vector<std::vector<double>> randomParams(const PrimFunc &f, unsigned seed) {
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

inline const std::string kTargetPath = std::string(NPUC_SOURCE_DIR) + "/configs/npu-base.yaml";

inline const isa::Target &target() {
  static const isa::Target t = isa::loadTarget(kTargetPath);
  return t;
}

// Every pass `npuc opt` knows: the core's and instruction selection's.
inline PassRegistry allPasses() {
  PassRegistry r;
  registerCorePasses(r);
  registerIselPasses(r);
  return r;
}

inline std::vector<PipelineEntry> pipeline(const std::string &spec) {
  return parsePipeline(allPasses(), spec);
}

// The pass's pipeline entry; passes that read a target get npu-base.
inline std::string passSpec(const PassInfo &p) {
  for (const PassOption &o : p.options)
    if (std::string(o.name) == "target")
      return std::string(p.name) + "{target=" + kTargetPath + "}";
  return p.name;
}

inline void expectSameResults(const PrimFunc &before, const PrimFunc &after,
                              const std::string &what) {
  SCOPED_TRACE(what + "\n--- before\n" + toText(before) + "--- after\n" + toText(after));
  EXPECT_TRUE(verifyErrors(after).empty());
  EXPECT_EQ(toText(parseFunc(toText(after))), toText(after));
  for (unsigned seed : {1u, 2u}) {
    std::vector<std::vector<double>> a = randomParams(before, seed), b = a;
    Interp ia, ib;
    ia.vectorOps = ib.vectorOps = target().vector.ops;
    ia.run(before, a);
    ib.run(after, b);
    for (size_t p = 0; p < a.size(); ++p)
      for (size_t i = 0; i < a[p].size(); ++i)
        ASSERT_NEAR(a[p][i], b[p][i], 1e-6 * (1 + std::abs(a[p][i])))
            << "parameter " << before.params[p]->name << " element " << i;
  }
}

} // namespace npuc::tir::test
