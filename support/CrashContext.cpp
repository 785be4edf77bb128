// CrashContext.cpp - the scope stack, the handler and the fatal-signal hook (CrashContext.h).
#include "support/CrashContext.h"

#include "support/Error.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>

namespace npuc {
namespace {

// Per-thread innermost scope: the stack a failing thread prints is its own.
thread_local const CrashScope *innermost = nullptr;

// The installed handler. A process-wide hook, set by the command that knows how to write a
// reproducer (not a cache: nothing is looked up in it).
CrashHandler &handlerSlot() {
  static CrashHandler h;
  return h;
}

std::atomic<bool> reported{false};

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

void onFatalSignal(int sig) {
  std::signal(sig, SIG_DFL);
  reportInternalError(std::string("fatal signal ") + std::to_string(sig) + " (" + strsignal(sig) +
                      ")");
  std::raise(sig);
}

} // namespace

CrashScope::CrashScope(Describe describe, Reproduce reproduce)
    : describe_(std::move(describe)), reproduce_(std::move(reproduce)), outer_(innermost) {
  innermost = this;
}

CrashScope::~CrashScope() {
  innermost = outer_;
}

std::vector<const CrashScope *> CrashScope::stack() {
  std::vector<const CrashScope *> out;
  for (const CrashScope *s = innermost; s; s = s->outer_)
    out.push_back(s);
  return out;
}

std::string CrashScope::describe() const {
  try {
    return describe_();
  } catch (...) {
    return "(a scope whose description failed)";
  }
}

CrashHandlerScope::CrashHandlerScope(CrashHandler h) : previous_(std::move(handlerSlot())) {
  handlerSlot() = std::move(h);
}

CrashHandlerScope::~CrashHandlerScope() {
  handlerSlot() = std::move(previous_);
}

bool internalErrorReported() {
  return reported.load();
}

void reportInternalError(const std::string &reason) {
  if (reported.exchange(true)) {
    std::fprintf(stderr, "npuc internal error (while reporting another): %s\n", reason.c_str());
    return;
  }
  std::vector<const CrashScope *> scopes = CrashScope::stack();
  const CrashScope *repro = nullptr;
  for (const CrashScope *s : scopes) {
    std::fprintf(stderr, "npuc: while %s\n", s->describe().c_str());
    if (!repro && s->canReproduce())
      repro = s;
  }
  std::fflush(stderr);
  if (handlerSlot()) {
    try {
      handlerSlot()(reason, repro);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "npuc: no reproducer: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "npuc: no reproducer: writing it failed\n");
    }
  }
  std::fflush(stderr);
}

void reportIfInternal(const std::exception &e) {
  if (!dynamic_cast<const Error *>(&e) && !reported.load())
    reportInternalError(std::string("internal error: ") + e.what());
}

void installFatalSignalHandlers() {
  if (kSanitized)
    return;
  for (int sig : {SIGSEGV, SIGFPE, SIGBUS, SIGILL})
    std::signal(sig, onFatalSignal);
}

} // namespace npuc
