// Measure.cpp - compiling one group with a forced point and simulating it (see Measure.h).
#include "tune/Measure.h"

#include "simulator/Simulator.h"
#include "support/Error.h"
#include "support/WorkQueue.h"

#include <chrono>
#include <thread>

namespace npuc::tune {

Measurer::Measurer(const driver::CompiledModel &m, const TaskSet &tasks, int jobs)
    : m_(m), tasks_(tasks) {
  jobs_ = jobs > 0 ? jobs : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

namespace {

// The options of the measuring compile: the model's, without the phase controls, forcing `s`.
npu::CompileOptions measuringOptions(const npu::CompileOptions &model, const Task &t,
                                     const std::optional<npu::Schedule> &s) {
  npu::CompileOptions o = model;
  o.jobs = 1; // the measurements run on the tuner's threads
  o.phases = nullptr;
  o.schedules = nullptr;
  o.tuned = nullptr; // the measurement is of `s` (or of the heuristic's default), nothing else
  if (s) {
    auto file = std::make_shared<npu::ScheduleFile>();
    file->put(t.key, *s, t.name);
    o.schedules = std::move(file);
  }
  return o;
}

int64_t simulateTimingOnly(const isa::Target &t, const npu::Segment &seg) {
  sim::Memory mem = sim::Memory::sizesOnly(t, seg.dramBytes);
  sim::SimOptions so;
  so.functional = false; // no data: the cycle count is exactly a functional run's
  so.check = false;
  try {
    return sim::run(t, seg.program, mem, so).totalCycles;
  } catch (const Error &e) {
    NPUC_ASSERT(false, std::string("a compiled group simulates without error: ") + e.what());
  }
  return 0;
}

} // namespace

Measurement Measurer::measure(const Candidate &c) const {
  const auto start = std::chrono::steady_clock::now();
  const Task &t = tasks_.tasks.at(static_cast<size_t>(c.task));
  Measurement r;
  r.task = c.task;
  r.isDefault = !c.schedule;
  if (c.schedule)
    r.schedule = *c.schedule;
  try {
    Expected<npu::Segment, npu::Reject> seg = npu::compileSegment(
        m_.graph, {t.group}, m_.target, measuringOptions(m_.options, t, c.schedule));
    if (!seg) {
      r.error = seg.error().message;
    } else {
      NPUC_ASSERT(!seg->groupInfo.empty(), "a compiled segment reports its group");
      const npu::GroupInfo &gi = seg->groupInfo.front();
      if (!c.schedule)
        r.schedule = gi.schedule;
      r.rooflineCycles = gi.rooflineCycles;
      r.macs = gi.macs;
      r.cycles = simulateTimingOnly(m_.target, *seg);
    }
  } catch (const npu::ScheduleError &e) {
    r.error = e.what();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::vector<Measurement> Measurer::measureAll(const std::vector<Candidate> &cs) const {
  std::vector<Measurement> out(cs.size());
  // Bad input (npuc::Error) reaches the caller's thread, the first candidate's first.
  runTasks(cs.size(), jobs_, [&](size_t i) { out[i] = measure(cs[i]); });
  return out;
}

} // namespace npuc::tune
