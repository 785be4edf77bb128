// Emit.h - instruction emission: a tiled TIR loop nest of NpuOp leaves -> NPU instructions.
//
// The NPU has no loop instructions, so emission runs the loop nest at compile time: For loops
// iterate, IfThenElse picks a branch, and every NpuOp becomes one isa::Instr with each field
// expression evaluated under the current loop variables. Fields the target fixes must match;
// fields it does not have must be zero; values must fit the field. An NpuOp whose box is empty
// (a size field evaluates to 0) moves nothing and emits nothing. A DMA or vector box whose
// innermost extent is 1 is emitted with that dimension dropped (the same elements in the same
// order), since the hardware accesses at least a bank word per innermost row.
#pragma once

#include "isa/Program.h"
#include "npu/Reject.h"
#include "support/Expected.h"
#include "tir/IR.h"

#include <string>

namespace npuc::npu {

/// The instructions of `body`, or a Reject (kind Encoding, group -1: the caller knows the group)
/// naming the instruction, the field and the value that does not fit. `where` names the group
/// in the message.
Expected<isa::Program, Reject> emitInstructions(const isa::Target &t, const tir::Stmt &body,
                                                const std::string &where);

} // namespace npuc::npu
