// Demo.cpp - `npuc demo`: the default end-to-end flow on the bundled TinyCNN.
//
// Compiles models/tinycnn.onnx for configs/npu-base.yaml, runs it (NPU simulator + CPU fallback),
// runs the fp32 reference executor on the same input, and compares. The tolerance reflects fp16
// storage of activations and weights with fp32 accumulation: max|err| <= 1e-2 * max|ref| and
// cosine similarity >= 0.999; the top-1 class must agree.
#include "tools/cli/Commands.h"

#include "frontend/Onnx.h"
#include "graph/Reference.h"
#include "support/Error.h"
#include "support/Npy.h"
#include "tools/driver/Report.h"
#include "tools/driver/Runtime.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace npuc::cli {

namespace {

struct Compare {
  double maxAbsErr = 0, maxAbsRef = 0, cosine = 0;
  int64_t top1Got = -1, top1Ref = -1;
};

Compare compare(const HostTensor &got, const HostTensor &ref) {
  NPUC_ASSERT(got.shape == ref.shape, "runtime and reference produce the graph's output shape");
  Compare c;
  double dot = 0, ng = 0, nr = 0;
  for (int64_t i = 0; i < got.size(); ++i) {
    double g = got.data[size_t(i)], r = ref.data[size_t(i)];
    c.maxAbsErr = std::max(c.maxAbsErr, std::abs(g - r));
    c.maxAbsRef = std::max(c.maxAbsRef, std::abs(r));
    dot += g * r;
    ng += g * g;
    nr += r * r;
  }
  c.cosine = ng > 0 && nr > 0 ? dot / std::sqrt(ng * nr) : (ng == nr ? 1.0 : 0.0);
  if (got.size() > 0) {
    c.top1Got = std::max_element(got.data.begin(), got.data.end()) - got.data.begin();
    c.top1Ref = std::max_element(ref.data.begin(), ref.data.end()) - ref.data.begin();
  }
  return c;
}

} // namespace

bool cmdDemo(const DemoArgs &a, std::ostream &out) {
  namespace fs = std::filesystem;
  const fs::path root(a.root);
  const std::string model = (root / "models" / "tinycnn.onnx").string();
  const std::string target = (root / "configs" / "npu-base.yaml").string();
  const std::string input = (root / "models" / "tinycnn_input.npy").string();
  out << fmt::format("npuc demo: {} on {}\n", model, target);

  driver::CompiledModel m = driver::compileModel(model, target, {});
  NPUC_ASSERT(!m.graph.inputs.empty(), "an imported model has at least one input");
  HostTensor x = readNpy(input);
  const std::string inputName = m.graph.value(m.graph.inputs[0]).name;
  driver::RunResult r = driver::runModel(m, {{inputName, x}}, false);

  graph::Graph ref = frontend::importOnnx(model, {});
  std::map<graph::ValueId, HostTensor> refOut = graph::runReference(ref, {{ref.inputs.at(0), x}});

  out << driver::formatReport(r.report) << "\n";
  bool ok = true;
  for (size_t i = 0; i < ref.outputs.size(); ++i) {
    const graph::ValueId v = ref.outputs[i];
    const std::string &name = ref.outputName(i);
    auto it = r.outputs.find(name);
    if (it == r.outputs.end())
      fail("demo: the compiled model has no output '{}'", name);
    Compare c = compare(it->second, refOut.at(v));
    bool pass = c.maxAbsErr <= 1e-2 * c.maxAbsRef && c.cosine >= 0.999 && c.top1Got == c.top1Ref;
    ok = ok && pass;
    out << fmt::format("output '{}' vs reference: max abs err {:.3g} (max |ref| {:.3g}), cosine "
                       "{:.6f}, top-1 {} vs {} -> {}\n",
                       name, c.maxAbsErr, c.maxAbsRef, c.cosine, c.top1Got, c.top1Ref,
                       pass ? "PASS" : "FAIL");
  }
  return ok;
}

} // namespace npuc::cli
