// Reject.cpp - names of the closed sets in Reject.h (for reports and messages).
#include "npu/Reject.h"

namespace npuc::npu {

const char *rejectKindName(RejectKind k) {
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

const char *rejectPhaseName(RejectPhase p) {
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

} // namespace npuc::npu
