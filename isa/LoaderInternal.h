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

/// Checks every on-chip level's size against the address fields that can point into it (a field
/// of W unsigned bits reaches 2^W bytes), so that a level larger than its instructions can
/// address is rejected at load, naming the level's size and the narrowest field; on-chip levels
/// are also limited to 256 MiB, the most npuc models. `memory` is
/// the `memory:` list the levels came from (for the message's line). Requires t.instrs.
void checkAddressRanges(const YNode &memory, const Target &t);

} // namespace npuc::isa::detail
