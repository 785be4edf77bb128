// Layout.cpp - host fp32 tensors <-> the NPU's DRAM layout (fp16 or scaled int8; in any physical
// dim order, npu/hw/DramLayout.h).
#include "npu/hw/Layout.h"
#include "npu/hw/Quant.h"

#include "support/Error.h"
#include "support/Half.h"

#include <bit>
#include <cstdint>

namespace npuc::npu {

namespace {

// Whether the row-major fp16 bytes at `p` can be read or written as the host's uint16_t: DRAM is
// little endian.
bool bulkFp16(isa::ElemType dtype, const DramLayout &layout, const void *p) {
  return std::endian::native == std::endian::little && dtype == isa::ElemType::F16 &&
         layout.order.empty() && reinterpret_cast<uintptr_t>(p) % alignof(uint16_t) == 0;
}

// Calls f(hostIndex, npuIndex) for every element: the host index is row-major (ONNX), the NPU
// index follows the layout's physical dim order (DramLayout.h).
template <typename F> void forEachElement(const Shape &s, const DramLayout &layout, F f) {
  const int64_t n = numElements(s);
  NPUC_ASSERT(layout.order.empty() || layout.order.size() == s.size(),
              "a DRAM layout orders the tensor's own dims");
  if (layout.order.empty()) {
    for (int64_t i = 0; i < n; ++i)
      f(i, i);
    return;
  }
  const std::vector<int64_t> st = layoutStrides(s, layout);
  std::vector<int64_t> idx(s.size(), 0);
  int64_t d = 0; // NPU index of the host element i, kept incrementally (odometer over idx)
  for (int64_t i = 0; i < n; ++i) {
    f(i, d);
    for (size_t k = s.size(); k-- > 0;) {
      if (++idx[k] < s[k]) {
        d += st[k];
        break;
      }
      d -= st[k] * (s[k] - 1);
      idx[k] = 0;
    }
  }
}

} // namespace

void packTensorInto(const HostTensor &t, const DramLayout &layout, isa::ElemType dtype, float scale,
                    uint8_t *out) {
  NPUC_ASSERT(dtype == isa::ElemType::F16 || dtype == isa::ElemType::I8,
              "NPU tensors in DRAM are fp16 or int8");
  // Row-major fp16, the transformers' crossings: one bulk conversion (Half.h's bulk form is
  // exact; F16C where the host has it).
  if (bulkFp16(dtype, layout, out)) {
    floatsToHalves(t.data.data(), reinterpret_cast<uint16_t *>(out), t.data.size());
    return;
  }
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
}

std::vector<uint8_t> packTensor(const HostTensor &t, const DramLayout &layout, isa::ElemType dtype,
                                float scale) {
  std::vector<uint8_t> out(static_cast<size_t>(t.size() * isa::elemBytes(dtype)));
  packTensorInto(t, layout, dtype, scale, out.data());
  return out;
}

HostTensor unpackTensor(const uint8_t *bytes, const Shape &shape, const DramLayout &layout,
                        isa::ElemType dtype, float scale) {
  NPUC_ASSERT(dtype == isa::ElemType::F16 || dtype == isa::ElemType::I8,
              "NPU tensors in DRAM are fp16 or int8");
  HostTensor t(shape);
  if (bulkFp16(dtype, layout, bytes)) {
    halvesToFloats(reinterpret_cast<const uint16_t *>(bytes), t.data.data(), t.data.size());
    return t;
  }
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
