// Tensor.h - a dense host tensor (row-major fp32), the currency between runtimes and tests.
#pragma once

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
  std::vector<float> data; // row-major, numElements(shape) values

  HostTensor() = default;
  explicit HostTensor(Shape s) : shape(std::move(s)), data(numElements(shape), 0.0f) {}
  HostTensor(Shape s, std::vector<float> d) : shape(std::move(s)), data(std::move(d)) {}
  int64_t size() const { return static_cast<int64_t>(data.size()); }
};

} // namespace npuc
