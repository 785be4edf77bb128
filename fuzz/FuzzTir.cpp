// FuzzTir.cpp - the TIR text parser, the verifier and the loop-normalisation pipeline on
// arbitrary text (tir/Parser.h, tir/PassManager.h). A function the parser accepts and the
// verifier passes must go through the pipeline without a crash; the pipeline's output must
// verify again (PassManager checks after every pass).
#include "fuzz/FuzzUtil.h"
#include "tir/Parser.h"
#include "tir/PassManager.h"
#include "tir/Verify.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<npuc::tir::PrimFunc> funcs;
  try {
    funcs = npuc::tir::parseFuncs(npuc::fuzz::asText(data, size), {"fuzz.tir", 1});
  } catch (const npuc::Error &) {
    return 0;
  }
  npuc::tir::PassRegistry registry;
  npuc::tir::registerCorePasses(registry);
  npuc::tir::PassContext ctx;
  npuc::tir::PassManager pm(npuc::tir::parsePipeline(registry, npuc::tir::kNormalisationPipeline),
                            ctx);
  for (const npuc::tir::PrimFunc &f : funcs) {
    if (!npuc::tir::verifyErrors(f).empty())
      continue; // `npuc opt` rejects these with the verifier's message
    try {
      (void)pm.run(f);
    } catch (const npuc::Error &) {
    }
  }
  return 0;
}
