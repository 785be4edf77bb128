// HugePages.cpp - madvise(MADV_HUGEPAGE) on a buffer's aligned interior (see HugePages.h).
#include "support/HugePages.h"

#include <cstdint>
#include <sys/mman.h>

namespace npuc {

void adviseHugePages(void *p, size_t bytes) {
  constexpr uintptr_t kHuge = uintptr_t(2) << 20;
  if (!p || bytes < 2 * kHuge)
    return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (end > begin) // the result is advice: a kernel without THP says EINVAL, which changes nothing
    (void)::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_HUGEPAGE);
}

} // namespace npuc
