// FuzzSim.cpp - the simulator on arbitrary programs: the bytes are decoded for the preset the
// first byte picks (inputs that do not decode are the decoder harness's), then run functionally
// (with hazard checks) and timing-only. Either run ends in a result or an npuc::Error within
// the work budget (SimOptions::maxWork): a deadlock, an out-of-bounds access, a hazard or a
// program over budget is an error, never a hang or a crash. Both runs must agree on cycles.
#include "fuzz/FuzzTargets.h"
#include "isa/Program.h"
#include "simulator/Simulator.h"

namespace {

// Small enough that one input takes milliseconds, large enough for real tiles.
constexpr int64_t kDramBytes = 1 << 20;
constexpr int64_t kMaxWork = 1 << 22;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const npuc::isa::Target *t = nullptr;
  std::optional<npuc::isa::Program> decoded = npuc::fuzz::decodeInput(data, size, t);
  if (!decoded)
    return 0;
  const npuc::isa::Program &p = *decoded;
  int64_t functionalCycles = -1, timingCycles = -1;
  try {
    npuc::sim::Memory mem(*t, kDramBytes);
    npuc::sim::SimOptions o;
    o.maxWork = kMaxWork;
    functionalCycles = npuc::sim::run(*t, p, mem, o).totalCycles;
  } catch (const npuc::Error &) {
  }
  try {
    npuc::sim::Memory mem(*t, kDramBytes);
    npuc::sim::SimOptions o;
    o.functional = false;
    timingCycles = npuc::sim::run(*t, p, mem, o).totalCycles;
  } catch (const npuc::Error &) {
  }
  // Timing does not depend on data, so a program both runs finish takes the same cycles.
  NPUC_ASSERT(functionalCycles < 0 || timingCycles < 0 || functionalCycles == timingCycles,
              "the functional and timing-only runs of one program disagree on cycles");
  return 0;
}
