// BankAlloc.h - bank-conflict-aware placement of a kernel's on-chip buffers.
//
// Kernels reserve their buffers with a bump allocator (Builder::reserve), which ignores banks:
// two buffers that different engines stream through at the same time may map onto the same
// banks of a level and stall each other (docs/SIMULATOR.md, "Banks"). After a group is lowered
// with the default placement, placeForBanks() simulates its instructions alone with the
// simulator's own timing model (timing only), and if bank stalls are at least 1% of the
// group's cycles it:
//   1. scores every buffer by the stall cycles of the instructions touching it, and of the
//      instructions of other engines running concurrently with them on the same level;
//   2. tries a few placements of the top-scored buffers: shift a buffer by one or half a bank
//      period (multiples of the bank width and the level alignment, within the level's free
//      space), pad the pitch between its double-buffer copies the same way, move it to the end
//      of its level, or swap it with another top-scored buffer;
//   3. moves the default program's on-chip addresses to each placement (tiling is unchanged:
//      only addresses move), simulates it, and keeps the fastest (then the one with fewest
//      stalls), repeating once from the winner. The default is kept unless a placement is
//      strictly better; a winner is re-lowered at its placement (Builder overrides), which must
//      emit exactly the relocated program, and keeps what kernel selection reported of the
//      kernel (its tiling text with selection's note, its on-chip peak).
// Deterministic and bounded: at most kMaxCandidates simulations per group, and only
// kGiveUpAfter when none of those reduces the stalls.
#pragma once

#include "isa/Program.h"
#include "npu/kernels/Builder.h"
#include "npu/kernels/Kernels.h"
#include "npu/pipeline/Compile.h"
#include "simulator/Simulator.h"

#include <functional>
#include <string>

namespace npuc::npu {

/// Lowers the group's kernel into `b`. Called once per candidate placement; must make the same
/// decisions (and reserve the same buffers in the same order) every time.
using LowerFn = std::function<Kernel(Builder &b)>;

/// A lowered kernel and its emitted instructions (no tokens yet).
struct PlacedKernel {
  Kernel kernel;
  isa::Program program;
  /// The placement the kernel was re-lowered at (empty: the bump allocator's), so that a caller
  /// lowering the same kernel again at other DRAM addresses (a batch-split run's next sub-batch)
  /// gets the same on-chip buffers.
  std::vector<Placement> placement;
};

inline constexpr int kMaxCandidates = 16;
/// The search runs only where the stalls are at least 1/kMinStallShare of the group's cycles:
/// the most it can save is the stalls, and each candidate costs a simulation of the group.
inline constexpr int64_t kMinStallShare = 100;
/// A round stops after this many candidates if none reduced the stall cycles: the stalls then
/// mostly come from within instructions (an access pattern that keeps hitting a few banks by
/// itself), which moving whole buffers does not change. The candidates most likely to help (the
/// top-scored buffer's shifts) come first.
inline constexpr int kGiveUpAfter = 4;

/// Improves `k` (lowered and emitted with the default placement) in place when a better
/// placement exists. `mem` must size DRAM to cover every DRAM address the group touches (only
/// sizes are used). `where` names the group in diagnostics.
/// `alwaysMove` (tests): search even without stalls and take the best candidate even when it
/// is no better (CompileOptions::bankAlwaysMove). `fromTop`: the kernel's default placement is
/// from the top of each level (Builder), as the segment compiler lowered it. `window`: the
/// part of each level the group's buffers may take (Builder); accesses outside it (tensors
/// resident across groups) are left where they are.
BankReport placeForBanks(const Hw &hw, const LowerFn &lower, const std::string &where,
                         sim::Memory &mem, PlacedKernel &k, bool alwaysMove = false,
                         bool fromTop = false, const Window &window = {});

/// Simulates a group's instructions alone: tokens inserted, timing only, no hazard checks.
sim::SimStats simulateGroup(const isa::Target &t, const isa::Program &group, sim::Memory &mem,
                            bool trace);

} // namespace npuc::npu
