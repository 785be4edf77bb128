// ReplayReportTest.cpp - what the report says of a batch-split run's later sub-batches
// (npu/pipeline/BatchSplit.h): they replay sub-batch 0's kernel at other DRAM addresses, so each
// reports what the selected kernel reports, including the note kernel selection appends to the
// tiling text of how it chose the kernel (KernelSelect.cpp), which only sub-batch 0 ran.
//
// Expectation (derived): two images of 16 x 96 x 96 through three 1x1 convs run image by image
// (BatchSplitTest.cpp derives why); a conv group forced to the point it takes anyway (the
// one-image graph's default, the sub-batch's own) says "forced by the schedule file" in every
// sub-batch, with the same tiling text, and the outputs are those of the compile without it.
#include "NpuTestUtil.h"

#include "graph/Passes.h"
#include "graph/ShapeInference.h"
#include "npu/schedule/Schedule.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace npuc::test {
namespace {

// x[N, 16, 96, 96] -> three 1x1 convs of 16 channels, the first two followed by a Relu fused into
// them: one NPU group per conv.
graph::Graph convChain(int64_t N) {
  graph::Graph g;
  graph::ValueId cur = g.addValue("x", {N, 16, 96, 96}, graph::DType::F32);
  g.inputs = {cur};
  for (int i = 0; i < 3; ++i) {
    const std::string name = fmt::format("c{}", i);
    auto w = g.addConstant(name + ".w", {16, 16, 1, 1},
                           halves(randomData(16 * 16, unsigned(3 + i), -0.3f, 0.3f)));
    auto add = [&](graph::OpKind op, const std::string &n, std::vector<graph::ValueId> ins,
                   std::map<std::string, graph::AttrValue> attrs) {
      graph::ValueId o = g.addValue(n + ".y", {}, graph::DType::F32);
      graph::NodeId id = g.addNode(op, n, std::move(ins), {o});
      g.node(id).attrs = std::move(attrs);
      graph::inferNodeShape(g, id);
      return o;
    };
    cur = add(graph::OpKind::Conv, name, {cur, w},
              {{"pads", std::vector<int64_t>{0, 0, 0, 0}},
               {"strides", std::vector<int64_t>{1, 1}},
               {"dilations", std::vector<int64_t>{1, 1}}});
    if (i < 2)
      cur = add(graph::OpKind::Relu, name + ".relu", {cur}, {});
  }
  g.outputs = {cur};
  graph::fuseOps(g);
  for (graph::FusedGroup &grp : g.groups)
    grp.placement = graph::Placement::Npu;
  return g;
}

std::vector<int> groupIds(const graph::Graph &g) {
  std::vector<int> ids;
  for (const graph::FusedGroup &grp : g.groups)
    ids.push_back(grp.id);
  return ids;
}

HostTensor runSegment(const npu::Segment &seg, const isa::Target &t, const HostTensor &in) {
  sim::Memory mem(t, seg.dramBytes);
  auto &dram = mem.dram();
  std::copy(seg.constImage.begin(), seg.constImage.end(), dram.begin() + seg.constBase);
  auto bytes = npu::packTensor(in, seg.inputs.at(0));
  std::copy(bytes.begin(), bytes.end(), dram.begin() + seg.inputs.at(0).addr);
  sim::run(t, seg.program, mem, sim::SimOptions{}); // hazard checker on
  const npu::DramTensor &o = seg.outputs.at(0);
  return npu::unpackTensor(dram.data() + o.addr, o);
}

TEST(ReplayReport, LaterSubBatchesKeepTheSelectionNote) {
  const isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  // The middle conv of the one-image chain: the group a sub-batch of one image compiles.
  graph::Graph one = convChain(1);
  ASSERT_EQ(one.groups.size(), 3u);
  npu::Segment seg1 = npu::compileSegment(one, groupIds(one), t, {}).value();
  const npu::GroupInfo &mid = seg1.groupInfo.at(1);
  auto file = std::make_shared<npu::ScheduleFile>();
  file->put(mid.scheduleKey, mid.schedule, mid.name);

  graph::Graph two = convChain(2);
  npu::CompileOptions forced;
  forced.schedules = file;
  npu::Segment plain = npu::compileSegment(two, groupIds(two), t, {}).value();
  npu::Segment seg = npu::compileSegment(two, groupIds(two), t, forced).value();
  ASSERT_EQ(seg.batchSplit.size(), 1u);
  EXPECT_EQ(seg.batchSplit[0].subBatch, 1);
  const std::string note = " (forced by the schedule file)";
  std::vector<std::string> tilings;
  for (const npu::GroupInfo &gi : seg.groupInfo)
    if (gi.groupId == two.groups[1].id) {
      EXPECT_EQ(gi.schedule.str(), mid.schedule.str());
      EXPECT_NE(gi.tiling.find(note), std::string::npos)
          << "sub-batch " << gi.subBatch << ": " << gi.tiling;
      // The segment appends which images each sub-batch runs; the rest is the same.
      const size_t at = gi.tiling.find("; batch split: ");
      ASSERT_NE(at, std::string::npos) << gi.tiling;
      tilings.push_back(gi.tiling.substr(0, at));
    }
  ASSERT_EQ(tilings.size(), 2u) << "one per image";
  EXPECT_EQ(tilings[0], tilings[1]);

  const Shape &s = two.value(two.inputs[0]).shape;
  HostTensor in(s, halves(randomData(size_t(numElements(s)), 1)));
  EXPECT_EQ(runSegment(seg, t, in).data, runSegment(plain, t, in).data);
}

} // namespace
} // namespace npuc::test
