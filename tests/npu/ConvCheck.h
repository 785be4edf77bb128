// ConvCheck.h - one Conv (+ optional bias and Relu) built by hand, compiled for a target,
// simulated with the hazard checker and compared element by element with a naive fp64 reference.
//
// Tolerance (derived, not measured): operands are rounded to fp16 before both computations, so
// products are exact; the NPU sums them in fp32 (error <= K * 2^-24 * sum|x*w| for K terms),
// adds the fp32 bias, and rounds the result to fp16 (<= 2^-11 * |y|).
#pragma once

#include "NpuTestUtil.h"

#include "npu/kernels/Plan.h"
#include "npu/schedule/Schedule.h"
#include "npu/schedule/Space.h"

#include <cmath>
#include <gtest/gtest.h>
#include <ostream>

namespace npuc::test {

struct ConvCase {
  int64_t C, H, W, OC, K, S, P, D, G; // K: kernel height (and width unless KW is set)
  bool bias, relu;
  std::string target = "npu-base.yaml";
  bool doubleBuffer = true;
  int64_t KW = 0; // kernel width; 0: K (square)
  int64_t N = 1;  // images
  int64_t kw() const { return KW ? KW : K; }
};

inline std::ostream &operator<<(std::ostream &os, const ConvCase &c) {
  os << "C" << c.C << "_H" << c.H << "_W" << c.W << "_OC" << c.OC << "_K" << c.K;
  if (c.KW)
    os << "x" << c.KW;
  if (c.N > 1)
    os << "_N" << c.N;
  return os << "_S" << c.S << "_P" << c.P << "_D" << c.D << "_G" << c.G << "_" << c.target
            << (c.doubleBuffer ? "" : "_single");
}

/// Case `c` as a one-group graph, its fp16-valued input, weights and bias.
struct ConvGraph {
  graph::Graph g;
  HostTensor in;
  std::vector<float> wdata, bdata;
  int64_t OH = 0, OW = 0;
};

inline ConvGraph buildConv(const ConvCase &c) {
  ConvGraph r;
  const int64_t KH = c.K, KW = c.kw();
  r.OH = (c.H + 2 * c.P - c.D * (KH - 1) - 1) / c.S + 1;
  r.OW = (c.W + 2 * c.P - c.D * (KW - 1) - 1) / c.S + 1;
  int64_t icg = c.C / c.G;
  graph::Graph &g = r.g;
  auto x = g.addValue("x", {c.N, c.C, c.H, c.W}, graph::DType::F32);
  g.inputs = {x};
  r.wdata = halves(randomData(static_cast<size_t>(c.OC * icg * KH * KW), 2));
  r.bdata = randomData(static_cast<size_t>(c.OC), 3);
  auto w = g.addConstant("w", {c.OC, icg, KH, KW}, r.wdata);
  std::vector<graph::ValueId> ins = {x, w};
  if (c.bias)
    ins.push_back(g.addConstant("b", {c.OC}, r.bdata));
  auto y = g.addValue("y", {c.N, c.OC, r.OH, r.OW}, graph::DType::F32);
  auto conv = g.addNode(graph::OpKind::Conv, "conv", ins, {y});
  g.node(conv).attrs["strides"] = std::vector<int64_t>{c.S, c.S};
  g.node(conv).attrs["pads"] = std::vector<int64_t>{c.P, c.P, c.P, c.P};
  g.node(conv).attrs["dilations"] = std::vector<int64_t>{c.D, c.D};
  g.node(conv).attrs["group"] = c.G;
  auto out = y;
  if (c.relu) {
    out = g.addValue("r", {c.N, c.OC, r.OH, r.OW}, graph::DType::F32);
    g.addNode(graph::OpKind::Relu, "relu", {y}, {out});
  }
  oneGroup(g, out);
  r.in = HostTensor({c.N, c.C, c.H, c.W},
                    halves(randomData(static_cast<size_t>(c.N * c.C * c.H * c.W), 1)));
  return r;
}

/// Runs case `c` on target `t` compiled with `opt` (its doubleBuffer set to the case's) and checks
/// every output (fatal failures on a mismatch); stores the compiled segment in `seg` (and the
/// whole run, outputs and simulator statistics, in `run` when given). With
/// schedules or tuned points in `opt`, the kernel need not be the one the default picks.
inline void checkConvWith(const ConvCase &c, const isa::Target &t, npu::CompileOptions opt,
                          npu::Segment &seg, NpuRun *run = nullptr) {
  const int64_t KH = c.K, KW = c.kw();
  ConvGraph cg = buildConv(c);
  const int64_t OH = cg.OH, OW = cg.OW, icg = c.C / c.G;
  const HostTensor &in = cg.in;
  const std::vector<float> &wdata = cg.wdata, &bdata = cg.bdata;
  opt.doubleBuffer = c.doubleBuffer;
  NpuRun r = compileAndRun(cg.g, t, {in}, opt);
  seg = r.seg;
  if (run)
    *run = r;

  int64_t checked = 0;
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t oc = 0; oc < c.OC; ++oc)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double sum = c.bias ? bdata[static_cast<size_t>(oc)] : 0.0, mag = 0;
          int64_t gi = oc / (c.OC / c.G);
          for (int64_t ic = 0; ic < icg; ++ic)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t iy = oy * c.S - c.P + kh * c.D, ix = ox * c.S - c.P + kw * c.D;
                if (iy < 0 || iy >= c.H || ix < 0 || ix >= c.W)
                  continue;
                double p = double(in.data[static_cast<size_t>(
                               (((n * c.C) + gi * icg + ic) * c.H + iy) * c.W + ix)]) *
                           wdata[static_cast<size_t>(((oc * icg + ic) * KH + kh) * KW + kw)];
                sum += p;
                mag += std::fabs(p);
              }
          if (c.relu)
            sum = std::max(sum, 0.0);
          double got = r.out.data[static_cast<size_t>(((n * c.OC + oc) * OH + oy) * OW + ox)];
          double tol = std::ldexp(std::fabs(sum), -11) + icg * KH * KW * std::ldexp(mag, -24) +
                       std::ldexp(std::fabs(c.bias ? bdata[static_cast<size_t>(oc)] : 0.0), -23) +
                       1e-7;
          ASSERT_NEAR(got, sum, tol) << "n=" << n << " oc=" << oc << " oy=" << oy << " ox=" << ox;
          ++checked;
        }
  EXPECT_EQ(checked, c.N * c.OC * OH * OW);
  // A depthwise conv may run on the vector unit (LowerDepthwise.cpp): no tensor-unit MACs then.
  bool onVector = r.seg.groupInfo.at(0).tiling.find("on the vector unit") != std::string::npos;
  if (!opt.schedules && !opt.tuned) {
    EXPECT_EQ(onVector, c.G == c.C && c.G == c.OC && t.vector.supports(isa::VecOp::Mac));
  }
  EXPECT_EQ(r.stats.macs, onVector ? 0 : c.N * c.OC * OH * OW * icg * KH * KW);
}

/// checkConvWith with the default options; stores the kernel's tiling text in `tiling` when
/// given. `schedules` forces the group's schedule.
inline void checkConv(const ConvCase &c, const isa::Target &t, std::string *tiling = nullptr,
                      std::shared_ptr<const npu::ScheduleFile> schedules = {}) {
  npu::CompileOptions opt;
  opt.schedules = std::move(schedules);
  npu::Segment seg;
  checkConvWith(c, t, opt, seg);
  if (tiling && !seg.groupInfo.empty())
    *tiling = seg.groupInfo.at(0).tiling;
}

/// Case `c` with its plan, the context of a lone group (the whole of each level, every tensor in
/// DRAM) and its schedule key: to build its spaces and schedule files that name it.
struct SpaceFixture {
  isa::Target t;
  npu::Hw hw;
  ConvGraph cg;
  npu::GroupPlan plan;
  npu::SpaceContext ctx;
  npu::ScheduleKey key;

  SpaceFixture(const ConvCase &c, const std::string &target = "npu-base.yaml")
      : t(isa::loadTarget(configPath(target))), cg(buildConv(c)) {
    EXPECT_EQ(npu::Hw::derive(t, hw), "");
    plan = npu::analyzeGroup(cg.g, cg.g.groups.at(0), hw);
    EXPECT_EQ(plan.reject, "");
    ctx.hw = &hw; // the whole of each level, every tensor in DRAM, as a lone group has
    ctx.doubleBuffer = c.doubleBuffer;
    key = npu::scheduleKey(cg.g, cg.g.groups.at(0), t);
  }
  std::unique_ptr<npu::KernelSpace> space(npu::Strategy s) const {
    return npu::makeSpace(s, plan, cg.g, ctx);
  }
  /// A schedule file listing `s` for the case's group.
  std::shared_ptr<const npu::ScheduleFile> fileWith(const npu::Schedule &s) const {
    auto f = std::make_shared<npu::ScheduleFile>();
    f->put(key, s, "conv");
    return f;
  }
};

} // namespace npuc::test
