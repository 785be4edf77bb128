// Layout.cpp - host fp32 tensors <-> the NPU's DRAM layout (fp16 or scaled int8; 4-D tensors as
// NHWC).
#include "npu/Compile.h"

#include "support/Error.h"
#include "support/Half.h"

namespace npuc::npu {

namespace {

// Calls f(hostIndex, npuIndex) for every element.
template <typename F> void forEachElement(const Shape &s, DramLayout layout, F f) {
  int64_t n = numElements(s);
  if (layout == DramLayout::RowMajor || s.size() != 4) {
    for (int64_t i = 0; i < n; ++i)
      f(i, i);
    return;
  }
  int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x)
          f(((b * C + c) * H + y) * W + x, ((b * H + y) * W + x) * C + c);
}

} // namespace

std::vector<uint8_t> packTensor(const HostTensor &t, DramLayout layout, isa::ElemType dtype,
                                float scale) {
  NPUC_ASSERT(dtype == isa::ElemType::F16 || dtype == isa::ElemType::I8,
              "NPU tensors in DRAM are fp16 or int8");
  const int64_t eb = isa::elemBytes(dtype);
  std::vector<uint8_t> out(static_cast<size_t>(t.size() * eb));
  forEachElement(t.shape, layout, [&](int64_t h, int64_t d) {
    const float x = t.data[static_cast<size_t>(h)];
    if (dtype == isa::ElemType::I8) {
      out[static_cast<size_t>(d)] = static_cast<uint8_t>(quantise(x, scale));
      return;
    }
    uint16_t v = floatToHalf(x);
    out[static_cast<size_t>(2 * d)] = static_cast<uint8_t>(v & 0xff);
    out[static_cast<size_t>(2 * d + 1)] = static_cast<uint8_t>(v >> 8);
  });
  return out;
}

HostTensor unpackTensor(const uint8_t *bytes, const Shape &shape, DramLayout layout,
                        isa::ElemType dtype, float scale) {
  NPUC_ASSERT(dtype == isa::ElemType::F16 || dtype == isa::ElemType::I8,
              "NPU tensors in DRAM are fp16 or int8");
  HostTensor t(shape);
  forEachElement(shape, layout, [&](int64_t h, int64_t d) {
    float &x = t.data[static_cast<size_t>(h)];
    if (dtype == isa::ElemType::I8) {
      x = dequantise(static_cast<int8_t>(bytes[d]), scale);
      return;
    }
    uint16_t v = static_cast<uint16_t>(bytes[2 * d] | (bytes[2 * d + 1] << 8));
    x = halfToFloat(v);
  });
  return t;
}

} // namespace npuc::npu
