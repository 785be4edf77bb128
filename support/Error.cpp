// Error.cpp - assertion failure reporting (the compiler-bug channel).
#include "support/Error.h"

#include "support/CrashContext.h"

#include <cstdio>
#include <cstdlib>

namespace npuc {

void assertionFailed(const char *cond, const char *file, int line, const std::string &reason) {
  std::fprintf(stderr, "npuc internal error: %s\n  assertion `%s` failed at %s:%d\n",
               reason.c_str(), cond, file, line);
  // What the compiler was doing, and the reproducer when a command installed a writer for one.
  reportInternalError(reason);
  std::abort();
}

} // namespace npuc
