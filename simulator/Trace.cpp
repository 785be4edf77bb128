// Trace.cpp - Chrome trace-event JSON (chrome://tracing, Perfetto) for a simulator run.
//
// One thread track per engine (pid 0, tid = engine index, named by metadata events), one "X"
// slice per instruction with cycles shown as microseconds. Very long runs are condensed: above
// kMaxEvents slices, consecutive instructions with the same mnemonic on one engine merge into a
// single slice ("mnemonic xN") so the file stays loadable. Counter ("C") events add a DRAM
// bandwidth track and one activity track per on-chip level.
#include "simulator/Simulator.h"

#include <nlohmann/json.hpp>

namespace npuc::sim {

namespace {
constexpr size_t kMaxEvents = 200000;
}

std::string traceToJson(const isa::Target &t, const SimStats &stats) {
  nlohmann::json events = nlohmann::json::array();
  for (size_t e = 0; e < t.engines.size(); ++e)
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", e},
                      {"args", {{"name", t.engines[e].name}}}});
  const bool merge = stats.trace.size() > kMaxEvents;
  // Per engine, the slice being built (merging consecutive same-mnemonic instructions).
  struct Open {
    const TraceEvent *first = nullptr;
    int64_t end = 0;
    int64_t count = 0;
  };
  std::vector<Open> open(t.engines.size());
  auto flush = [&](size_t e) {
    Open &o = open[e];
    if (!o.first)
      return;
    std::string name = o.first->mnemonic;
    if (o.count > 1)
      name += " x" + std::to_string(o.count);
    events.push_back({{"name", name},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", e},
                      {"ts", o.first->start},
                      {"dur", o.end - o.first->start},
                      {"args", {{"index", o.first->index}, {"count", o.count}}}});
    o = {};
  };
  for (const TraceEvent &ev : stats.trace) {
    size_t e = static_cast<size_t>(ev.engine);
    if (e >= open.size())
      open.resize(e + 1);
    Open &o = open[e];
    if (o.first && merge && o.first->mnemonic == ev.mnemonic) {
      o.end = ev.end;
      ++o.count;
      continue;
    }
    flush(e);
    open[e] = {&ev, ev.end, 1};
  }
  for (size_t e = 0; e < open.size(); ++e)
    flush(e);
  // Counter tracks: DRAM bandwidth in use and, per banked on-chip level, how many instructions
  // touch it (two or more from different engines is where bank conflicts can happen).
  for (const CounterSample &c : stats.dramCounter)
    events.push_back({{"name", "dram bytes/cycle"},
                      {"ph", "C"},
                      {"pid", 0},
                      {"ts", c.time},
                      {"args", {{"bytes_per_cycle", c.value}}}});
  for (size_t l = 0; l < stats.levelActivity.size(); ++l) {
    std::string name = (l < stats.levels.size() ? stats.levels[l].name : std::to_string(l)) +
                       " active instructions";
    for (const CounterSample &c : stats.levelActivity[l])
      events.push_back({{"name", name},
                        {"ph", "C"},
                        {"pid", 0},
                        {"ts", c.time},
                        {"args", {{"instructions", c.value}}}});
  }
  nlohmann::json doc = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"}};
  return doc.dump();
}

} // namespace npuc::sim
