// GroupPhases.cpp - the phases that decide per group: which kernel runs it (plan-groups), its
// int8 scales (quantise), and whether a group of layout ops becomes a view of a layout chosen
// at its producer or at the host (choose-layouts).
#include "npu/pipeline/SegmentPlan.h"

#include "support/Error.h"

#include <algorithm>

namespace npuc::npu {

PhaseResult phasePlanGroups(SegmentPlan &p) {
  p.plans.clear();
  for (size_t i = 0; i < p.groupIds.size(); ++i) {
    p.plans.push_back(planGroup(*p.g, p.group(i), p.hw));
    NPUC_ASSERT(p.plans.back().reject.empty(),
                "placement only puts groups the NPU accepts on it: " + p.plans.back().reject);
  }
  return {};
}

PhaseResult phaseQuantise(SegmentPlan &p) {
  if (!p.hw.quantised())
    return {};
  const graph::Graph &g = *p.g;
  const QuantTable &q = *p.opt.quant; // compileSegment checked it is there
  for (GroupPlan &gp : p.plans) {
    gp.quant.calibrated = true;
    // The main input may be a constant (a Concat whose first part is one: ViT's class token
    // before the patch embeddings), which calibration leaves out.
    if (gp.input != graph::kNoValue)
      gp.quant.in = q.ofOperand(g, gp.input);
    gp.quant.out = q.of(gp.output);
    for (const EpilogueOp &e : gp.epilogue)
      if (e.tensor != graph::kNoValue)
        gp.quant.tensors[e.tensor] = q.of(e.tensor);
    for (const ConcatParams::Part &part : gp.concat.parts)
      if (!g.value(part.value).isConstant())
        gp.quant.tensors[part.value] = q.of(part.value);
  }
  return {};
}

namespace {

// A group of layout ops that moves bytes needs no copy when whoever writes its input or reads
// its output can use another layout: when nothing later in the segment reads its output, the
// host reads the output in the layout that makes the transforms cancel (its input aliased as
// is); when its input comes from the host, or from a batched MatMul of the segment (which stores
// through element strides, LowerBatchMatmul.cpp), and nothing else reads it, the host or the
// MatMul writes the input in the layout that makes them cancel. packTensor and unpackTensor
// convert any dim order. Returns why step i becomes a view ("" when it does not).
std::string chooseFor(SegmentPlan &p, size_t i, const std::map<graph::ValueId, size_t> &producer) {
  const graph::Graph &g = *p.g;
  // Whether a group of the segment other than step `self` reads v.
  auto readElsewhere = [&](graph::ValueId v, size_t self) {
    for (size_t j = 0; j < p.groupIds.size(); ++j) {
      const auto &ins = p.group(j).inputs;
      if (j != self && std::find(ins.begin(), ins.end(), v) != ins.end())
        return true;
    }
    return false;
  };
  const graph::FusedGroup &grp = p.group(i);
  const LayoutChain lc = analyzeLayoutChain(g, grp);
  std::map<graph::ValueId, DramLayout> &chosen = p.chosen.layout;
  if (!lc.layoutOnly || lc.cancels || g.value(lc.input).isConstant() || chosen.count(lc.input))
    return "";
  const auto made = producer.find(lc.input);
  const std::string &in = g.value(lc.input).name;
  const std::vector<graph::NodeId> readers = g.consumers(lc.input);
  const bool onlyThisGroup = std::all_of(readers.begin(), readers.end(), [&](graph::NodeId n) {
    return std::find(grp.nodes.begin(), grp.nodes.end(), n) != grp.nodes.end();
  });
  if (lc.outputAs && !readElsewhere(lc.output, i)) {
    chosen[lc.output] = *lc.outputAs;
    return fmt::format("the host reads '{}' in layout {}", g.value(lc.output).name,
                       lc.outputAs->name());
  }
  if (lc.inputAs && made == producer.end() && !readElsewhere(lc.input, i)) {
    chosen[lc.input] = *lc.inputAs;
    return fmt::format("the host writes '{}' in layout {}", in, lc.inputAs->name());
  }
  // A batched product stores its output through strides; no residual of the output's shape may
  // be read through the same strides (tensorOperands). Attention's residuals are the scores'.
  auto stridedOutput = [&](GroupPlan &mm) -> BatchMatmulParams::Operand * {
    if (mm.kind == KernelKind::BatchMatmul && tensorOperands(mm) == 0)
      return &mm.bmm.y;
    return mm.kind == KernelKind::Attention ? &mm.attn.pv.y : nullptr;
  };
  if (lc.inputAs && made != producer.end() && stridedOutput(p.plans[made->second]) &&
      !g.isGraphOutput(lc.input) && onlyThisGroup) {
    GroupPlan &mm = p.plans[made->second];
    const Shape &y = g.value(lc.input).shape;
    setOperandStrides(y, y, layoutStrides(y, *lc.inputAs), *stridedOutput(mm));
    chosen[lc.input] = *lc.inputAs;
    return fmt::format("the batched MatMul '{}' stores '{}' in layout {}",
                       p.group(made->second).name, in, lc.inputAs->name());
  }
  return "";
}

} // namespace

PhaseResult phaseChooseLayouts(SegmentPlan &p) {
  if (!p.opt.chooseLayouts)
    return {};
  std::map<graph::ValueId, size_t> producer; // value -> step
  for (size_t j = 0; j < p.groupIds.size(); ++j)
    for (graph::ValueId v : p.group(j).outputs)
      producer[v] = j;
  for (size_t i = 0; i < p.groupIds.size(); ++i) {
    if (p.plans[i].kind != KernelKind::LoopNest)
      continue;
    std::string why = chooseFor(p, i, producer);
    if (why.empty())
      continue;
    p.chosen.why[i] = std::move(why);
    const LayoutChain lc = analyzeLayoutChain(*p.g, p.group(i));
    GroupPlan view;
    view.kind = KernelKind::View;
    view.input = lc.input;
    view.output = lc.output;
    view.layout = lc;
    view.quant = p.plans[i].quant;
    p.plans[i] = std::move(view);
  }
  return {};
}

} // namespace npuc::npu
