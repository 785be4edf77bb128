// HugePages.h - asking the kernel for transparent huge pages on a large buffer about to be
// written.
//
// On a VM a 4 KiB page fault costs microseconds: filling 100 MB of fresh memory (ResNet-50's
// weights, unpacked from a package and packed for the CPU kernels) took longer in faults than in
// copying. Where transparent huge pages are in `madvise` mode (the common default), a buffer
// that asks for them faults 2 MiB at a time. Advice only: nothing changes where the kernel
// refuses, and buffers under 4 MiB are left alone.
#pragma once

#include <cstddef>
#include <vector>

namespace npuc {

/// Advises huge pages for the 2 MiB-aligned part of [p, p + bytes).
void adviseHugePages(void *p, size_t bytes);

/// A vector with room for `n` elements, advised as above, and still empty: push_back or insert
/// fill it without a zero fill first.
template <typename T> std::vector<T> reservedLarge(size_t n) {
  std::vector<T> v;
  v.reserve(n);
  adviseHugePages(v.data(), n * sizeof(T));
  return v;
}

} // namespace npuc
