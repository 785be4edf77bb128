// Reject.h - why the NPU backend does not produce code for a group: one structured type.
//
// A Reject is an ordinary result of a compiler decision (no tiling fits the scratchpads, an
// instruction field cannot encode a value, the target lacks an op), returned through
// Expected<T, Reject> rather than thrown: the caller picks the next strategy (single buffering,
// the loop-nest kernel, splitting the group, the CPU) and knows which group failed without
// recompiling prefixes of a segment. npuc::Error remains for bad input only.
#pragma once

#include <string>
#include <utility>

namespace npuc::npu {

/// Why, as a closed set: what a fallback may do about it differs by kind.
enum class RejectKind {
  Capacity,    // the data does not fit a memory level (tiles, buffers, DRAM)
  Encoding,    // an instruction field cannot hold a value (stride, size, pad width)
  Unsupported, // the target has no instruction for the op, or no kernel handles the group's shape
  Quantisation // int8: the quantisation scheme does not cover the group
};
inline const char *rejectKindName(RejectKind k) {
  switch (k) {
  case RejectKind::Capacity:
    return "capacity";
  case RejectKind::Encoding:
    return "encoding";
  case RejectKind::Unsupported:
    return "unsupported";
  case RejectKind::Quantisation:
    return "quantisation";
  }
  return "?";
}

/// Where in the backend the decision was taken (the segment pipeline's phases and the kernel
/// selection that runs before any segment exists, during placement).
enum class RejectPhase {
  Analyse,   // recognising the group's shape (npu/kernels/Plan.h analyzeGroup)
  Lower,     // a kernel's tiling and lowering to TIR
  Emit,      // instruction encoding
  Residency, // keeping tensors in L1
  Dram,      // the segment's DRAM image
  Segment    // segment-wide checks
};
inline const char *rejectPhaseName(RejectPhase p) {
  switch (p) {
  case RejectPhase::Analyse:
    return "analyse";
  case RejectPhase::Lower:
    return "lower";
  case RejectPhase::Emit:
    return "emit";
  case RejectPhase::Residency:
    return "residency";
  case RejectPhase::Dram:
    return "dram";
  case RejectPhase::Segment:
    return "segment";
  }
  return "?";
}

struct Reject {
  int group = -1; // graph::FusedGroup::id; -1 when no single group is to blame
  RejectPhase phase = RejectPhase::Lower;
  RejectKind kind = RejectKind::Capacity;
  std::string message; // names the group and the limit, for `npuc inspect` and CPU reasons

  /// "message" as users read it (CPU placement reasons, notes of split groups).
  const std::string &text() const { return message; }
};

/// A kernel's reject: phase Lower, the group filled in by kernel selection (KernelSelect.cpp).
inline Reject kernelReject(RejectKind kind, std::string message) {
  return Reject{-1, RejectPhase::Lower, kind, std::move(message)};
}

} // namespace npuc::npu
