// Layout.h - host fp32 tensors <-> the NPU's DRAM layout: where a graph value lives in a
// segment's DRAM image, and packing a host tensor into it (fp16, or int8 with a per-tensor scale
// on quantised targets: npu/hw/Quant.h) in the physical dim order npu/hw/DramLayout.h decides.
#pragma once

#include "graph/Graph.h"
#include "isa/Program.h"
#include "npu/hw/DramLayout.h"
#include "support/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace npuc::npu {

/// Where one graph value lives in a segment's DRAM image.
struct DramTensor {
  graph::ValueId value = graph::kNoValue;
  std::string name;
  int64_t addr = 0;                         // byte address in DRAM
  Shape shape;                              // logical (ONNX, NCHW) shape
  DramLayout layout = DramLayout::RowMajor; // physical dim order (npu/hw/DramLayout.h)
  isa::ElemType dtype = isa::ElemType::F16; // fp16, or int8 on quantised targets
  float scale = 1;                          // int8: real value = scale * stored value
  int64_t bytes() const { return numElements(shape) * isa::elemBytes(dtype); }
};

/// Packs a host fp32 tensor into the NPU layout and back: fp16 bits (little endian), or int8
/// quantised with `scale` (quantise() of npu/hw/Quant.h) and dequantised back.
std::vector<uint8_t> packTensor(const HostTensor &t, const DramLayout &layout,
                                isa::ElemType dtype = isa::ElemType::F16, float scale = 1);
HostTensor unpackTensor(const uint8_t *bytes, const Shape &shape, const DramLayout &layout,
                        isa::ElemType dtype = isa::ElemType::F16, float scale = 1);
/// packTensor into `out`, which has room for the tensor's bytes (a segment's DRAM image).
void packTensorInto(const HostTensor &t, const DramLayout &layout, isa::ElemType dtype, float scale,
                    uint8_t *out);
/// The same for a segment's DRAM tensor (its layout, dtype and scale).
inline std::vector<uint8_t> packTensor(const HostTensor &t, const DramTensor &d) {
  return packTensor(t, d.layout, d.dtype, d.scale);
}
inline void packTensorInto(const HostTensor &t, const DramTensor &d, uint8_t *out) {
  packTensorInto(t, d.layout, d.dtype, d.scale, out);
}
inline HostTensor unpackTensor(const uint8_t *bytes, const DramTensor &d) {
  return unpackTensor(bytes, d.shape, d.layout, d.dtype, d.scale);
}

} // namespace npuc::npu
