// Hash.h - FNV-1a, the project's one content fingerprint (package checksums, the RTL build's
// target fingerprint). Not cryptographic: it detects corruption and mismatched builds.
#pragma once

#include <cstdint>
#include <string_view>

namespace npuc {

inline uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

} // namespace npuc
