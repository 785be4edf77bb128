// Npy.h - reading and writing NumPy .npy files (format versions 1.0-3.0, little endian).
//
// Every DType (support/DType.h) reads and writes as its little-endian numpy dtype ('<f4', '<f8',
// '<f2', '|i1', '<i2', '<i4', '<i8', '|u1', '<u2', '<u4', '<u8', '|b1'; '<i1'/'<u1'/'<b1' are read
// too): float types arrive in HostTensor::data (fp32; float16 and double converted), integer and
// bool types in HostTensor::ints. Arrays must be C-ordered; any other dtype, big-endian data or a
// bool byte other than 0/1 is a user error naming the file and what was found. Writing goes through
// a temporary file and a rename so that no partial file is left (support/File.h).
#pragma once

#include "support/File.h"
#include "support/Tensor.h"

#include <string>
#include <vector>

namespace npuc {

/// An array as the file stores it: its dtype descr ('<f4', '<i8', '|b1', ...: npyDescr of its
/// DType), shape and little-endian element bytes (`--bind` makes an ONNX initializer of it).
struct NpyArray {
  std::string path; // where it was read from (messages name it)
  std::string descr;
  Shape shape;
  std::string bytes;
};
/// readNpy's array in its own dtype's encoding (double passes through fp32, as readNpy keeps it).
NpyArray readNpyArray(const std::string &path);
/// An array of any DType; any other dtype is an error naming the file and the dtype.
HostTensor readNpy(const std::string &path);
/// readNpy of a file's bytes held in memory; `origin` stands for the path in messages (the
/// Python module passes numpy arrays so: python/).
HostTensor parseNpy(const std::string &bytes, const std::string &origin);
/// The .npy file writeNpy writes, as bytes.
std::string encodeNpy(const HostTensor &t);
/// Writes through writeFileAtomic (support/File.h): never over one of `inputs`.
void writeNpy(const std::string &path, const HostTensor &t,
              const std::vector<std::string> &inputs = {});

} // namespace npuc
