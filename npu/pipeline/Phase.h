// Phase.h - the segment pipeline's phases as a closed set, and what the caller asks of them:
// print the plan after some, stop after one, time each (`npuc compile --print-after`,
// `--stop-after`, `--time-phases`).
#pragma once

#include <array>
#include <optional>
#include <ostream>
#include <set>
#include <string>

namespace npuc::npu {

enum class Phase {
#define NPUC_PHASE(E, name, fn, what) E,
#include "npu/pipeline/Phases.def"
};
inline constexpr size_t kNumPhases = 0
#define NPUC_PHASE(E, name, fn, what) +1
#include "npu/pipeline/Phases.def"
    ;

/// The phase's name on the command line ("plan-groups", "residency", ...).
const char *phaseName(Phase p);
/// What the phase decides (for help texts and the printed plan).
const char *phaseWhat(Phase p);
/// The phase named `name`, or nullopt.
std::optional<Phase> phaseNamed(const std::string &name);
/// Every phase name in pipeline order, comma separated (for error messages and help).
std::string phaseNames();

/// What the caller asks of the pipeline besides compiling (CompileOptions::phases). Shared by
/// every segment the driver compiles, so the times add up over segments (and retries).
struct PhaseControl {
  std::set<Phase> printAfter;     // print the segment's plan after these phases
  std::optional<Phase> stopAfter; // stop every segment after this phase (no Segment to package)
  bool time = false;              // measure each phase's wall time
  std::ostream *out = nullptr;    // where plans are printed (the CLI: stdout)
  std::array<double, kNumPhases> seconds{}; // wall time per phase, summed over segments
  double verifySeconds = 0;                 // the verifier's, between the phases
  int segments = 0;                         // segment compilations seen (the printed plans' ids)
  bool stopped = false;                     // some segment stopped at stopAfter
};

/// "phase  seconds" lines, in pipeline order, with the total.
std::string formatPhaseTimes(const PhaseControl &c);

} // namespace npuc::npu
