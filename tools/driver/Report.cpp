// Report.cpp - report JSON, text report and merged trace (contract in Report.h).
//
// The JSON report is the machine-readable source of truth; the text report is rendered from the
// JSON (not from the raw stats) so that the two can never disagree.
#include "tools/driver/Report.h"

#include "tools/driver/DramAccounting.h"

#include "graph/Passes.h"
#include "isa/Costs.h"
#include "simulator/Energy.h"
#include "simulator/StatsSum.h"
#include "simulator/TraceSpans.h"

#include "support/Error.h"

#include <algorithm>

namespace npuc::driver {

using nlohmann::json;

namespace {

json engineJson(const isa::Target &t, const std::vector<sim::EngineStats> &engines,
                int64_t totalCycles) {
  json out = json::object();
  for (size_t i = 0; i < engines.size(); ++i) {
    const sim::EngineStats &e = engines[i];
    std::string name = e.name.empty() && i < t.engines.size() ? t.engines[i].name : e.name;
    out[name] = {
        {"busy_cycles", e.busyCycles},
        {"busy_pct", totalCycles > 0 ? 100.0 * double(e.busyCycles) / double(totalCycles) : 0.0},
        {"instructions", e.instructions},
        {"token_wait_cycles", e.tokenWaitCycles},
        {"idle_cycles", e.idleCycles},
        {"bank_conflict_stall_cycles", e.bankConflictStallCycles},
        {"critical_path_cycles", e.criticalPathCycles}};
  }
  return out;
}

/// Per-level bank-conflict stalls (on-chip levels with more than one bank).
json levelJson(const isa::Target &t, const std::vector<sim::LevelStats> &levels) {
  json out = json::object();
  for (const isa::MemoryLevel &l : t.levels)
    if (!l.isDram && l.banks > 1) {
      size_t i = static_cast<size_t>(l.index);
      out[l.name] = {{"bank_conflict_stall_cycles",
                      i < levels.size() ? levels[i].bankConflictStallCycles : 0}};
    }
  return out;
}

/// `energy_pj` (docs/REPORT.md, docs/ENERGY.md): the run's energy by component.
json energyJson(const isa::Target &t, const sim::SimStats &s) {
  const sim::EnergyBreakdown e = sim::energyOf(t, s);
  json levels = json::object();
  for (const isa::MemoryLevel &l : t.levels) {
    const size_t i = size_t(l.index);
    levels[l.name] = {{"pj", e.levels[i]},
                      {"bytes_read", i < s.levels.size() ? s.levels[i].bytesRead : 0},
                      {"bytes_written", i < s.levels.size() ? s.levels[i].bytesWritten : 0},
                      {"read_pj_per_byte", isa::readPjPerByte(t, l)},
                      {"write_pj_per_byte", isa::writePjPerByte(t, l)}};
  }
  json vector = json::object();
  for (isa::VecOp op : isa::kAllVecOps)
    if (s.vectorElements[size_t(op)] > 0)
      vector[isa::vecOpName(op)] = s.vectorElements[size_t(op)];
  return {{"total", e.total()},   {"mac", e.mac},     {"vector", e.vector},
          {"leakage", e.leakage}, {"levels", levels}, {"vector_elements", vector}};
}

/// `area_mm2`: the target's area model (docs/ENERGY.md).
json areaJson(const isa::Target &t) {
  const isa::AreaBreakdown a = isa::areaOf(t);
  json levels = json::object();
  for (const isa::MemoryLevel &l : t.levels)
    if (!l.isDram)
      levels[l.name] = a.levels[size_t(l.index)];
  return {{"total", a.total()},
          {"tensor_unit", a.tensorUnit},
          {"vector_unit", a.vectorUnit},
          {"levels", levels}};
}

double utilization(int64_t macs, int64_t peak, int64_t cycles) {
  return peak > 0 && cycles > 0 ? double(macs) / (double(peak) * double(cycles)) : 0.0;
}

} // namespace

std::vector<std::string> groupOps(const graph::Graph &g, const graph::FusedGroup &grp) {
  std::vector<std::string> ops;
  for (graph::NodeId n : grp.nodes)
    ops.push_back(graph::opName(g.node(n).kind));
  return ops;
}

/// Which engine bounded the run for how many cycles (sums to total_cycles with "other").
static json criticalPathJson(const isa::Target &t, const sim::SimStats &s) {
  json engines = json::object();
  for (size_t i = 0; i < s.engines.size() && i < t.engines.size(); ++i)
    engines[t.engines[i].name] = s.engines[i].criticalPathCycles;
  return {{"engines", engines}, {"other", s.criticalPathOtherCycles}};
}

json buildProgramReport(const isa::Target &t, const sim::SimStats &s) {
  int64_t peak = t.tensor.peakMacsPerCycle();
  return {{"target", t.name},
          {"total_cycles", s.totalCycles},
          {"peak_macs_per_cycle", peak},
          {"macs", s.macs},
          {"mac_utilization", utilization(s.macs, peak, s.totalCycles)},
          {"dram_bytes_read", s.dramBytesRead},
          {"dram_bytes_written", s.dramBytesWritten},
          {"bank_conflict_stall_cycles", s.bankConflictStallCycles},
          {"engines", engineJson(t, s.engines, s.totalCycles)},
          {"levels", levelJson(t, s.levels)},
          {"dram_utilization", t.dram.bytesPerCycle > 0 && s.totalCycles > 0
                                   ? double(s.dramBytesRead + s.dramBytesWritten) /
                                         (t.dram.bytesPerCycle * double(s.totalCycles))
                                   : 0.0},
          {"critical_path", criticalPathJson(t, s)},
          {"energy_pj", energyJson(t, s)},
          {"area_mm2", areaJson(t)}};
}

// The runs of an NPU segment executed sub-batch by sub-batch (npu/pipeline/BatchSplit.h), and the
// DRAM traffic their L1 residents save (also counted in the segment's residency).
json batchSplitToJson(const npu::Segment &ns) {
  json runs = json::array();
  for (const npu::BatchSplitEntry &e : ns.batchSplit)
    runs.push_back({{"groups", e.groups},
                    {"batch", e.batch},
                    {"sub_batch", e.subBatch},
                    {"dram_bytes_saved", e.dramBytesSaved},
                    {"extra_dram_bytes", e.extraDramBytes},
                    {"reason", e.reason}});
  return runs;
}

// The runs of an NPU segment executed depth-first, band by band (npu/pipeline/DepthFirst.h).
json depthFirstToJson(const npu::Segment &ns) {
  json runs = json::array();
  for (const npu::DepthFirstEntry &e : ns.depthFirst)
    runs.push_back({{"groups", e.groups},
                    {"rows", e.rows},
                    {"band_rows", e.bandRows},
                    {"bands", e.bands},
                    {"images", e.images},
                    {"recomputed_rows", e.recomputedRows},
                    {"recomputed_macs", e.recomputedMacs},
                    {"recomputed_vector_elements", e.recomputedVectorElements},
                    {"whole_dram_bytes", e.wholeDramBytes},
                    {"band_dram_bytes", e.bandDramBytes},
                    {"whole_cycles", e.wholeCycles},
                    {"band_cycles", e.bandCycles},
                    {"reason", e.reason}});
  return runs;
}

namespace {

// `cpu_code` (docs/REPORT.md).
json cpuCodeJson(const CpuCodeUse &c) {
  json j = {{"source", c.fromPackage ? "package" : c.fromCache ? "cache" : "llvm"}, {"ms", c.ms}};
  if (!c.cacheNote.empty())
    j["not_cached"] = c.cacheNote;
  if (c.packageHadCode && !c.fromPackage)
    j["package_code_unused"] = c.whyNot;
  return j;
}

} // namespace

json buildReport(const CompiledModel &m, const std::vector<SegmentRun> &runs,
                 const CpuCodeUse &code) {
  NPUC_ASSERT(runs.size() == m.segments.size(), "one SegmentRun per segment");
  const graph::Graph &g = m.graph;
  sim::SimStats total;
  int64_t roofline = 0;
  double cpuMs = 0, crossingMs = 0, cpuOverheadMs = 0;
  DramFootprint footprint; // the NPU segments' compulsory DRAM bytes
  json ops = json::array(), segments = json::array();
  for (size_t si = 0; si < m.segments.size(); ++si) {
    const Seg &seg = m.segments[si];
    const SegmentRun &run = runs[si];
    if (seg.npu) {
      const npu::Segment &ns = m.npuSegments.at(size_t(seg.npuIndex));
      const sim::SimStats &s = run.stats;
      sim::addStats(total, s);
      footprint.constants += int64_t(ns.constImage.size());
      for (const npu::DepthFirstEntry &e : ns.depthFirst) {
        footprint.recomputedMacs += e.recomputedMacs;
        footprint.recomputedVectorElements += e.recomputedVectorElements;
      }
      for (const npu::DramTensor &t : ns.inputs)
        footprint.inputs += t.bytes();
      for (const npu::DramTensor &t : ns.outputs)
        footprint.outputs += t.bytes();
      segments.push_back({{"placement", "npu"},
                          {"groups", seg.groups},
                          {"cycles", s.totalCycles},
                          {"instructions", ns.program.instrs.size()},
                          {"crossing_ms", run.hostMs},
                          {"batch_split", batchSplitToJson(ns)},
                          {"depth_first", depthFirstToJson(ns)}});
      crossingMs += run.hostMs;
      const sim::TraceSpans spans(s.trace);
      for (const npu::GroupInfo &gi : ns.groupInfo) {
        roofline += gi.rooflineCycles;
        int64_t cycles = spans.cycles(gi.instrBegin, gi.instrEnd);
        // The simulator counts tensor-unit MACs only; a group that issues no matmul (a depthwise
        // conv on the vector unit) does its MACs with vector ops.
        bool onTensor = false;
        for (const auto &[mnemonic, count] : gi.instrCounts)
          onTensor = onTensor || (count > 0 && m.target.findInstr(mnemonic)->semantics ==
                                                   isa::Semantics::Matmul);
        ops.push_back({{"name", gi.name},
                       {"group", gi.groupId},
                       {"ops", gi.ops},
                       {"placement", "npu"},
                       {"cycles", cycles},
                       {"instructions", gi.instrEnd - gi.instrBegin},
                       {"macs", gi.macs},
                       {"tensor_macs", onTensor ? gi.macs : 0},
                       {"roofline_cycles", gi.rooflineCycles},
                       {"roofline_fraction", cycles > 0 ? double(gi.rooflineCycles) / cycles : 0.0},
                       {"bound", gi.bound},
                       {"tiling", gi.tiling},
                       {"on_chip_bytes", gi.onChipBytes},
                       {"bank_placement", bankReportToJson(gi.bank)},
                       {"sub_batch", gi.subBatch},
                       {"band", gi.band},
                       {"layout", gi.layout},
                       {"layout_ops_cancelled", gi.layoutOpsCancelled},
                       {"layout_bytes_not_moved", gi.layoutBytesNotMoved}});
      }
    } else {
      double segMs = 0;
      for (int gid : seg.groups) {
        const graph::FusedGroup &grp = g.groups.at(size_t(gid));
        double ms = run.cpuMs.count(gid) ? run.cpuMs.at(gid) : 0.0;
        segMs += ms;
        ops.push_back({{"name", grp.name},
                       {"group", gid},
                       {"ops", groupOps(g, grp)},
                       {"placement", "cpu"},
                       {"cpu_ms", ms},
                       {"macs", graph::groupMacs(g, grp)},
                       {"reason", grp.cpuReason}});
      }
      cpuMs += segMs;
      cpuOverheadMs += run.hostMs;
      segments.push_back({{"placement", "cpu"},
                          {"groups", seg.groups},
                          {"cpu_ms", segMs},
                          {"overhead_ms", run.hostMs}});
    }
  }
  json r = buildProgramReport(m.target, total);
  r["roofline_cycles"] = roofline;
  r["roofline_fraction"] =
      total.totalCycles > 0 ? double(roofline) / double(total.totalCycles) : 0.0;
  if (!m.npuSegments.empty()) // a CPU-only run moves no NPU DRAM bytes to account for
    r["dram_accounting"] =
        dramAccountingToJson(dramAccounting(m.target, footprint, total), total.totalCycles);
  r["cpu_ms_total"] = cpuMs;
  r["crossing_ms_total"] = crossingMs;
  r["cpu_overhead_ms_total"] = cpuOverheadMs;
  // int8 targets: what the activation scales were calibrated on (docs/REPORT.md).
  if (m.options.quant)
    r["int8_calibration"] = m.options.quant->source;
  if (code.any)
    r["cpu_code"] = cpuCodeJson(code);
  r["segments"] = segments;
  r["ops"] = ops;
  return r;
}

std::string buildTrace(const CompiledModel &m, const std::vector<SegmentRun> &runs) {
  NPUC_ASSERT(runs.size() == m.segments.size(), "one SegmentRun per segment");
  // The simulator's trace timestamps are cycles; CPU wall time is converted at the target clock
  // so that both share one axis.
  const double cyclesPerMs = m.target.clockGhz * 1e6;
  json events = json::array();
  const int cpuTid = int(m.target.engines.size()); // a track after every engine's
  bool cpuTrack = false;
  double offset = 0;
  std::map<std::string, bool> seenMeta; // metadata events (track names) are emitted once
  for (size_t si = 0; si < m.segments.size(); ++si) {
    const Seg &seg = m.segments[si];
    const SegmentRun &run = runs[si];
    if (seg.npu) {
      json t = json::parse(sim::traceToJson(m.target, run.stats));
      json segEvents = t.is_object() && t.contains("traceEvents") ? t["traceEvents"] : t;
      NPUC_ASSERT(segEvents.is_array(), "sim::traceToJson writes Chrome trace events");
      for (json &e : segEvents) {
        if (e.value("ph", "") == "M") {
          if (seenMeta.emplace(e.dump(), true).second)
            events.push_back(e);
          continue;
        }
        if (e.contains("ts") && e["ts"].is_number())
          e["ts"] = e["ts"].get<double>() + offset;
        // Counter events' args are the plotted series: no segment tag there.
        if (e.contains("args") && e["args"].is_object() && e.value("ph", "") != "C")
          e["args"]["segment"] = si;
        events.push_back(std::move(e));
      }
      offset += double(run.stats.totalCycles);
    } else {
      cpuTrack = true;
      for (int gid : seg.groups) {
        double dur = (run.cpuMs.count(gid) ? run.cpuMs.at(gid) : 0.0) * cyclesPerMs;
        const graph::FusedGroup &grp = m.graph.groups.at(size_t(gid));
        events.push_back({{"name", grp.name},
                          {"cat", "cpu"},
                          {"ph", "X"},
                          {"pid", 0},
                          {"tid", cpuTid},
                          {"ts", offset},
                          {"dur", dur},
                          {"args", {{"group", gid}, {"segment", si}, {"reason", grp.cpuReason}}}});
        offset += dur;
      }
    }
  }
  if (cpuTrack)
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", cpuTid},
                      {"args", {{"name", "cpu"}}}});
  return json{{"traceEvents", events}, {"displayTimeUnit", "ns"}}.dump(1);
}

json bankReportToJson(const npu::BankReport &b) {
  return {{"ran", b.ran},
          {"stall_cycles_before", b.stallsBefore},
          {"stall_cycles_after", b.stallsAfter},
          {"cycles_before", b.cyclesBefore},
          {"cycles_after", b.cyclesAfter},
          {"candidates", b.candidates},
          {"change", b.change}};
}

std::string formatReport(const json &r) {
  std::string out;
  int64_t total = r.at("total_cycles").get<int64_t>();
  int64_t roof = r.value("roofline_cycles", int64_t(0));
  out += fmt::format("target: {}\n", r.at("target").get<std::string>());
  out += fmt::format("total NPU cycles: {}\n", total);
  out += fmt::format("MAC utilisation: {:.2f}% ({} MACs, peak {} MACs/cycle)\n",
                     100.0 * r.at("mac_utilization").get<double>(), r.at("macs").get<int64_t>(),
                     r.at("peak_macs_per_cycle").get<int64_t>());
  if (r.contains("roofline_cycles"))
    out += fmt::format("roofline cycles: {} ({:.1f}% of roofline achieved)\n", roof,
                       total > 0 ? 100.0 * double(roof) / double(total) : 0.0);
  out += fmt::format("DRAM: {:.3f} MB read, {:.3f} MB written, {} bank-conflict stall cycles\n",
                     double(r.at("dram_bytes_read").get<int64_t>()) / 1e6,
                     double(r.at("dram_bytes_written").get<int64_t>()) / 1e6,
                     r.at("bank_conflict_stall_cycles").get<int64_t>());
  if (r.contains("dram_accounting")) {
    const json &a = r.at("dram_accounting");
    const json &nc = a.at("non_compulsory_bytes");
    auto mb = [&](const char *k) { return double(nc.at(k).get<int64_t>()) / 1e6; };
    out += fmt::format("DRAM vs compulsory: {:.2f}x of {:.3f} MB (extra MB: weights re-read "
                       "{:.3f}, inputs re-read {:.3f}, activations spilled {:.3f}, activations "
                       "re-read {:.3f}, outputs {:.3f})\n",
                       a.at("moved_over_compulsory").get<double>(),
                       double(a.at("compulsory_bytes").get<int64_t>()) / 1e6, mb("weights_reread"),
                       mb("inputs_reread"), mb("activations_spilled"), mb("activations_reread"),
                       mb("outputs_extra"));
    out += fmt::format("whole-graph bound: {} cycles (MACs {}, DRAM {}, vector {}); run at "
                       "{:.2f}x of it\n",
                       a.at("whole_graph_bound_cycles").get<int64_t>(),
                       a.at("bound_parts_cycles").at("mac").get<int64_t>(),
                       a.at("bound_parts_cycles").at("dram").get<int64_t>(),
                       a.at("bound_parts_cycles").at("vector").get<int64_t>(),
                       a.at("cycles_over_bound").get<double>());
  }
  if (r.contains("energy_pj")) {
    const json &e = r.at("energy_pj");
    const double totalPj = e.at("total").get<double>();
    auto pct = [&](double pj) { return totalPj > 0 ? 100.0 * pj / totalPj : 0.0; };
    std::string parts = fmt::format("MACs {:.1f}%, vector {:.1f}%", pct(e.at("mac").get<double>()),
                                    pct(e.at("vector").get<double>()));
    for (const auto &[name, l] : e.at("levels").items())
      parts += fmt::format(", {} {:.1f}%", name, pct(l.at("pj").get<double>()));
    if (e.at("leakage").get<double>() > 0)
      parts += fmt::format(", leakage {:.1f}%", pct(e.at("leakage").get<double>()));
    out += fmt::format("energy: {:.3f} uJ ({}); area {:.3f} mm^2\n", totalPj / 1e6, parts,
                       r.at("area_mm2").at("total").get<double>());
  }
  out += "engines:";
  for (const auto &[name, e] : r.at("engines").items())
    out += fmt::format(" {} {:.1f}%", name, e.at("busy_pct").get<double>());
  out += "\n";
  if (r.contains("cpu_ms_total"))
    out += fmt::format("CPU fallback time: {:.3f} ms (kernels); host overhead {:.3f} ms around "
                       "CPU kernels, {:.3f} ms converting tensors that cross devices\n",
                       r.at("cpu_ms_total").get<double>(), r.value("cpu_overhead_ms_total", 0.0),
                       r.value("crossing_ms_total", 0.0));
  if (r.contains("cpu_code")) {
    const json &c = r.at("cpu_code");
    const std::string source = c.at("source");
    out += fmt::format("CPU code: {} ({:.1f} ms){}\n",
                       source == "package" ? "the package's native code"
                       : source == "cache" ? "the code cache's (compiled by an earlier run)"
                                           : "compiled by LLVM for this run",
                       c.at("ms").get<double>(),
                       c.contains("package_code_unused")
                           ? "; the package's native code is not used: " +
                                 c.at("package_code_unused").get<std::string>()
                           : std::string());
  }
  if (!r.contains("ops"))
    return out;
  out +=
      fmt::format("{:<28} {:<5} {:>14} {:>12}  {}\n", "group", "place", "cycles/ms", "MACs", "ops");
  for (const json &op : r.at("ops")) {
    std::string ops;
    for (const json &o : op.at("ops"))
      ops += (ops.empty() ? std::string() : std::string("+")) + o.get<std::string>();
    bool npu = op.at("placement") == "npu";
    std::string time = npu ? fmt::format("{}", op.at("cycles").get<int64_t>())
                           : fmt::format("{:.3f} ms", op.at("cpu_ms").get<double>());
    std::string name = op.at("name").get<std::string>();
    if (name.size() > 28)
      name = name.substr(0, 25) + "...";
    out += fmt::format(
        "{:<28} {:<5} {:>14} {:>12}  {}{}\n", name, op.at("placement").get<std::string>(), time,
        op.at("macs").get<int64_t>(), ops,
        npu ? std::string() : fmt::format("  ({})", op.at("reason").get<std::string>()));
  }
  return out;
}

} // namespace npuc::driver
