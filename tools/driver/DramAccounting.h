// DramAccounting.h - the report's whole-graph DRAM accounting and bound (docs/REPORT.md,
// "dram_accounting"): how far the traffic and the cycles are from what no schedule can avoid.
//
// Compulsory DRAM bytes are what any schedule must move: every constant (weights, biases,
// tables) read once, every input the host writes read once, every output written once (per NPU
// segment; a model with CPU groups has several). Everything else the run moved is
// non-compulsory, split by cause from the simulator's per-class counts (simulator/DramTraffic.h):
//   weights_reread      constant bytes read beyond the constants' size (a weight block loaded
//                       per image, per row tile or per sub-batch);
//   inputs_reread       input bytes read beyond the inputs' size (halos, reloads per block);
//   activations_spilled intermediates written, and read once: tensors that did not stay on chip;
//   activations_reread  intermediate bytes read beyond those written (halos between row tiles,
//                       reloads per output-channel block, a tensor with several consumers);
//   outputs_extra       output bytes written beyond the outputs' size, or read back.
// The whole-graph bound in cycles is max(tensor MACs / peak MACs per cycle, compulsory bytes /
// DRAM bytes per cycle, vector elements / lanes), the MACs and elements the program executed less
// what depth-first bands recompute: no schedule of the same instructions' work can beat it, so
// cycles / bound says how much a better graph schedule could still win.
#pragma once

#include "isa/Target.h"
#include "simulator/Simulator.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>

namespace npuc::driver {

struct DramAccounting {
  int64_t compulsory = 0; // bytes
  int64_t moved = 0;      // bytes read + written
  int64_t weightsReread = 0, inputsReread = 0, activationsSpilled = 0, activationsReread = 0,
          outputsExtra = 0;
  int64_t macBound = 0, dramBound = 0, vectorBound = 0; // cycles
  int64_t bound() const { return std::max({macBound, dramBound, vectorBound}); }
};

/// The sizes of the classes' regions (the compulsory bytes are their sum), and the work the
/// schedule added (depth-first bands' recomputed halos: npu::DepthFirstEntry), which the bound
/// leaves out so that it does not depend on the schedule.
struct DramFootprint {
  int64_t constants = 0, inputs = 0, outputs = 0;
  int64_t recomputedMacs = 0, recomputedVectorElements = 0;
};

DramAccounting dramAccounting(const isa::Target &t, const DramFootprint &f, const sim::SimStats &s);
nlohmann::json dramAccountingToJson(const DramAccounting &a, int64_t totalCycles);

} // namespace npuc::driver
