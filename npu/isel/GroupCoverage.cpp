// GroupCoverage.cpp - loop-analysis emission on a fused group's reference nest (Coverage.h), for
// `npuc inspect --loops`, and the scope move it and the coverage corpus use.
#include "npu/isel/Coverage.h"

#include "npu/isel/EmitNpu.h"
#include "npu/isel/PreProcess.h"
#include "tir/IRMutator.h"
#include "tir/PassManager.h"

#include <fmt/format.h>

#include <unordered_map>

namespace npuc::tir {
namespace {

class Rescope : public IRMutator {
public:
  explicit Rescope(std::string scope) : scope_(std::move(scope)) {}
  Buffer mutateBuffer(const Buffer &b) override {
    auto it = map_.find(b.get());
    if (it == map_.end())
      it = map_.emplace(b.get(), Buffer::make(b->name, b->dtype, b->shape, scope_)).first;
    return it->second;
  }

private:
  std::string scope_;
  std::unordered_map<const BufferNode *, Buffer> map_;
};

} // namespace

PrimFunc withScope(const PrimFunc &f, const std::string &scope) {
  Rescope m(scope);
  PrimFunc out = f;
  for (Buffer &b : out.params)
    b = m.mutateBuffer(b);
  out.body = m.mutate(f.body);
  return out;
}

GroupCoverage analyseNest(const PrimFunc &reference, const isa::Target &t) {
  GroupCoverage out;
  if (t.vector.levels.empty()) {
    out.error = "the target's vector unit reads no memory level";
    return out;
  }
  PrimFunc f = withScope(reference, t.levels.at(static_cast<size_t>(t.vector.levels.front())).name);
  out.before = measureCoverage(emitNpu(f, t), t);
  PassRegistry passes;
  registerCorePasses(passes);
  PassContext ctx;
  PassManager pm(parsePipeline(passes, kNormalisationPipeline), ctx);
  out.after = measureCoverage(emitNpu(preProcess(pm.run(f), t), t, &out.scalar), t);
  return out;
}

std::string describe(const GroupCoverage &c, size_t maxScalar) {
  if (!c.error.empty())
    return "loop analysis: not available (" + c.error + ")";
  std::string issued;
  for (const auto &[m, n] : c.after.issued)
    issued += fmt::format(" {}={}", m, n);
  std::string line = fmt::format(
      "loop analysis (reference nest in on-chip scope, normalised, emit-npu): "
      "{:.1f}% of {} work units as instructions (tensor {}, vector {}, dma {}), "
      "scalar {}; without normalisation {:.1f}%; issued:{}",
      100 * c.after.instrFraction(), c.after.total(), c.after.tensor, c.after.vector, c.after.dma,
      c.after.scalar, 100 * c.before.instrFraction(), issued.empty() ? " none" : issued);
  for (size_t i = 0; i < c.scalar.size() && i < maxScalar; ++i)
    line += "\n      scalar: " + c.scalar[i];
  if (c.scalar.size() > maxScalar)
    line += fmt::format("\n      ... and {} more scalar nest(s)", c.scalar.size() - maxScalar);
  return line;
}

} // namespace npuc::tir
