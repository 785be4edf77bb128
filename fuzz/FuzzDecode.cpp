// FuzzDecode.cpp - the binary decoder on arbitrary bytes (isa/Program.h decode), for the preset
// the first byte picks. A decoded program must disassemble and re-encode to bytes that decode to
// the same program (decode may normalise bits it ignores, so bytes are not compared).
#include "fuzz/FuzzTargets.h"
#include "isa/Program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const npuc::isa::Target *t = nullptr;
  std::optional<npuc::isa::Program> decoded = npuc::fuzz::decodeInput(data, size, t);
  if (!decoded)
    return 0;
  const npuc::isa::Program &p = *decoded;
  std::string text = npuc::isa::disassemble(*t, p);
  npuc::isa::Program again = npuc::isa::decode(*t, npuc::isa::encode(*t, p));
  NPUC_ASSERT(npuc::isa::disassemble(*t, again) == text,
              "a decoded program re-encodes to a different program");
  return 0;
}
