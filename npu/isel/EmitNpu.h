// EmitNpu.h - instruction emission from loop analysis, driven by the target description.
//
// For every perfect loop nest ending in a store (InstrMatch.h), the emitter reads the operation
// and the affine access pattern of each operand, then enumerates the instruction forms the
// loaded isa::Target offers that could implement the innermost loops: vector ops (any op of
// vector_unit.ops the store matches), DMA copies and all-padding DMA fills, and tensor-unit
// matmul tiles; for each it tries every depth (how many innermost loops the instruction's
// n0/n1/n2 or m/k/n cover) and every dimension mapping that keeps the loop's semantics (loops
// may be permuted only when no buffer is both read and written). Each form is checked against
// the description: the instruction has the fields, every extent, stride, immediate and padding
// value fits its field, operand scopes are levels the unit may access (the instruction's
// *_space field can name the level, or fixes it), dtypes are ones its *_dtype fields encode (the
// tensor unit's operand/accumulator dtypes for matmul), and the op is in the vector unit's list.
// Among the legal forms a cost model from the description's timing (docs/ISA.md "Timing":
// latency + fill + elements/lanes or bytes/rate + per-element, times the issue count of the
// loops left outside) picks the cheapest; ties go to the earlier form, vector before DMA.
//
// The chosen form replaces the covered loops with one NpuOp statement named by the
// instruction's mnemonic. Its operands are symbolic: a Load in an operand field (dst=, src1=,
// src2= for vector ops; dst=, src= for DMA; a=, b=, c= for matmul) names the buffer and its
// first element, whose scope and dtype give the *_space and *_dtype fields; every other field
// (op, n0..n2, strides, imm0/imm1, pads, m/k/n, accumulate) is written out. What no form can
// implement stays a scalar loop nest (measureCoverage in Coverage.h reports it).
#pragma once

#include "isa/Target.h"
#include "tir/IR.h"

#include <optional>
#include <string>
#include <vector>

namespace npuc::tir {

/// `scalar` (when given) receives, per nest left scalar, the store and why no form applies.
PrimFunc emitNpu(const PrimFunc &f, const isa::Target &t,
                 std::vector<std::string> *scalar = nullptr);

/// The target level a buffer scope names ("global" is the DRAM level); none for other scopes.
std::optional<int> scopeLevel(const isa::Target &t, const std::string &scope);

/// The dtype code (isa::kDtypeNames index) of a TIR type; none when the ISA has no such dtype.
std::optional<int> dtypeCode(DataType d);

} // namespace npuc::tir
