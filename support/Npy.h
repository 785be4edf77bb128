// Npy.h - reading and writing NumPy .npy files (format versions 1.0-3.0, little endian).
//
// readNpy's inputs must be float32 C-order arrays (readNpyArray's any little-endian numeric dtype);
// anything else is a user error naming the file and what was found. Writing goes through a
// temporary file and a rename so that no partial file is left (support/File.h).
#pragma once

#include "support/File.h"
#include "support/Tensor.h"

#include <string>
#include <vector>

namespace npuc {

/// An array as the file stores it: its dtype descr without quotes ('<f4', '<i8', '|b1'; numpy
/// also writes names such as 'float32' for some arrays), shape and little-endian element bytes.
struct NpyArray {
  std::string path; // where it was read from (messages name it)
  std::string descr;
  Shape shape;
  std::string bytes;
};
/// Any little-endian numeric dtype; big-endian, object and structured arrays are errors.
NpyArray readNpyArray(const std::string &path);
/// A float32 array; any other dtype is an error that says how to convert it.
HostTensor readNpy(const std::string &path);
/// Writes through writeFileAtomic (support/File.h): never over one of `inputs`.
void writeNpy(const std::string &path, const HostTensor &t,
              const std::vector<std::string> &inputs = {});

} // namespace npuc
