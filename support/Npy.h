// Npy.h - reading and writing NumPy .npy files (format versions 1.0-3.0, little endian).
//
// Inputs must be float32 C-order arrays; anything else is a user error naming the file and what
// was found. Writing goes through a temporary file and a rename so that no partial file is left
// (support/File.h).
#pragma once

#include "support/File.h"
#include "support/Tensor.h"

#include <string>
#include <vector>

namespace npuc {

HostTensor readNpy(const std::string &path);
/// Writes through writeFileAtomic (support/File.h): never over one of `inputs`.
void writeNpy(const std::string &path, const HostTensor &t,
              const std::vector<std::string> &inputs = {});

} // namespace npuc
