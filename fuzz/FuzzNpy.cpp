// FuzzNpy.cpp - the .npy reader on arbitrary bytes (support/Npy.h): magic, version, header
// dictionary, shape and the data's length.
#include "fuzz/FuzzUtil.h"
#include "support/Npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  npuc::fuzz::MemFile file(data, size);
  try {
    npuc::HostTensor t = npuc::readNpy(file.path());
    (void)t;
  } catch (const npuc::Error &) {
  }
  return 0;
}
