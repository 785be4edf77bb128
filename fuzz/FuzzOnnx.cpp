// FuzzOnnx.cpp - the ONNX importer on arbitrary bytes: protobuf parsing, opset checks, ONNX's
// shape inference, attribute normalisation and npuc's own shape inference (frontend/Onnx.h).
#include "frontend/Onnx.h"
#include "fuzz/FuzzUtil.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  npuc::fuzz::MemFile file(data, size);
  try {
    npuc::graph::Graph g = npuc::frontend::importOnnx(file.path());
    (void)g;
  } catch (const npuc::Error &) {
  }
  return 0;
}
