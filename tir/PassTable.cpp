// PassTable.cpp - THE list of the core's TIR passes (see PassManager.h); the target-dependent
// ones are instruction selection's (npu/isel/IselPasses.cpp). Adding a pass: one file pair in
// tir/transform/, one entry here, lit tests in tests/lit/transform/.
#include "support/Error.h"
#include "tir/PassManager.h"
#include "tir/Simplify.h"
#include "tir/transform/BoundSimplify.h"
#include "tir/transform/IfPromotion.h"
#include "tir/transform/LoopCollapse.h"
#include "tir/transform/LoopFission.h"
#include "tir/transform/LoopPartition.h"
#include "tir/transform/LoopShift.h"
#include "tir/transform/LoopSplitDiv.h"
#include "tir/transform/RemoveNoOp.h"
#include "tir/transform/StorageFlatten.h"

namespace npuc::tir {
namespace {

// The prover of a pass run under `ctx`: Z3's answers are kept in the context's cache.
ProverOptions proverOptions(const char *pass, const PassOptions &o, PassContext &ctx) {
  ProverOptions po;
  po.useZ3 = passOptionInt(pass, o, "z3") != 0;
  int64_t t = passOptionInt(pass, o, "z3-timeout-ms");
  if (t <= 0)
    npuc::fail("pass '{}': z3-timeout-ms must be positive, not {}", pass, t);
  po.timeoutMs = static_cast<unsigned>(t);
  po.cache = &ctx.proverCache();
  return po;
}

} // namespace

const char *const kNormalisationPipeline = "simplify,loop-split-div,if-promotion{z3=0},loop-"
                                           "partition{z3=0},bound-simplify,loop-shift,loop-fission,"
                                           "loop-collapse,remove-no-op,simplify";

void registerCorePasses(PassRegistry &r) {
  const PassInfo passes[] = {
      {"simplify",
       "constant folding and local algebraic rewrites of every expression; drops dead loops",
       {},
       [](const PrimFunc &f, const PassOptions &, PassContext &) {
         PrimFunc out = f;
         out.body = simplify(f.body);
         return out;
       }},
      {"remove-no-op",
       "deletes statements without effect and the loops/ifs/allocations left empty",
       {},
       [](const PrimFunc &f, const PassOptions &, PassContext &) { return removeNoOp(f); }},
      {"loop-shift",
       "rebases every loop to start at 0",
       {},
       [](const PrimFunc &f, const PassOptions &, PassContext &) { return loopShift(f); }},
      {"loop-collapse",
       "merges perfectly nested loops whose buffer accesses are contiguous over both",
       {},
       [](const PrimFunc &f, const PassOptions &, PassContext &) { return loopCollapse(f); }},
      {"loop-partition",
       "splits loops where a condition changes value, leaving condition-free middle parts",
       {{"max-pieces", "5", "leave a loop alone that would need more pieces"},
        {"z3", "1", "ask Z3 when the interval/modular rules cannot decide a condition"},
        {"z3-timeout-ms", "200", "Z3 time per query"}},
       [](const PrimFunc &f, const PassOptions &o, PassContext &ctx) {
         LoopPartitionOptions lo;
         lo.prover = proverOptions("loop-partition", o, ctx);
         lo.maxPieces = static_cast<int>(passOptionInt("loop-partition", o, "max-pieces"));
         if (lo.maxPieces < 1)
           npuc::fail("pass 'loop-partition': max-pieces must be at least 1");
         return loopPartition(f, lo);
       }},
      {"loop-fission",
       "splits a loop whose body is a sequence into one loop per independent statement",
       {},
       [](const PrimFunc &f, const PassOptions &, PassContext &) { return loopFission(f); }},
      {"if-promotion",
       "hoists loop-invariant conditions out of loops; removes conditions decided on the range",
       {{"z3", "1", "ask Z3 when the interval/modular rules cannot decide a condition"},
        {"z3-timeout-ms", "200", "Z3 time per query"}},
       [](const PrimFunc &f, const PassOptions &o, PassContext &ctx) {
         return ifPromotion(f, proverOptions("if-promotion", o, ctx));
       }},
      {"loop-split-div",
       "splits a loop by the constant its variable is floor-divided by, when it divides the extent",
       {},
       [](const PrimFunc &f, const PassOptions &, PassContext &) { return loopSplitDiv(f); }},
      {"bound-simplify",
       "removes integer min/max decided by the enclosing loops' ranges (clamped indices)",
       {},
       [](const PrimFunc &f, const PassOptions &, PassContext &) { return boundSimplify(f); }},
      {"storage-flatten",
       "lays allocated multi-dimensional buffers out flat, each row starting at a multiple of "
       "row-align elements",
       {{"row-align", "1", "row stride granule in elements (rows are padded up to it)"}},
       [](const PrimFunc &f, const PassOptions &o, PassContext &) {
         int64_t a = passOptionInt("storage-flatten", o, "row-align");
         if (a < 1)
           npuc::fail("pass 'storage-flatten': row-align must be at least 1, not {}", a);
         return storageFlatten(f, a);
       }},
  };
  for (const PassInfo &p : passes)
    r.add(p);
}

} // namespace npuc::tir
