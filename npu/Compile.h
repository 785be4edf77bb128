// Compile.h - the NPU backend's entry points: what the NPU can run, and compiling a segment.
//
// A segment is a maximal run of consecutive NPU-placed fused groups (in the graph's execution
// order). compileSegment() lowers each group to a tiled TIR loop nest whose leaves are NPU
// instructions (NpuOp statements), emits the instruction stream, inserts dependency tokens, and
// lays out the segment's DRAM image. Tensors live in DRAM in the NPU layout: fp16, 4-D tensors as
// NHWC, all others row-major in their logical shape.
#pragma once

#include "graph/Graph.h"
#include "isa/Program.h"
#include "isa/Target.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace npuc::npu {

enum class DramLayout { NHWC, RowMajor };

/// Where one graph value lives in a segment's DRAM image.
struct DramTensor {
  graph::ValueId value = graph::kNoValue;
  std::string name;
  int64_t addr = 0; // byte address in DRAM
  Shape shape;      // logical (ONNX, NCHW) shape
  DramLayout layout = DramLayout::RowMajor;
  int64_t bytes() const { return numElements(shape) * 2; } // fp16
};

struct CompileOptions {
  bool doubleBuffer = true;
  bool naiveTiling = false; // ablation: one fixed tile shape instead of the cost model's choice
  /// Consecutive groups take their on-chip buffers from opposite ends of each level, so the next
  /// group's weights and constants load while the current group computes (ablation: false puts
  /// every group's buffers at the bottom, which orders those loads after the current group).
  bool crossGroupPrefetch = true;
  /// Bank-conflict-aware placement of each kernel's on-chip buffers (npu/BankAlloc.h);
  /// false (`--no-bank-aware`) keeps the bump allocator's addresses.
  bool bankAware = true;
  /// Tests only: search every group and take its best candidate placement even when it is no
  /// better, so that the relocation of each kernel's buffers is exercised (same outputs).
  bool bankAlwaysMove = false;
  /// Intermediate tensors stay in L1 between consecutive groups where the residency analysis
  /// (graph/Residency.cpp) proposes it and the kernels still tile around them (npu/Resident.cpp);
  /// false (`--no-residency`) round-trips every tensor through DRAM.
  bool residency = true;
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
  std::string tir;              // the tiled TIR loop nest, printed
  int64_t instrBegin = 0, instrEnd = 0;       // [begin, end) program indices of its instructions
  std::map<std::string, int64_t> instrCounts; // by mnemonic
  int64_t macs = 0;                           // useful MACs
  int64_t rooflineCycles = 0; // max(MAC-bound, compulsory DRAM bytes / BW, vector-bound)
  std::string bound;          // which term sets the roofline: "tensor", "dram" or "vector"
  std::map<std::string, int64_t> onChipBytes; // level name -> the kernel's peak reserved bytes
  BankReport bank;
};

struct Segment {
  std::vector<int> groups; // group ids, in execution order
  isa::Program program;
  int64_t dramBytes = 0;              // size of the DRAM image the program addresses
  int64_t activationBytes = 0;        // peak DRAM footprint of the activations (liveness-planned)
  int64_t activationBytesNoReuse = 0; // what they would take without reusing dead tensors' space
  int64_t constBase = 0; // constants (weights, biases) live at [constBase, +constImage)
  std::vector<uint8_t> constImage;
  std::vector<DramTensor> inputs;  // values the host writes before the run
  std::vector<DramTensor> outputs; // values the host reads after the run
  std::vector<GroupInfo> groupInfo;
  std::vector<ResidencyEntry> residency; // empty with CompileOptions::residency off
};

/// Empty when the target can run the group on its NPU; otherwise the reason it cannot
/// (e.g. "Softmax: the target's vector unit has no 'exp' op"). Derived from the target.
/// A group no hand-written kernel takes is tried with the loop-nest kernel (emit-npu) unless
/// `loopNest` is false (fusion also asks that way, so that no merge trades a hand kernel - the
/// tensor unit - for the loop-nest kernel's vector-unit arithmetic).
std::string npuRejectReason(const graph::Graph &g, const graph::FusedGroup &grp,
                            const isa::Target &t, bool loopNest = true);

/// Compiles consecutive NPU groups into one program. Throws npuc::Error for user-facing
/// problems (a shape the instruction fields cannot encode, naming the node and field).
Segment compileSegment(const graph::Graph &g, const std::vector<int> &groupIds,
                       const isa::Target &t, const CompileOptions &opt = {});

/// Packs a host fp32 tensor into the NPU layout (fp16 bits, little endian) and back.
std::vector<uint8_t> packTensor(const HostTensor &t, DramLayout layout);
HostTensor unpackTensor(const uint8_t *bytes, const Shape &shape, DramLayout layout);

} // namespace npuc::npu
