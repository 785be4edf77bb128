// Phase.cpp - the phases' names (Phase.h).
#include "npu/pipeline/Phase.h"

#include <fmt/format.h>

namespace npuc::npu {

namespace {

struct PhaseName {
  const char *name;
  const char *what;
};
constexpr PhaseName kNames[] = {
#define NPUC_PHASE(E, name, fn, what) {name, what},
#include "npu/pipeline/Phases.def"
};

} // namespace

const char *phaseName(Phase p) {
  return kNames[static_cast<size_t>(p)].name;
}

const char *phaseWhat(Phase p) {
  return kNames[static_cast<size_t>(p)].what;
}

std::optional<Phase> phaseNamed(const std::string &name) {
  for (size_t i = 0; i < kNumPhases; ++i)
    if (name == kNames[i].name)
      return static_cast<Phase>(i);
  return std::nullopt;
}

std::string phaseNames() {
  std::string s;
  for (size_t i = 0; i < kNumPhases; ++i)
    s += (i ? ", " : "") + std::string(kNames[i].name);
  return s;
}

std::string formatPhaseTimes(const PhaseControl &c) {
  std::string s = fmt::format("segment pipeline: wall time per phase over {} segment "
                              "compilation(s)\n",
                              c.segments);
  double total = 0;
  for (size_t i = 0; i < kNumPhases; ++i) {
    s += fmt::format("  {:<16}{:>10.4f} s\n", kNames[i].name, c.seconds[i]);
    total += c.seconds[i];
  }
  s += fmt::format("  {:<16}{:>10.4f} s\n", "(verifier)", c.verifySeconds);
  s += fmt::format("  {:<16}{:>10.4f} s\n", "total", total + c.verifySeconds);
  return s;
}

} // namespace npuc::npu
