// FuzzPackage.cpp - the package loader on arbitrary bytes (tools/driver/Package.h
// parsePackage): header, sections, the graph and every segment's program and tensors.
#include "fuzz/FuzzUtil.h"
#include "tools/driver/Package.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    npuc::driver::CompiledModel m =
        npuc::driver::parsePackage(npuc::fuzz::asText(data, size), "fuzz.npub");
    (void)m;
  } catch (const npuc::Error &) {
  }
  return 0;
}
