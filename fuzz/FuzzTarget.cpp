// FuzzTarget.cpp - the hardware/ISA YAML loader on arbitrary text (isa/Target.h parseTarget):
// YAML syntax, field types and ranges, the instruction encodings and their consistency checks.
#include "fuzz/FuzzUtil.h"
#include "isa/Target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    npuc::isa::Target t = npuc::isa::parseTarget(npuc::fuzz::asText(data, size), "fuzz.yaml");
    (void)t;
  } catch (const npuc::Error &) {
  }
  return 0;
}
