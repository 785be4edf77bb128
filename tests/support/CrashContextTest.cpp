// CrashContextTest.cpp - support/CrashContext.h: the scope stack is per thread and innermost
// first, reportIfInternal reports other exceptions but not npuc::Error, the handler gets the
// innermost scope that can reproduce, and runs once per process (a death test: each runs in a
// child process, so the once-per-process state starts fresh there).
#include "support/CrashContext.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <thread>

using namespace npuc;

namespace {

std::vector<std::string> described() {
  std::vector<std::string> out;
  for (const CrashScope *s : CrashScope::stack())
    out.push_back(s->describe());
  return out;
}

TEST(CrashContext, ScopesStackInnermostFirstAndPop) {
  EXPECT_TRUE(described().empty());
  {
    CrashScope outer([] { return std::string("outer"); });
    {
      CrashScope inner([] { return std::string("inner"); });
      EXPECT_EQ(described(), (std::vector<std::string>{"inner", "outer"}));
    }
    EXPECT_EQ(described(), std::vector<std::string>{"outer"});
  }
  EXPECT_TRUE(described().empty());
}

TEST(CrashContext, EachThreadHasItsOwnStack) {
  CrashScope mine([] { return std::string("main thread"); });
  std::vector<std::string> seen{"unset"};
  std::thread t([&] { seen = described(); });
  t.join();
  EXPECT_TRUE(seen.empty());
}

TEST(CrashContext, ADescriptionThatThrowsDoesNotEscape) {
  CrashScope bad([]() -> std::string { throw std::runtime_error("boom"); });
  EXPECT_EQ(described(), std::vector<std::string>{"(a scope whose description failed)"});
}

// The handler runs in the child with the innermost reproducing scope; its output proves it.
void crashInScopes() {
  CrashHandlerScope h([](const std::string &reason, const CrashScope *repro) {
    fprintf(stderr, "handler: %s; repro=%s\n", reason.c_str(),
            repro ? repro->reproduce("dir").c_str() : "none");
  });
  CrashScope outer([] { return std::string("compiling the model"); },
                   [](const std::string &dir) { return dir + "/outer.graph"; });
  CrashScope mid([] { return std::string("lowering group 3"); },
                 [](const std::string &dir) { return dir + "/group3.graph"; });
  CrashScope inner([] { return std::string("running phase 'lower'"); });
  NPUC_ASSERT(false, "the reason");
}

TEST(CrashContextDeathTest, AssertionPrintsScopesAndRunsTheHandlerWithTheInnermostReproducer) {
  EXPECT_DEATH(crashInScopes(), "the reason.*while running phase 'lower'\n"
                                "npuc: while lowering group 3\n"
                                "npuc: while compiling the model\n"
                                "handler: the reason; repro=dir/group3.graph");
}

void reportTwice() {
  CrashHandlerScope h([](const std::string &reason, const CrashScope *) {
    fprintf(stderr, "handler ran for %s\n", reason.c_str());
  });
  reportIfInternal(Error("bad input")); // npuc::Error: not internal, nothing reported
  reportIfInternal(std::out_of_range("vector::at"));
  reportInternalError("second");
  fprintf(stderr, "reported=%d\n", internalErrorReported());
  std::abort();
}

TEST(CrashContextDeathTest, OnlyTheFirstInternalErrorRunsTheHandler) {
  EXPECT_DEATH(reportTwice(), "handler ran for internal error: vector::at\n"
                              "npuc internal error \\(while reporting another\\): second\n"
                              "reported=1");
}

} // namespace
