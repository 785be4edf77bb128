// Tensor.h - a dense host tensor (row-major), the currency between runtimes and tests.
//
// A tensor carries its element type (support/DType.h). Float types keep their values in `data`
// as fp32, as every tensor did before integer types existed, so that the code written for fp32
// reads and writes `data` unchanged; integer and bool tensors keep theirs exactly in `ints`
// (int64, already wrapped to the type's range) and leave `data` empty. Code that only moves
// elements uses copyElement/valueAt and works on both; the reference executor decides which of
// its kernels see typed tensors and which get an fp32 view (graph/Reference.h).
#pragma once

#include "support/DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace npuc {

using Shape = std::vector<int64_t>;

inline int64_t numElements(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

std::string shapeToString(const Shape &s); // "1x3x224x224"

struct HostTensor {
  Shape shape;
  std::vector<float> data;   // float types: row-major, numElements(shape) values
  std::vector<int64_t> ints; // integer and bool types: row-major, exact
  DType dtype = DType::F32;

  HostTensor() = default;
  /// Zeros of type `t` (storage chosen by the type).
  explicit HostTensor(Shape s, DType t = DType::F32);
  HostTensor(Shape s, std::vector<float> d) : shape(std::move(s)), data(std::move(d)) {}
  /// An integer or bool tensor of type `t`; the values must already be in t's range.
  HostTensor(Shape s, DType t, std::vector<int64_t> v);

  int64_t size() const {
    return static_cast<int64_t>(isIntStored(dtype) ? ints.size() : data.size());
  }
  bool isInt() const { return isIntStored(dtype); }
  /// Element i as a double (an integer beyond 2^53 rounds).
  double valueAt(int64_t i) const {
    return isInt() ? static_cast<double>(ints[static_cast<size_t>(i)])
                   : static_cast<double>(data[static_cast<size_t>(i)]);
  }
  /// Element i as an integer (a float truncates toward zero), as index operands are read.
  int64_t intAt(int64_t i) const {
    return isInt() ? ints[static_cast<size_t>(i)]
                   : static_cast<int64_t>(data[static_cast<size_t>(i)]);
  }
  /// this[o] = x[i]; both tensors have the same storage (the same dtype, as data movement keeps).
  void copyElement(int64_t o, const HostTensor &x, int64_t i) {
    if (isInt())
      ints[static_cast<size_t>(o)] = x.ints[static_cast<size_t>(i)];
    else
      data[static_cast<size_t>(o)] = x.data[static_cast<size_t>(i)];
  }
};

/// `t` converted to type `to` with ONNX's Cast rules: float -> integer truncates toward zero and
/// wraps; anything -> bool is != 0; bool -> number is 0/1; integer -> integer wraps; any -> float16
/// rounds to fp16; integers -> float types round to fp32 (double is held in fp32).
HostTensor castTensor(const HostTensor &t, DType to);

/// The index of the first element of integer tensor `t` that fp32 cannot hold exactly
/// (|v| > 2^24), or -1 when every element is exact (always -1 for float tensors).
int64_t firstInexactInFloat(const HostTensor &t);

} // namespace npuc
