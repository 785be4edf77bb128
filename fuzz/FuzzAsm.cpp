// FuzzAsm.cpp - the assembler on arbitrary text (isa/Program.h assemble), for the preset the
// first byte picks. A program it accepts must also survive the binary round trip: when encode
// accepts it, decode(encode(p)) disassembles to the same text as p.
#include "fuzz/FuzzTargets.h"
#include "isa/Program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const npuc::isa::Target *t = nullptr;
  if (!npuc::fuzz::pickPreset(data, size, t))
    return 0;
  npuc::isa::Program p;
  std::vector<uint8_t> bin;
  try {
    p = npuc::isa::assemble(*t, npuc::fuzz::asText(data, size), "fuzz.s");
    bin = npuc::isa::encode(*t, p);
  } catch (const npuc::Error &) {
    return 0;
  }
  // The encoder accepted the program, so its decoder must read it back unchanged.
  npuc::isa::Program back = npuc::isa::decode(*t, bin);
  NPUC_ASSERT(npuc::isa::disassemble(*t, back) == npuc::isa::disassemble(*t, p),
              "an encoded program decodes to a different program");
  return 0;
}
