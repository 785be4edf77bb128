// FuzzDecode.cpp - the binary decoder on arbitrary bytes (isa/Program.h decode), for the preset
// the first byte picks. A decoded program must disassemble and re-encode to bytes that decode to
// the same program (decode may normalise bits it ignores, so bytes are not compared).
#include "fuzz/FuzzTargets.h"
#include "isa/Program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const npuc::isa::Target *t = nullptr;
  if (!npuc::fuzz::pickPreset(data, size, t))
    return 0;
  npuc::isa::Program p;
  try {
    p = npuc::isa::decode(*t, std::vector<uint8_t>(data, data + size));
  } catch (const npuc::Error &) {
    return 0;
  }
  std::string text = npuc::isa::disassemble(*t, p);
  npuc::isa::Program again = npuc::isa::decode(*t, npuc::isa::encode(*t, p));
  NPUC_ASSERT(npuc::isa::disassemble(*t, again) == text,
              "a decoded program re-encodes to a different program");
  return 0;
}
