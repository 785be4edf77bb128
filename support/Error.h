// Error.h - the two error channels of npuc.
//
// User errors (bad input: a malformed model, a bad YAML field, a wrong input shape) are thrown as
// npuc::Error whose message already names the location (file, node, field or instruction). The
// CLI prints the message and exits non-zero. Compiler bugs are NPUC_ASSERT failures: they abort
// with the reason and the source location, because they are never the user's fault.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace npuc {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string &msg) : std::runtime_error(msg) {}
};

/// Throws npuc::Error with a fmt-formatted message.
template <typename... Args> [[noreturn]] void fail(fmt::format_string<Args...> f, Args &&...args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

[[noreturn]] void assertionFailed(const char *cond, const char *file, int line,
                                  const std::string &reason);

} // namespace npuc

/// Internal invariant. `reason` says why the condition must hold.
#define NPUC_ASSERT(cond, reason)                                                                  \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ::npuc::assertionFailed(#cond, __FILE__, __LINE__, (reason));                                \
  } while (0)
