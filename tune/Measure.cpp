// Measure.cpp - compiling one group with a forced point and simulating it (see Measure.h).
#include "tune/Measure.h"

#include "simulator/Simulator.h"
#include "support/Error.h"
#include "support/WorkQueue.h"

#include <chrono>
#include <thread>

namespace npuc::tune {

Measurer::Measurer(const driver::CompiledModel &m, const TaskSet &tasks, int jobs,
                   RemoteMeasure remote)
    : m_(m), tasks_(tasks), remote_(std::move(remote)) {
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

npu::Schedule scheduleFrom(const nlohmann::json &j) {
  Expected<npu::Schedule, std::string> s = npu::Schedule::fromJson(j);
  NPUC_ASSERT(s.has_value(), "a schedule another rank wrote reads back: " +
                                 (s.has_value() ? std::string() : s.error()));
  return *s;
}

} // namespace

std::string candidateText(const Candidate &c) {
  return nlohmann::json{{"task", c.task},
                        {"schedule", c.schedule ? c.schedule->toJson() : nlohmann::json()}}
      .dump();
}

Candidate candidateFromText(const std::string &text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  Candidate c;
  c.task = j.at("task").get<int>();
  if (!j.at("schedule").is_null())
    c.schedule = scheduleFrom(j.at("schedule"));
  return c;
}

std::string measurementText(const Measurement &m) {
  return nlohmann::json{
      {"task", m.task},         {"schedule", m.schedule.toJson()},
      {"default", m.isDefault}, {"cycles", m.cycles ? nlohmann::json(*m.cycles) : nlohmann::json()},
      {"error", m.error},       {"roofline", m.rooflineCycles},
      {"macs", m.macs},         {"seconds", m.seconds}}
      .dump();
}

Measurement measurementFromText(const std::string &text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  Measurement m;
  m.task = j.at("task").get<int>();
  m.schedule = scheduleFrom(j.at("schedule"));
  m.isDefault = j.at("default").get<bool>();
  if (!j.at("cycles").is_null())
    m.cycles = j.at("cycles").get<int64_t>();
  m.error = j.at("error").get<std::string>();
  m.rooflineCycles = j.at("roofline").get<int64_t>();
  m.macs = j.at("macs").get<int64_t>();
  m.seconds = j.at("seconds").get<double>();
  return m;
}

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
  if (remote_) {
    std::vector<Measurement> out = remote_(cs);
    NPUC_ASSERT(out.size() == cs.size(), "a remote measurer answers every candidate");
    return out;
  }
  std::vector<Measurement> out(cs.size());
  // Bad input (npuc::Error) reaches the caller's thread, the first candidate's first.
  runTasks(cs.size(), jobs_, [&](size_t i) { out[i] = measure(cs[i]); });
  return out;
}

} // namespace npuc::tune
