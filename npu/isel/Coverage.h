// Coverage.h - how much of a function's innermost work NPU instructions perform.
//
// The innermost work of a function is what its leaves do when it runs: every executed scalar
// store is one unit, every executed NPU instruction (an NpuOp statement, symbolic or placed)
// counts the elements it processes (n0*n1*n2 for vector and DMA instructions, m*k*n
// multiply-accumulates for matmul, i.e. the iterations of the scalar nest it replaced). Trip
// counts are exact: loops are counted by multiplication where the body's work cannot depend on
// the loop variable and iterated otherwise (conditions, dependent inner bounds). Used to compare
// a nest before and after normalisation (docs/COVERAGE.md) and by `npuc inspect`.
#pragma once

#include "isa/Target.h"
#include "tir/IR.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace npuc::tir {

struct Coverage {
  int64_t tensor = 0, vector = 0, dma = 0, scalar = 0; // work by who performs it
  std::map<std::string, int64_t> issued;               // executed instructions by mnemonic
  int64_t total() const { return tensor + vector + dma + scalar; }
  /// Fraction of the work done by tensor and vector instructions (1 for a function with none).
  double computeFraction() const;
  /// Fraction done by any NPU instruction (tensor, vector or DMA).
  double instrFraction() const;
  Coverage &operator+=(const Coverage &o);
};

/// Measures f; instruction kinds come from the target's description of each mnemonic.
/// An NpuOp whose mnemonic the target does not describe is a compiler bug (NPUC_ASSERT).
Coverage measureCoverage(const PrimFunc &f, const isa::Target &t);
Coverage measureCoverage(const Stmt &s, const isa::Target &t);

/// Every buffer (parameters and allocations) moved to `scope`: a nest's operands as a kernel
/// that staged them there sees them.
PrimFunc withScope(const PrimFunc &f, const std::string &scope);

/// Emission from loop analysis on a fused group's reference loop nest (lowerGroup, which the
/// caller runs: this library does not know the graph), with its buffers in the vector unit's
/// first level: coverage of emit-npu alone and after the normalisation pipeline, PreProcess and
/// emit-npu (GroupCoverage.cpp). `error` is set (and the coverages empty) when the group cannot
/// be lowered to TIR (the caller sets it) or the target's vector unit reads no level.
struct GroupCoverage {
  Coverage before, after;
  std::vector<std::string> scalar; // per nest left scalar after normalisation: store and reason
  std::string error;
};
GroupCoverage analyseNest(const PrimFunc &reference, const isa::Target &t);
/// For `npuc inspect --loops`: work emitted by kind, instructions, and (one line each, at most
/// `maxScalar`) the nests left scalar with the reason.
std::string describe(const GroupCoverage &c, size_t maxScalar = 3);

} // namespace npuc::tir
