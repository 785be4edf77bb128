// Compile.h - the NPU backend's entry points: what the NPU can run, and compiling a segment.
//
// A segment is a maximal run of consecutive NPU-placed fused groups (in the graph's execution
// order). compileSegment() lowers each group to a tiled TIR loop nest whose leaves are NPU
// instructions (NpuOp statements), emits the instruction stream, inserts dependency tokens, and
// lays out the segment's DRAM image. Tensors live in DRAM in the NPU layout: the tensor unit's
// operand dtype (fp16, or int8 with a per-tensor scale on quantised targets: npu/hw/Quant.h), in
// the layout npu/hw/DramLayout.h decides (4-D tensors NHWC, all others row-major in their logical
// shape).
#pragma once

#include "graph/Graph.h"
#include "isa/Program.h"
#include "isa/Target.h"
#include "npu/Reject.h"
#include "npu/hw/Layout.h"
#include "npu/hw/Quant.h"
#include "npu/kernels/KernelSelect.h"
#include "npu/pipeline/Phase.h"
#include "npu/schedule/Schedule.h"
#include "simulator/DramTraffic.h"
#include "support/Expected.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace npuc::npu {

struct PhaseControl; // npu/pipeline/Phase.h

struct CompileOptions {
  bool doubleBuffer = true;
  bool naiveTiling = false; // ablation: one fixed tile shape instead of the cost model's choice
  /// Batch > 1: tensor-unit kernels may keep each weight block on chip while every image streams
  /// through (npu/kernels/TensorUnit.h `nin`); false (`--no-batch-weight-reuse`) reloads the
  /// weights per image.
  bool batchWeightReuse = true;
  /// Threads for the compiler's independent trial simulations (batch splitting's per-group
  /// costs); 0: one per hardware thread. The output does not depend on it. Callers that already
  /// compile on several threads (npuc tune, npuc explore) pass 1.
  int jobs = 0;
  /// Consecutive groups take their on-chip buffers from opposite ends of each level, so the next
  /// group's weights and constants load while the current group computes (ablation: false puts
  /// every group's buffers at the bottom, which orders those loads after the current group).
  bool crossGroupPrefetch = true;
  /// Bank-conflict-aware placement of each kernel's on-chip buffers (npu/pipeline/BankAlloc.h);
  /// false (`--no-bank-aware`) keeps the bump allocator's addresses.
  bool bankAware = true;
  /// Tests only: search every group and take its best candidate placement even when it is no
  /// better, so that the relocation of each kernel's buffers is exercised (same outputs).
  bool bankAlwaysMove = false;
  /// int8 targets: the calibration set's files and directories (`--calibrate`,
  /// tools/driver/CalibrationSet.h); empty: one fixed-seed standard-normal input (npu/hw/Quant.h).
  std::vector<std::string> calibrationPaths;
  /// int8 targets: how each activation's threshold is chosen (`--calibration-method`).
  CalibrationSpec calibration;
  /// int8 targets: the activation scales every segment compiles with (required there).
  std::shared_ptr<const QuantTable> quant;
  /// int8 targets, > 0 (`--int8-accuracy COS`): the most sensitive NPU groups stay wide, in fp32
  /// on the CPU, until the outputs' cosine against fp32 reaches COS on the calibration set
  /// (npu/hw/MixedPrecision.h; the driver places them). 0: every group the NPU runs is int8.
  double int8Accuracy = 0;
  /// What --int8-accuracy found (the cosines before and after, how many groups kept wide), for
  /// inspect and the report; empty without it.
  std::string int8AccuracyResult;
  /// Intermediate tensors stay in L1 between consecutive groups where the residency analysis
  /// (graph/Residency.cpp) proposes it and the kernels still tile around them
  /// (npu/pipeline/Resident.cpp); false (`--no-residency`) round-trips every tensor through DRAM.
  bool residency = true;
  /// Batch > 1: runs of consecutive groups whose per-image intermediates fit L1 execute one
  /// sub-batch at a time so that those stay resident (npu/pipeline/BatchSplit.h); false
  /// (`--no-batch-split`) runs every group on the whole batch.
  bool batchSplit = true;
  /// Split a run that saves DRAM traffic even when its groups, simulated alone, take more
  /// cycles (`--batch-split-dram-first`: DRAM energy before latency); off: never slower.
  bool batchSplitEvenIfSlower = false;
  /// Chains of groups that compute each output row from a window of rows (convolutions,
  /// pooling, elementwise) run depth-first, image by image at batch > 1, band by band, where that
  /// keeps intermediates that would spill in L1 and the simulation finds it moves fewer DRAM bytes
  /// and is not slower (npu/pipeline/DepthFirst.h); false (`--no-depth-first`) runs every group on
  /// whole tensors.
  bool depthFirst = true;
  /// Attention's three groups (the scores' product, Softmax, the second product) merge into one
  /// where the fused kernel runs them and its estimate is no worse (graph/Passes.h
  /// fuseAttention, npu/kernels/LowerAttention.cpp): the scores stay on chip. False
  /// (`--no-fused-attention`): three groups, the scores through memory unless residency keeps them.
  bool fusedAttention = true;
  /// The segments serve timing-only simulations alone (a design-space sweep): the constants'
  /// bytes are not packed (their space is, zero-filled), so `Segment::constImage` holds zeros.
  /// Such a segment is never packaged or run functionally (both assert).
  bool timingOnly = false;
  /// Run every chain depth-first in bands of this many output rows, whatever the simulation
  /// finds (`--depth-first-rows`: exploring band heights, testing halos); 0: chosen by cost.
  int64_t depthFirstRows = 0;
  /// Every NPU group a segment of its own (`--segment-per-group`), so that every value crosses
  /// the host and `npuc run --compare-ref` compares each NPU group's outputs: the numerics are
  /// the same (a value leaves and re-enters the NPU in its storage type and scale), the cycles
  /// are not (no overlap or residency between groups).
  bool segmentPerGroup = false;
  /// A group of layout ops that moves bytes becomes a view when the host on one side of it, or
  /// the batched MatMul producing its input, can use the layout that cancels it (the segment
  /// pipeline's choose-layouts phase). False keeps its copy on the NPU (tests of the copy kernel).
  bool chooseLayouts = true;
  /// Check the segment plan's invariants after every phase of the segment pipeline
  /// (npu/pipeline/Verify.cpp); a broken invariant is a compiler bug (NPUC_ASSERT). On in every
  /// build: it costs well under 0.1% of the pipeline's time (ResNet-50: 5 ms of 7 s; see
  /// `npuc compile --time-phases`). False (`--no-verify-phases`) skips it.
  bool verifyPhases = true;
  /// Print the plan after some phases, stop after one, time them (`npuc compile --print-after`,
  /// `--stop-after`, `--time-phases`); null: none of these. Shared by every segment compiled
  /// with these options.
  std::shared_ptr<PhaseControl> phases;
  /// Schedules to force, by group key (`npuc compile --schedule`; npu/schedule/Schedule.h): a
  /// group whose key is listed lowers that point of its kernel's space instead of the default.
  std::shared_ptr<const ScheduleFile> schedules;
  /// Schedules the auto-tuner found, by group key (the best tuning record per key): soft points.
  /// A listed group lowers its point where that point is legal in the group's context; elsewhere
  /// it compiles as without the record and Segment::warnings says why. A forced schedule wins.
  std::shared_ptr<const ScheduleFile> tuned;
  /// Testing the crash path only (`npuc compile --debug-crash-at=PHASE`, hidden, as clang's
  /// `#pragma clang __debug crash`): an internal error at the start of that phase of every
  /// segment, or for `lower` while the first group is lowered, so the reproducer is the group.
  std::optional<Phase> debugCrashAt;
};

/// A run of consecutive groups the segment compiler executes sub-batch by sub-batch
/// (npu/pipeline/BatchSplit.h): each sub-batch runs every group of the run before the next one
/// starts, so the run's intermediates stay in L1 at sub-batch size.
struct BatchSplitEntry {
  std::vector<int> groups;    // group ids, in execution order
  int64_t batch = 1;          // images in the whole batch
  int64_t subBatch = 1;       // images per sub-batch (the run is emitted batch/subBatch times)
  int64_t dramBytesSaved = 0; // the run's intermediates kept in L1, over all sub-batches
  /// What the run's kernels move more at sub-batch size, N/b times, than at the whole batch,
  /// each simulated alone without residency: mostly weights loaded once per sub-batch (0 for
  /// kernels that reload them per image anyway; negative when smaller tiles re-read less).
  int64_t extraDramBytes = 0;
  std::string reason; // the cost model's figures
};

/// A run of consecutive groups the segment compiler executes depth-first, band by band
/// (npu/pipeline/DepthFirst.h): each band of the run's output rows runs every group of the run on
/// the rows it needs (halo rows recomputed per band) before the next band starts, so that the
/// run's intermediates stay in L1 at band size.
struct DepthFirstEntry {
  std::vector<int> groups; // group ids, in execution order
  int64_t rows = 0;        // the run's output rows
  int64_t bandRows = 0;    // output rows per band (the last band may have fewer)
  int64_t bands = 0;       // per image
  int64_t images = 1;      // batch > 1: every image's bands, image by image
  /// Rows of the run's tensors computed more than once (the halos recomputed), over all bands,
  /// and the work that costs: tensor-unit MACs and vector-op elements the bands execute beyond
  /// the whole tensors' kernels (each simulated alone).
  int64_t recomputedRows = 0;
  int64_t recomputedMacs = 0, recomputedVectorElements = 0;
  /// The run's groups, each simulated alone (timing only): as a whole (less what residency keeps
  /// anyway) and band by band.
  int64_t wholeDramBytes = 0, bandDramBytes = 0;
  int64_t wholeCycles = 0, bandCycles = 0;
  std::string reason; // the figures in words
};

/// What the segment compiler did with one tensor the residency analysis proposed: kept in L1
/// (no DRAM traffic for it at all), or left in DRAM and why.
struct ResidencyEntry {
  std::string name;           // the tensor (its views alias it and share its home)
  int64_t bytes = 0;          // size in L1
  int producer = -1;          // group id
  std::vector<int> consumers; // group ids reading it (its views' readers included)
  int64_t l1Addr = -1;        // kept: where it lives in L1
  int64_t dramBytesSaved = 0; // kept: the compulsory DRAM write + one read per reading group
  std::string dropped;        // "" when kept, else why it stays in DRAM
};

/// What the bank-aware placement did for one group. The figures come from simulating the
/// group's instructions alone (timing only, same model as the simulator), so they can differ
/// from the group's share of a whole-segment run, where neighbouring groups overlap it.
struct BankReport {
  bool ran = false;                          // false: disabled, or the group has no on-chip buffers
  int64_t stallsBefore = 0, stallsAfter = 0; // bank-conflict stall cycles
  int64_t cyclesBefore = 0, cyclesAfter = 0; // total cycles of the group alone
  int candidates = 0;                        // placements simulated besides the default
  std::string change; // the buffers moved ("" when the default placement was kept)
};

/// What `npuc inspect` shows for one group, and what the report attributes to it.
struct GroupInfo {
  int groupId = -1;
  std::string name;
  std::vector<std::string> ops; // op types of the group's nodes
  std::string tiling;           // human-readable tiling decision (levels, tile sizes, buffering)
  /// The point of its kernel's schedule space the group lowered, filed under its key
  /// (`npuc compile --emit-schedule`; not stored in packages).
  ScheduleKey scheduleKey;
  Schedule schedule;
  std::string tir;              // the tiled TIR loop nest, printed
  int64_t instrBegin = 0, instrEnd = 0;       // [begin, end) program indices of its instructions
  std::map<std::string, int64_t> instrCounts; // by mnemonic
  int64_t macs = 0;                           // useful MACs, wherever they run
  int64_t rooflineCycles = 0; // max(MAC-bound, compulsory DRAM bytes / BW, vector-bound)
  std::string bound;          // which term sets the roofline: "tensor", "dram" or "vector"
  std::map<std::string, int64_t> onChipBytes; // level name -> the kernel's peak reserved bytes
  BankReport bank;
  /// A group of a batch-split run (Segment::batchSplit) has one entry per sub-batch: which one
  /// this is (-1: the group runs on the whole batch).
  int64_t subBatch = -1;
  /// A group of a depth-first run (Segment::depthFirst) has one entry per band: which one this is
  /// (-1: the group runs on its whole tensors).
  int64_t band = -1;
  /// A group of layout ops only (npu/hw/DramLayout.h): "transforms cancel (zero-copy view)" or the
  /// transform its copy runs; "" for other groups. A cancelled group counts its layout ops and
  /// the DRAM bytes a copy would have read and written.
  std::string layout;
  int layoutOpsCancelled = 0;
  int64_t layoutBytesNotMoved = 0;
};

struct Segment {
  std::vector<int> groups; // group ids, in execution order
  isa::Program program;
  int64_t dramBytes = 0;              // size of the DRAM image the program addresses
  int64_t activationBytes = 0;        // peak DRAM footprint of the activations (liveness-planned)
  int64_t activationBytesNoReuse = 0; // what they would take without reusing dead tensors' space
  int64_t constBase = 0; // constants (weights, biases) live at [constBase, +constImage)
  std::vector<uint8_t> constImage;
  bool timingOnly = false; // CompileOptions::timingOnly: constImage is zeros of the right size
  std::vector<DramTensor> inputs;  // values the host writes before the run
  std::vector<DramTensor> outputs; // values the host reads after the run
  std::vector<GroupInfo> groupInfo;
  std::vector<ResidencyEntry> residency;    // empty with CompileOptions::residency off
  std::vector<BatchSplitEntry> batchSplit;  // the runs executed sub-batch by sub-batch
  std::vector<std::string> batchSplitNotes; // batch > 1: runs considered and not split, and why
  std::vector<DepthFirstEntry> depthFirst;  // the runs executed band by band
  std::vector<std::string> depthFirstNotes; // chains considered and not run depth-first, and why
  /// What the user asked for and did not get, one line each, naming the group: "group 'conv1':
  /// tuning record <point> ignored: <reason>" (CompileOptions::tuned). Not stored in packages.
  std::vector<std::string> warnings;
};

/// The segment's DRAM image by class, for the simulator's traffic accounting
/// (simulator/DramTraffic.h): its constants, its inputs until the program first writes into
/// their bytes (their space reused), its outputs from the first instruction of the group that
/// produces each; the rest holds intermediates. `g` is the graph the segment was compiled from.
sim::DramRegions dramRegionsOf(const Segment &seg, const graph::Graph &g);

/// Compiles consecutive NPU groups into one program (the segment pipeline: npu/pipeline/).
/// A compiler decision that leaves no program (a kernel finds no tiling in its window, an
/// instruction field cannot encode a value, the DRAM image does not fit) is a Reject naming the
/// group to blame (-1: no single group). Throws npuc::Error for bad input only (a target the
/// backend cannot compile for, an int8 target without scales). With CompileOptions::phases
/// stopping early, the Segment holds what the phases run so far decided.
Expected<Segment, Reject> compileSegment(const graph::Graph &g, const std::vector<int> &groupIds,
                                         const isa::Target &t, const CompileOptions &opt = {});

} // namespace npuc::npu
