// File.h - reading input files and writing output files safely.
//
// Outputs are written to a temporary file beside the destination and renamed over it, so that a
// reader never sees a partial file and a failure leaves the old file alone. Renaming would also
// replace whatever the destination is, so before writing, the destination is checked:
//   - a symbolic link is followed, and the file it names is replaced (the link stays);
//   - an existing destination that is not a regular file (a directory, a device such as
//     /dev/null, a FIFO, a socket) is refused, naming what it is;
//   - a destination that is one of the command's own inputs (the same device and inode, links
//     followed) is refused, so that `-o model.onnx` cannot silently destroy the model.
// Every failure is an npuc::Error naming the file and giving the system's reason (strerror).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace npuc {

/// Reads a whole file; throws npuc::Error naming the file and the reason (a missing file, a
/// directory, no permission) when it cannot be read.
std::string readFile(const std::string &path);

/// A whole file, read-only: a regular file is mapped (private, populated up front: a ~100 MB
/// package is in memory without 25,000 page faults or a copy), anything else is read. Errors
/// are readFile's. The bytes stay valid while the object lives; a file truncated by another
/// process meanwhile is outside the contract (npuc replaces its outputs by rename, never in place).
class MappedFile {
public:
  explicit MappedFile(const std::string &path);
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  std::string_view bytes() const { return view_; }

private:
  void *map_ = nullptr;
  size_t mapBytes_ = 0;
  std::string read_; // what was read instead of mapped
  std::string_view view_;
};

/// Where an output for `path` goes: `path` itself, or the file a symbolic link at `path` names.
/// Throws npuc::Error when the destination exists but is not a regular file, or is the same file
/// as one of `inputs` (inputs that do not exist are ignored).
std::string checkOutputPath(const std::string &path, const std::vector<std::string> &inputs);

/// Writes `bytes` to `path` atomically (temporary file + rename) after checkOutputPath; throws
/// npuc::Error with the system's reason on failure, leaving no temporary file behind.
void writeFileAtomic(const std::string &path, const std::string &bytes,
                     const std::vector<std::string> &inputs = {});

/// Renames the finished temporary file `tmp` over `path` after checkOutputPath (for outputs that
/// another program wrote, such as a plot); removes `tmp` and throws npuc::Error on failure.
void replaceWithTemp(const std::string &tmp, const std::string &path,
                     const std::vector<std::string> &inputs = {});

/// A file stem for a tensor name: characters outside [A-Za-z0-9_.-] become '_' ("_" for "").
/// `npuc run` writes output NAME as DIR/sanitizeName(NAME).npy, and --calibrate reads input NAME
/// of a model of several inputs from DIR/sanitizeName(NAME).npy.
std::string sanitizeName(const std::string &name);

} // namespace npuc
