// CrashRepro.cpp - `npuc compile`'s crash reproducers (Commands.h compileCrashHandler), in the
// manner of clang's: on an internal error the failing group (or segment) is written as a
// standalone graph beside a copy of the target, with the command that compiles it again.
//
// The directory is new (mkdtemp under $TMPDIR, else /tmp), so nothing of the user's is
// overwritten. The rerun command is the original command line with the model, --target and
// -o replaced by the directory's files, and every other argument kept as given, except that
// paths of existing files are made absolute so the command runs from any directory.
#include "support/CrashContext.h"
#include "support/Error.h"
#include "support/File.h"
#include "tools/cli/Commands.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace npuc::cli {
namespace fs = std::filesystem;

namespace {

std::string makeCrashDir() {
  const char *tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/npuc-crash-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data()))
    fail("cannot create a directory for the reproducer from {}: {}", pattern, std::strerror(errno));
  return buf.data();
}

std::string shellQuote(const std::string &s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-./=,:+@%") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// An argument naming an existing file, made absolute; anything else as given.
std::string absoluteIfFile(const std::string &arg) {
  std::error_code ec;
  if (arg.empty() || arg[0] == '-' || !fs::is_regular_file(arg, ec))
    return arg;
  return fs::absolute(arg, ec).string();
}

// The original command line with the model, --target and -o replaced.
std::vector<std::string> rerunCommand(const CompileArgs &a, const std::string &model,
                                      const std::string &target, const std::string &output) {
  std::vector<std::string> out;
  const std::vector<std::string> &in = a.commandLine;
  bool modelDone = false;
  for (size_t i = 0; i < in.size(); ++i) {
    const std::string &t = in[i];
    auto valueOf = [&](const std::string &flag, const std::string &with) {
      if (t == flag && i + 1 < in.size()) {
        out.push_back(t);
        out.push_back(with);
        ++i;
        return true;
      }
      if (t.rfind(flag + "=", 0) == 0) {
        out.push_back(flag + "=" + with);
        return true;
      }
      return false;
    };
    if (valueOf("--target", target) || valueOf("-o", output) || valueOf("--output", output))
      continue;
    if (!modelDone && t == a.model && i > 0) {
      out.push_back(model);
      modelDone = true;
      continue;
    }
    out.push_back(absoluteIfFile(t));
  }
  return out;
}

} // namespace

CrashHandler compileCrashHandler(const CompileArgs &a) {
  return [&a](const std::string &reason, const CrashScope *repro) {
    const std::string dir = makeCrashDir();
    std::string model = fs::absolute(a.model).string();
    if (repro)
      model = dir + "/" + repro->reproduce(dir);
    std::string target = a.target;
    std::error_code ec;
    if (fs::is_regular_file(a.target, ec)) {
      target = dir + "/target.yaml";
      fs::copy_file(a.target, target, ec);
      if (ec)
        fail("cannot copy {} into the reproducer: {}", a.target, ec.message());
    }
    std::string cmd;
    for (const std::string &t : rerunCommand(a, model, target, dir + "/out.npub")) {
      if (!cmd.empty())
        cmd += ' ';
      cmd += shellQuote(t);
    }
    writeFileAtomic(dir + "/rerun.sh",
                    fmt::format("#!/bin/sh\n# npuc internal error: {}\n{}\n", reason, cmd));
    std::fprintf(stderr,
                 "npuc: a reproducer is in %s (%s); rerun it with:\n  %s\n"
                 "npuc: please report the internal error with that directory attached\n",
                 dir.c_str(),
                 repro ? "group.graph: the groups of the innermost 'while' line above"
                       : "the whole model",
                 cmd.c_str());
  };
}

} // namespace npuc::cli
