// Pipeline.h - the segment pipeline: a SegmentPlan through the phases of Phases.def.
//
// compileSegment (npu/pipeline/Compile.h) is initSegmentPlan + runPhases over every phase. Between
// phases the verifier checks the plan (CompileOptions::verifyPhases, on by default), and the
// PhaseControl of CompileOptions::phases prints the plan, stops, or times the phases.
#pragma once

#include "npu/pipeline/SegmentPlan.h"
#include "support/CrashContext.h"

#include <ostream>
#include <string>
#include <vector>

namespace npuc::npu {

/// Sets the request (graph, steps, target, options) and the hardware roles. Bad input (a target
/// the NPU backend cannot compile for, an int8 target without scales) is an npuc::Error.
void initSegmentPlan(SegmentPlan &p, const graph::Graph &g, const std::vector<int> &groupIds,
                     const isa::Target &t, const CompileOptions &opt);

/// Runs the phases after p.done up to and including `last` (or up to CompileOptions::phases'
/// stopAfter, if earlier). Returns the first phase's Reject, if any.
std::optional<Reject> runPhases(SegmentPlan &p, Phase last);

/// What a crash report says while `action` (for example "lowering") runs on unit `u` of the
/// segment, with the unit's group as the reproducer (support/CrashContext.h).
CrashScope unitCrashScope(const SegmentPlan &p, const EmitUnit &u, const char *action);

/// CompileOptions::debugCrashAt: an internal error when `phase` is the one asked for.
void debugCrashPoint(const SegmentPlan &p, Phase phase);

/// The invariants the plan breaks, as far as its phases have run (empty: none). Each message
/// names the invariant and the tensor, step or run that breaks it.
std::vector<std::string> verifyPlan(const SegmentPlan &p);

/// The plan as decided so far, in a stable text (FileCheck tests read it).
void printPlan(const SegmentPlan &p, std::ostream &os);

} // namespace npuc::npu
