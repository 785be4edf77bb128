// CrashContext.h - what the compiler was doing when an internal error struck, and the hook that
// writes a reproducer (LLVM's PrettyStackTrace and clang's crash reproducers, small).
//
// Code doing a unit of work it can name (a segment, a phase, a group) holds a CrashScope for
// its duration. The scopes form a per-thread stack. On an internal error (an NPUC_ASSERT, a
// std::exception that is not npuc::Error reaching a point that reports it, or a fatal signal),
// reportInternalError prints the failing thread's scopes, innermost first, as
//   npuc: while lowering group 12 'conv3' (segment 0)
// and then runs the installed CrashHandler once, handing it the innermost scope that can write
// a reproducer (a standalone input that hits the same code). npuc's compile command installs a
// handler that writes the reproducer and the command to rerun it.
//
// Contract: a scope's describe/reproduce callbacks run only during reportInternalError, on the
// failing thread, while the scope is alive; they must not throw (what they throw is swallowed).
// reportInternalError runs at most one handler per process: an error inside the handler, or
// in another thread at the same time, only prints its reason.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace npuc {

class CrashScope {
public:
  using Describe = std::function<std::string()>;
  /// Writes a reproducer into the (existing, empty) directory and returns the name of the model
  /// file it wrote there; throws npuc::Error when it cannot.
  using Reproduce = std::function<std::string(const std::string &dir)>;

  explicit CrashScope(Describe describe, Reproduce reproduce = {});
  ~CrashScope();
  CrashScope(const CrashScope &) = delete;
  CrashScope &operator=(const CrashScope &) = delete;

  /// The calling thread's scopes, innermost first.
  static std::vector<const CrashScope *> stack();
  std::string describe() const;
  bool canReproduce() const { return static_cast<bool>(reproduce_); }
  std::string reproduce(const std::string &dir) const { return reproduce_(dir); }

private:
  Describe describe_;
  Reproduce reproduce_;
  const CrashScope *outer_;
};

/// Runs on the first internal error: `reason` is the error's message, `reproducer` the innermost
/// scope that can write one (null when none can).
using CrashHandler = std::function<void(const std::string &reason, const CrashScope *reproducer)>;

/// Installs `h` for its lifetime (restoring the previous handler after).
class CrashHandlerScope {
public:
  explicit CrashHandlerScope(CrashHandler h);
  ~CrashHandlerScope();
  CrashHandlerScope(const CrashHandlerScope &) = delete;
  CrashHandlerScope &operator=(const CrashHandlerScope &) = delete;

private:
  CrashHandler previous_;
};

/// Prints the calling thread's scopes to stderr and runs the handler (once per process).
void reportInternalError(const std::string &reason);
/// True once reportInternalError has run in this process (main then does not repeat it).
bool internalErrorReported();

/// For code that catches exceptions at a scope boundary: reports a std::exception that is not
/// an npuc::Error (an internal error: std::out_of_range from .at(), std::bad_alloc, ...) while
/// the scopes are still alive, then the caller rethrows.
void reportIfInternal(const std::exception &e);

/// SIGSEGV, SIGFPE, SIGBUS and SIGILL print the scopes and run the handler (best effort, as
/// LLVM's handlers: the process state may be damaged), then the default action runs. Not
/// installed in sanitizer builds, whose own reports are better.
void installFatalSignalHandlers();

} // namespace npuc
