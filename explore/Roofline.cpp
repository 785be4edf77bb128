// Roofline.cpp - per-group figures of one point and its roofline chart (contract in Roofline.h).
#include "explore/Roofline.h"

#include "simulator/Decode.h"
#include "simulator/Simulator.h"
#include "simulator/TraceSpans.h"
#include "support/Error.h"
#include "support/Plot.h"
#include "tools/driver/Compiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace npuc::explore {

PointRoofline pointRoofline(const SweepSpec &s, const Point &p) {
  const isa::Target t = isa::parseTarget(pointTargetText(s, p), fmt::format("point {}", p.index));
  PointRoofline out{double(t.tensor.peakMacsPerCycle()), t.dram.bytesPerCycle, {}};
  for (const ModelSpec &ms : s.models) {
    npu::CompileOptions one;
    one.jobs = 1;
    const driver::CompiledModel m = driver::compileModel(ms.path, t, ms.inputs, one);
    for (const npu::Segment &seg : m.npuSegments) {
      sim::Memory mem = sim::Memory::sizesOnly(t, seg.dramBytes);
      sim::SimOptions o;
      o.functional = false;
      o.check = false;
      o.trace = true;
      const sim::SimStats st = sim::run(t, seg.program, mem, o);
      const std::vector<sim::Decoded> code = sim::decodeProgram(t, seg.program, mem);
      const sim::TraceSpans spans(st.trace);
      for (const npu::GroupInfo &gi : seg.groupInfo) {
        GroupRoofline g;
        g.model = ms.name;
        g.group = gi.name;
        g.macs = gi.macs;
        g.cycles = spans.cycles(gi.instrBegin, gi.instrEnd);
        g.rooflineCycles = gi.rooflineCycles;
        for (int64_t i = gi.instrBegin; i < gi.instrEnd && i < int64_t(code.size()); ++i)
          g.dramBytes += code[size_t(i)].dramRead + code[size_t(i)].dramWritten;
        out.groups.push_back(g);
      }
    }
  }
  return out;
}

std::string plotRoofline(const std::string &path, const Point &p, const PointRoofline &r) {
  const double peak = r.peakMacsPerCycle, bw = r.dramBytesPerCycle;
  const std::vector<GroupRoofline> &groups = r.groups;
  int64_t total = 0;
  for (const GroupRoofline &g : groups)
    total += g.cycles;
  ScatterSeries pts{"NPU groups (colour: share of the cycles, %)", {}, ScatterStyle::Palette};
  size_t skipped = 0;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const GroupRoofline &g : groups) {
    if (g.macs == 0 || g.cycles == 0) {
      ++skipped;
      continue;
    }
    // A group that moves no DRAM byte (its operands resident in L1) sits right of the ridge:
    // it is drawn at the largest intensity of the chart.
    const double x = g.dramBytes > 0 ? double(g.macs) / double(g.dramBytes) : -1;
    pts.points.push_back({x, double(g.macs) / double(g.cycles),
                          total > 0 ? 100.0 * double(g.cycles) / double(total) : 0.0});
    if (x > 0) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  }
  if (pts.points.empty())
    fail("point {}: no NPU group with MACs to chart", p.index);
  if (!(hi > 0))
    lo = hi = peak / bw; // every group resident: centre the chart on the ridge
  lo = std::min(lo, peak / bw) / 2;
  hi = std::max(hi, peak / bw) * 2;
  for (ScatterPoint &q : pts.points)
    if (q.x < 0)
      q.x = hi;
  ScatterSeries roof{fmt::format("roof: min({} MACs/cycle, intensity x {} B/cycle)", peak, bw),
                     {},
                     ScatterStyle::Line};
  for (int i = 0; i <= 64; ++i) {
    const double x = lo * std::pow(hi / lo, i / 64.0);
    roof.points.push_back({x, std::min(peak, x * bw), 0});
  }
  ScatterPlot plot;
  plot.title = fmt::format("point {}: {} NPU groups{} (the point's axis values: results.csv)",
                           p.index, pts.points.size(),
                           skipped ? fmt::format(", {} without MACs not shown", skipped) : "");
  plot.xlabel = "operational intensity, MACs per DRAM byte";
  plot.ylabel = "achieved MACs per cycle";
  plot.colorLabel = "share of the point's NPU cycles, %";
  plot.logX = plot.logY = true;
  plot.series = {pts, roof};
  plotScatter(path, plot);
  return fmt::format("{}: {} groups charted, {} without MACs left out", path, pts.points.size(),
                     skipped);
}

} // namespace npuc::explore
