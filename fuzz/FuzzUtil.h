// FuzzUtil.h - what every libFuzzer harness in fuzz/ shares.
//
// The contract each harness checks: whatever the bytes, the code under test returns a result or
// throws npuc::Error (a clear, located message). Anything else is a finding that libFuzzer
// reports with a reproducer: another exception type escapes (std::terminate), an NPUC_ASSERT
// aborts, a sanitizer fires, an allocation passes -malloc_limit_mb, or one input runs past
// -timeout.
#pragma once

#include "support/Error.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace npuc::fuzz {

/// The input as an anonymous in-memory file, for the APIs that take a path (the ONNX importer,
/// the .npy reader): /proc/self/fd/N names it and nothing touches the disk.
class MemFile {
public:
  MemFile(const uint8_t *data, size_t size) : fd_(memfd_create("npuc-fuzz", 0)) {
    NPUC_ASSERT(fd_ >= 0, "memfd_create failed: the harness cannot hand its input to the reader");
    size_t done = 0;
    while (done < size) {
      ssize_t n = write(fd_, data + done, size - done);
      NPUC_ASSERT(n > 0, "writing the fuzz input into its memfd failed");
      done += static_cast<size_t>(n);
    }
  }
  ~MemFile() { close(fd_); }
  MemFile(const MemFile &) = delete;
  MemFile &operator=(const MemFile &) = delete;
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

private:
  int fd_;
};

inline std::string asText(const uint8_t *data, size_t size) {
  return std::string(reinterpret_cast<const char *>(data), size);
}

/// A file of the source tree (the bundled presets the harnesses that need a target load).
inline std::string sourcePath(const std::string &rel) {
  return std::string(NPUC_SOURCE_DIR) + "/" + rel;
}

} // namespace npuc::fuzz
