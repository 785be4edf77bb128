// LoaderInternal.h - the split of the target loader into its two halves (internal to isa/):
// Loader.cpp reads the machine (memories, engines, units) and Instructions.cpp reads and checks
// the instruction set against it. The machine must be complete before instructions are read,
// because instruction fields refer to engines and memory levels by name.
#pragma once

#include "isa/Target.h"
#include "isa/YamlNode.h"

namespace npuc::isa::detail {

/// Reads `instructions:` into t.instrs and validates encodings, names and field coverage.
/// Requires t.levels, t.engines, t.vector, t.instructionBits and t.opcodeField to be final.
void parseInstructions(const YNode &seq, Target &t);

} // namespace npuc::isa::detail
