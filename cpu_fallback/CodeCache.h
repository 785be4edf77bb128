// CodeCache.h - CPU kernels' machine code kept on disk between runs, by key (Jit.h).
//
// `npuc run` uses it when the package carries no machine code for this CPU (compiled on another
// one, with --no-native-code, or by an older npuc): the first run compiles with LLVM and stores
// the object as DIR/<key>.o, later runs link it without LLVM. The key names everything the code
// depends on, so an entry never goes stale; deleting the directory only costs a compile.
//
// The directory is $NPUC_CACHE_DIR, else $XDG_CACHE_HOME/npuc, else $HOME/.cache/npuc
// (NPUC_CACHE_DIR=off: none). Its objects are executed, so it must be a directory of this user
// that no one else may write (the first store creates it 0700); otherwise it is not used, and
// `note` says why. Entries are written to a temporary file and renamed, so a reader sees a whole
// object or none; an entry that does not parse as an object is compiled again and replaced.
#pragma once

#include <optional>
#include <string>

namespace npuc::cpu {

struct CodeCache {
  std::string dir;  // empty: no cache
  std::string note; // with no cache: why (disabled, no home directory, not safe to use)

  /// The cache at its place in the environment (see above).
  static CodeCache fromEnvironment();
  /// The cache in `dir`, which must pass the same checks if it exists.
  static CodeCache at(const std::string &dir);

  /// The object stored under `key`, if any.
  std::optional<std::string> load(const std::string &key) const;
  /// Stores `object` under `key`; "" or why it could not (the run goes on without).
  std::string store(const std::string &key, const std::string &object) const;
};

} // namespace npuc::cpu
