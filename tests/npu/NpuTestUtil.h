// NpuTestUtil.h - builds one-group graphs by hand, compiles them for a target, runs them on the
// simulator and returns the fp32 output, so kernel tests compare against naive references.
#pragma once

#include "graph/Graph.h"
#include "graph/Reference.h"
#include "graph/ShapeInference.h"
#include "isa/Target.h"
#include "npu/pipeline/Compile.h"
#include "simulator/Simulator.h"
#include "support/Half.h"

#include <cctype>
#include <cmath>
#include <gtest/gtest.h>
#include <map>
#include <random>
#include <sstream>
#include <string>

namespace npuc::test {

/// A 1-D DMA of `n` fp16 elements (instruction `mn`, unit strides), fields the description fixes
/// taken from it: the instruction sequences of the token-pass tests.
inline isa::Instr dma(const isa::Target &t, const char *mn, int64_t srcSpace, int64_t src,
                      int64_t dstSpace, int64_t dst, int64_t n) {
  isa::Instr in;
  in.desc = t.findInstr(mn);
  for (const auto &[k, v] : in.desc->fixed)
    in.set(k, v);
  if (!in.desc->fixed.count("src_space"))
    in.set("src_space", srcSpace);
  if (!in.desc->fixed.count("dst_space"))
    in.set("dst_space", dstSpace);
  in.set("src_addr", src);
  in.set("dst_addr", dst);
  in.set("elem_bytes", 2);
  in.set("n0", n);
  in.set("n1", 1);
  in.set("n2", 1);
  in.set("src_s0", 1);
  in.set("dst_s0", 1);
  return in;
}

inline std::string configPath(const std::string &name) {
  return std::string(NPUC_SOURCE_DIR) + "/configs/" + name;
}

/// A gtest parameter name from the case's operator<< (other characters than letters and digits
/// become '_'), made unique by the case's index.
struct ParamName {
  template <class T> std::string operator()(const ::testing::TestParamInfo<T> &i) const {
    std::ostringstream os;
    os << i.param;
    std::string name = os.str();
    for (char &ch : name)
      if (!std::isalnum(static_cast<unsigned char>(ch)))
        ch = '_';
    return name + "_" + std::to_string(i.index);
  }
};

inline std::vector<float> randomData(size_t n, unsigned seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

/// Rounds every value to fp16 (what the NPU stores).
inline std::vector<float> halves(std::vector<float> v) {
  for (float &x : v)
    x = roundToHalf(x);
  return v;
}

/// Makes graph.groups hold one group of all live nodes (in order), anchored at the first.
inline void oneGroup(graph::Graph &g, graph::ValueId out) {
  graph::FusedGroup grp;
  grp.id = 0;
  for (const graph::Node &n : g.nodes)
    grp.nodes.push_back(n.id);
  grp.anchor = grp.nodes.front();
  grp.name = g.node(grp.anchor).name;
  for (graph::ValueId v : g.inputs)
    grp.inputs.push_back(v);
  grp.outputs = {out};
  grp.placement = graph::Placement::Npu;
  g.groups = {grp};
  g.outputs = {out};
}

struct NpuRun {
  HostTensor out;
  sim::SimStats stats;
  npu::Segment seg;
};

/// Adds node `op` named `name` reading `ins`, with `attrs`, and its one output `<name>.y`, whose
/// shape it infers.
inline graph::ValueId addOp(graph::Graph &g, graph::OpKind op, const std::string &name,
                            std::vector<graph::ValueId> ins,
                            std::map<std::string, graph::AttrValue> attrs = {}) {
  graph::ValueId o = g.addValue(name + ".y", {}, graph::DType::F32);
  graph::NodeId n = g.addNode(op, name, std::move(ins), {o});
  g.node(n).attrs = std::move(attrs);
  graph::inferNodeShape(g, n);
  return o;
}

/// Compiles the groups `ids` as one segment and runs it with `inputs` (one per graph input, in
/// order) on the simulator, its hazard checker on.
inline NpuRun compileAndRun(const graph::Graph &g, const std::vector<int> &ids,
                            const isa::Target &t, const std::vector<HostTensor> &inputs,
                            const npu::CompileOptions &opt = {}) {
  NpuRun r;
  r.seg = npu::compileSegment(g, ids, t, opt).value();
  sim::Memory mem(t, r.seg.dramBytes);
  auto &dram = mem.dram();
  std::copy(r.seg.constImage.begin(), r.seg.constImage.end(), dram.begin() + r.seg.constBase);
  for (const npu::DramTensor &in : r.seg.inputs) {
    size_t idx = 0;
    while (g.inputs[idx] != in.value)
      ++idx;
    auto bytes = npu::packTensor(inputs[idx], in);
    std::copy(bytes.begin(), bytes.end(), dram.begin() + in.addr);
  }
  sim::SimOptions so; // hazard checker on; DRAM traffic by class (weights, input, ...)
  so.dramRegions = npu::dramRegionsOf(r.seg, g);
  r.stats = sim::run(t, r.seg.program, mem, so);
  const npu::DramTensor &o = r.seg.outputs.at(0);
  r.out = npu::unpackTensor(dram.data() + o.addr, o);
  return r;
}

/// Compiles group 0 and runs it with `inputs` (one per graph input, in order).
inline NpuRun compileAndRun(const graph::Graph &g, const isa::Target &t,
                            const std::vector<HostTensor> &inputs,
                            const npu::CompileOptions &opt = {}) {
  return compileAndRun(g, {0}, t, inputs, opt);
}

/// `got` is the fp32 reference's `y` for input `x` = `in` within `rel` of the reference's range
/// (fp16 kernels).
inline void expectMatchesReference(const graph::Graph &g, graph::ValueId x, graph::ValueId y,
                                   const HostTensor &in, const HostTensor &got, double rel = 5e-3) {
  auto ref = graph::runReference(g, {{x, in}}).at(y);
  ASSERT_EQ(ref.data.size(), got.data.size());
  double maxRef = 0, maxErr = 0;
  for (size_t i = 0; i < ref.data.size(); ++i) {
    maxRef = std::max(maxRef, double(std::fabs(ref.data[i])));
    maxErr = std::max(maxErr, double(std::fabs(ref.data[i] - got.data[i])));
  }
  EXPECT_LT(maxErr, rel * maxRef) << "max |ref| " << maxRef;
}

} // namespace npuc::test
