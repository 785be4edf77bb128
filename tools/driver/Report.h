// Report.h - the performance report (JSON, schema in docs/REPORT.md), its text form, and the
// merged Chrome trace of a model run.
//
// Whole-model numbers are sums over NPU segments (segments run back to back, never overlapped);
// per-group NPU cycles are the span of the group's instructions in the simulator trace, so they
// include pipeline fill and stalls but not work of other groups that merely overlaps in time.
#pragma once

#include "tools/driver/Compiler.h"
#include "tools/driver/Runtime.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace npuc::driver {

/// Builds the report of one run; `runs` is parallel to m.segments, `code` says where the CPU
/// groups' machine code came from.
nlohmann::json buildReport(const CompiledModel &m, const std::vector<SegmentRun> &runs,
                           const CpuCodeUse &code);

/// The report of a single hand-written program run (`npuc sim`): the model-independent fields.
nlohmann::json buildProgramReport(const isa::Target &t, const sim::SimStats &stats);

/// One Chrome trace: each NPU segment's sim::traceToJson events shifted to the segment's start,
/// plus a "cpu" track with one event per CPU group (its wall time converted to cycles at the
/// target's clock, so NPU and CPU work share one time axis).
std::string buildTrace(const CompiledModel &m, const std::vector<SegmentRun> &runs);

/// A group's bank-aware placement record (npu::BankReport), as stored in packages and reports.
nlohmann::json bankReportToJson(const npu::BankReport &b);

/// A segment's runs executed sub-batch by sub-batch (npu::BatchSplitEntry), as stored in
/// packages and reports.
nlohmann::json batchSplitToJson(const npu::Segment &ns);
/// A segment's runs executed depth-first, band by band (npu::DepthFirstEntry), likewise.
nlohmann::json depthFirstToJson(const npu::Segment &ns);

/// The short human-readable report `npuc run` prints.
std::string formatReport(const nlohmann::json &report);

/// The ONNX op types of a group's nodes, in node order (the report's `ops`).
std::vector<std::string> groupOps(const graph::Graph &g, const graph::FusedGroup &grp);

} // namespace npuc::driver
