// Passes.h - graph-level passes: cleanup and constant folding, common-subexpression elimination,
// BatchNorm folding, operator fusion into FusedGroups by operator class, cost-aware NPU/CPU
// placement, and the L1-residency analysis between NPU groups. Each pass keeps node/value ids
// stable (removed nodes are marked dead) so that diagnostics and later passes can refer to them.
#pragma once

#include "graph/Graph.h"

#include <functional>
#include <string>
#include <vector>

namespace npuc::graph {

/// Recomputes every live node's output shapes in topological order (after rewrites).
void inferShapes(Graph &g);

/// Removes Identity/Dropout (and Pad with all-zero pads), folds nodes whose inputs are all
/// constants into constants (except nodes producing graph outputs), turns a Gather of one
/// constant position into a Slice (and a Reshape dropping the axis for a scalar index),
/// simplifies layout ops (simplifyLayoutOps), then removes dead nodes.
void simplify(Graph &g);

/// Algebraic simplification of layout ops (LayoutSimplify.cpp): reshape chains collapse into one
/// Reshape, Transpose pairs compose, identity transposes and same-shape reshapes disappear, and a
/// Transpose that moves only unit dims becomes a Reshape. Graph outputs keep their values.
/// Returns the number of rewrites.
int simplifyLayoutOps(Graph &g);

/// If node n's inputs are all constants (or n is Shape, whose result is static), evaluates it
/// with the reference kernels, turns its output into a constant and marks n dead. Returns
/// whether it folded. Used by simplify() and by the frontend's import-time folding.
bool foldConstantNode(Graph &g, NodeId n);

/// BatchNormalization right after a Conv whose output has that BN as its single consumer (and
/// is not a graph output) is folded into the conv's weights and bias. Any other BN becomes
/// Mul + Add with per-channel constants of shape [C, 1, ..., 1]. BN parameters must be constant.
void foldBatchNorm(Graph &g);

/// Common-subexpression elimination (Cse.cpp): merges equal constants (by value) and nodes with
/// the same op, attributes and (canonical) inputs; commutative ops match with swapped inputs.
/// Nodes producing graph outputs are kept. Returns how many were merged.
int eliminateCommonSubexpressions(Graph &g);

/// The fusion class of node n: its operator's (the Pattern column of Ops.def), except that a
/// node with several outputs is Opaque and a broadcasting node whose operands all have the
/// output's shape is ElemWise.
OpPattern opPattern(const Graph &g, const Node &n);

/// May fusion merge `parts` (the current groups on a fused path) into `merged`?
using FusionFilter = std::function<bool(const Graph &, const FusedGroup &merged,
                                        const std::vector<FusedGroup> &parts)>;

/// Fills g.groups by post-dominator fusion (see Fusion.cpp). Clears any previous grouping. An
/// empty filter accepts every merge the operator classes allow.
void fuseOps(Graph &g, const FusionFilter &filter = {});

/// Merges each attention left in three groups by fuseOps - a group whose anchor is a MatMul and
/// whose one output (the scores) only a Softmax group of one node reads, whose output only a
/// group of one MatMul reads as its left operand - into one group when `accept` takes it (a
/// device's fused attention kernel, FuseAttention.cpp). The merged group takes the last group's
/// place. Returns how many were merged.
int fuseAttention(Graph &g, const FusionFilter &accept);

/// A filter for a device that runs an anchor followed by a chain (each node reads the previous
/// node's output, read by no one outside the group; other operands come from outside the group
/// or are earlier chain values, which the device keeps: x * f(x)) when rejectReason
/// accepts it: a merge is allowed when the merged group is such a runnable chain, or when none
/// of the parts was runnable (merging CPU work never takes work away from the device); a
/// view-only part does not count as device work (placement keeps views with their neighbours).
FusionFilter
preserveRunnable(const std::function<std::string(const Graph &, const FusedGroup &)> &rejectReason);

/// Groups made only of Reshape/Flatten/Squeeze/Unsqueeze (a free reinterpretation).
bool isViewOnly(const Graph &g, const FusedGroup &grp);

/// The chain shape preserveRunnable requires. grp's boundary must be current
/// (computeGroupBoundary): a chain value in grp.outputs has a reader outside the chain.
bool isNodeChain(const Graph &g, const FusedGroup &grp);

/// Immediate post-dominator of every live node (-1: only the virtual exit post-dominates it).
std::vector<NodeId> postDominators(const Graph &g);

/// Recomputes grp.inputs/outputs from grp.nodes.
void computeGroupBoundary(const Graph &g, FusedGroup &grp);
/// The same with the graph's use lists (Graph::useLists, or any lists naming every live reader of
/// each value) built once by a caller that computes many boundaries.
void computeGroupBoundary(const Graph &g, FusedGroup &grp,
                          const std::vector<std::vector<NodeId>> &uses);

/// Throughputs the placement cost model uses (see Placement.cpp).
struct DeviceCosts {
  double npuMacsPerSecond = 256e9;
  double npuVectorElemsPerSecond = 16e9;
  double npuDramBytesPerSecond = 16e9;
  double npuElemBytes = 2; // fp16 activations and weights
  double cpuMacsPerSecond = 4e9;
  double cpuElemsPerSecond = 1e9;
  double transferBytesPerSecond = 16e9; // host <-> NPU memory
  double crossingSeconds = 5e-6;        // per value crossing devices: launch + synchronisation
  /// The NPU backend's estimate of one group's seconds from the kernel that will run it (the
  /// tensor-unit kernels' tiling cost, or the loop-nest kernel's vector work); set by the driver,
  /// since graph/ cannot see npu/. Unset, or a negative result: the roofline above, which
  /// charges every MAC at tensor-unit peak whatever kernel runs it.
  std::function<double(const Graph &, const FusedGroup &)> npuGroupSeconds;
};

/// Multiply-accumulates of a group's Conv/ConvTranspose/Gemm/MatMul nodes.
int64_t groupMacs(const Graph &g, const FusedGroup &grp);
double estimateNpuSeconds(const Graph &g, const FusedGroup &grp, const DeviceCosts &c);
double estimateCpuSeconds(const Graph &g, const FusedGroup &grp, const DeviceCosts &c);

/// Sets each group's placement (Placement.cpp): NPU when rejectReason returns "", else CPU with
/// that reason; view-only groups follow their neighbours; with `costs`, a run of NPU groups
/// between CPU groups moves to the CPU when that is cheaper (no ping-pong), with the figures
/// as its reason.
void place(Graph &g,
           const std::function<std::string(const Graph &, const FusedGroup &)> &rejectReason,
           const DeviceCosts *costs = nullptr);

/// Replaces group `gid` by one group per node (same placement as decided later by the caller),
/// renumbering groups; used when a fused group fails to compile. Returns the new groups' ids.
std::vector<int> splitGroup(Graph &g, int gid);

/// An intermediate tensor that could stay in the NPU's L1 between fused groups (Residency.cpp).
struct ResidentTensor {
  ValueId value = kNoValue;
  int producer = -1;          // group id
  std::vector<int> consumers; // group ids, all later in the same NPU segment
  int64_t bytes = 0;          // its size on chip
  int64_t dramBytesSaved = 0; // the DRAM write plus one read per consumer
};

/// Which outputs of the groups `segment` (consecutive NPU groups, in execution order) could
/// stay resident in an on-chip level of `capacity` bytes: consumed only inside the segment,
/// not a graph output, its first consumer the next group, and its bytes plus every tensor still
/// resident plus the consumer's working set (its weights and output, at most half the level,
/// which the tiler needs for its tiles) fit. Proposals: npu/pipeline/Resident.h decides what stays.
std::vector<ResidentTensor> findResidentTensors(const Graph &g, const std::vector<int> &segment,
                                                int64_t capacity, int64_t elemBytes);

} // namespace npuc::graph
