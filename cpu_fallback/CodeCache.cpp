// CodeCache.cpp - the on-disk machine code cache (see CodeCache.h), on POSIX calls.
#include "cpu_fallback/CodeCache.h"

#include "support/Error.h"
#include "support/File.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace npuc::cpu {
namespace {

std::string env(const char *name) {
  const char *v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// Keys are lowercase hex (SHA-256): nothing else names a file here.
bool isKey(const std::string &key) {
  return !key.empty() && key.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// Why `dir` may not hold executable code ("" when it may): it must be a directory of this user
// that no one else may write.
std::string unsafe(const std::string &dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return fmt::format("the code cache {} is not a directory", dir);
  if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return fmt::format("the code cache {} is not used: it must belong to this user and be "
                       "writable by no one else (its objects are executed)",
                       dir);
  return "";
}

} // namespace

CodeCache CodeCache::at(const std::string &dir) {
  CodeCache c;
  std::error_code ec;
  // A directory that does not exist yet is made by the first store, not by every run.
  if (std::filesystem::exists(dir, ec))
    c.note = unsafe(dir);
  if (c.note.empty())
    c.dir = dir;
  return c;
}

CodeCache CodeCache::fromEnvironment() {
  std::string dir = env("NPUC_CACHE_DIR");
  if (dir == "off") {
    CodeCache c;
    c.note = "NPUC_CACHE_DIR=off";
    return c;
  }
  if (dir.empty() && !env("XDG_CACHE_HOME").empty())
    dir = env("XDG_CACHE_HOME") + "/npuc";
  if (dir.empty() && !env("HOME").empty())
    dir = env("HOME") + "/.cache/npuc";
  if (dir.empty()) {
    CodeCache c;
    c.note = "no code cache: neither NPUC_CACHE_DIR, XDG_CACHE_HOME nor HOME is set";
    return c;
  }
  return at(dir);
}

std::optional<std::string> CodeCache::load(const std::string &key) const {
  if (dir.empty() || !isKey(key))
    return std::nullopt;
  const std::string path = dir + "/" + key + ".o";
  if (::access(path.c_str(), R_OK) != 0)
    return std::nullopt;
  try {
    return readFile(path);
  } catch (const Error &) { // vanished or unreadable meanwhile: as if absent
    return std::nullopt;
  }
}

std::string CodeCache::store(const std::string &key, const std::string &object) const {
  NPUC_ASSERT(isKey(key), "code cache keys are hex digests: " + key);
  if (dir.empty())
    return note;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec)
      return fmt::format("cannot create the code cache {}: {}", dir, ec.message());
    ::chmod(dir.c_str(), 0700);
  }
  if (std::string why = unsafe(dir); !why.empty())
    return why;
  try {
    writeFileAtomic(dir + "/" + key + ".o", object);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace npuc::cpu
