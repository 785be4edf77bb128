// FuzzTargets.h - the bundled presets, loaded once per harness process, and the choice of one
// by the input's first byte (so one corpus exercises every preset's encoding).
#pragma once

#include "fuzz/FuzzUtil.h"
#include "isa/Program.h"
#include "isa/Target.h"

#include <optional>
#include <vector>

namespace npuc::fuzz {

inline const std::vector<isa::Target> &presets() {
  // Loaded on the first input and kept: loading is the slow part and the presets never change
  // while the fuzzer runs (a harness-local constant, not a compiler cache).
  static const std::vector<isa::Target> all = [] {
    std::vector<isa::Target> v;
    for (const char *name :
         {"npu-base", "npu-int8", "npu-large", "npu-32x32", "npu-tiny", "npu-rtl", "vta-like"})
      v.push_back(isa::loadTarget(sourcePath(std::string("configs/") + name + ".yaml")));
    return v;
  }();
  return all;
}

/// Splits off the selector byte; false when the input is empty.
inline bool pickPreset(const uint8_t *&data, size_t &size, const isa::Target *&t) {
  if (size == 0)
    return false;
  t = &presets()[data[0] % presets().size()];
  ++data;
  --size;
  return true;
}

/// The input as a program binary for the preset its first byte picks; nullopt when it is empty
/// or does not decode (the decoder's errors are the decoder harness's to find).
inline std::optional<isa::Program> decodeInput(const uint8_t *data, size_t size,
                                               const isa::Target *&t) {
  if (!pickPreset(data, size, t))
    return std::nullopt;
  try {
    return isa::decode(*t, std::vector<uint8_t>(data, data + size));
  } catch (const Error &) {
    return std::nullopt;
  }
}

} // namespace npuc::fuzz
