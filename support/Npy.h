// Npy.h - reading and writing NumPy .npy files (format versions 1.0-3.0, little endian).
//
// Inputs must be float32 C-order arrays; anything else is a user error naming the file and what
// was found. Writing goes through a temporary file and a rename so that no partial file is left.
#pragma once

#include "support/Tensor.h"

#include <string>

namespace npuc {

HostTensor readNpy(const std::string &path);
void writeNpy(const std::string &path, const HostTensor &t);

/// Writes `bytes` to `path` atomically (temporary file + rename); throws npuc::Error on failure.
void writeFileAtomic(const std::string &path, const std::string &bytes);
/// Reads a whole file; throws npuc::Error naming the file when it cannot be read.
std::string readFile(const std::string &path);

} // namespace npuc
