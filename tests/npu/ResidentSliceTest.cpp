// ResidentSliceTest.cpp - a chunked loop-nest kernel that reads part of a tensor kept resident in
// L1 (npu/pipeline/Resident.h): BERT's attention Slice at its tuned point. The roofline's
// compulsory DRAM bytes (KernelPhases.cpp groupInfo) drop what the kernel moves of a resident
// tensor; a chunked Slice moves only its window of it, not the whole tensor (the segment compiler
// used to subtract the whole tensor and abort on the negative result).
//
// Expectations (derived from the shapes): t = Relu(x) [64, 512] stays in L1; the second group
// reads columns [128, 192) of it, adds y [64, 64] and writes o [64, 64]. Its compulsory DRAM
// traffic is y read once and o written once, 2 bytes per element; npu-base moves 16 DRAM bytes
// per cycle (configs/npu-base.yaml). The values are exact: Relu and the copies are exact on fp16
// values, and the Add rounds once to fp16 (2^-11 * |o|).
#include "NpuTestUtil.h"

#include "../common/GraphText.h"
#include "graph/Reference.h"
#include "npu/schedule/Schedule.h"

#include <cmath>
#include <gtest/gtest.h>

namespace npuc::test {
namespace {

struct SliceNet {
  graph::Graph g;
  graph::ValueId x, y, t, o;
};

// Two groups, by hand: {Relu} and {Slice, Add}, both on the NPU.
SliceNet sliceOfResident() {
  SliceNet n;
  graph::Graph &g = n.g;
  n.x = g.addValue("x", {64, 512}, graph::DType::F32);
  n.y = g.addValue("y", {64, 64}, graph::DType::F32);
  g.inputs = {n.x, n.y};
  graph::NodeId relu = addNode(g, "Relu", "relu", {n.x});
  n.t = out(g, relu);
  graph::NodeId slice = addNode(g, "Slice", "slice", {n.t},
                                {{"starts", std::vector<int64_t>{0, 128}},
                                 {"ends", std::vector<int64_t>{64, 192}},
                                 {"axes", std::vector<int64_t>{0, 1}},
                                 {"steps", std::vector<int64_t>{1, 1}}});
  graph::NodeId add = addNode(g, "Add", "add", {out(g, slice), n.y});
  n.o = out(g, add);
  g.outputs = {n.o};
  auto group = [&](int id, std::vector<graph::NodeId> nodes, std::vector<graph::ValueId> ins,
                   graph::ValueId result) {
    graph::FusedGroup grp;
    grp.id = id;
    grp.nodes = nodes;
    grp.anchor = nodes.front();
    grp.name = g.node(grp.anchor).name;
    grp.inputs = std::move(ins);
    grp.outputs = {result};
    grp.placement = graph::Placement::Npu;
    g.groups.push_back(grp);
  };
  group(0, {relu}, {n.x}, n.t);
  group(1, {slice, add}, {n.t, n.y}, n.o);
  return n;
}

TEST(ResidentSlice, ChunkedSliceOfAResidentTensorCountsOnlyItsDramTraffic) {
  SliceNet n = sliceOfResident();
  const isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  // The tuned point of BERT's Slice: the outer loop (64 rows) in chunks of 16, double-buffered.
  npu::Schedule chunked;
  chunked.strategy = npu::Strategy::LoopNest;
  chunked.set("buffers", 2).set("chunked", 1).set("depth", 1).set("rows", 16);
  auto file = std::make_shared<npu::ScheduleFile>();
  file->put(npu::scheduleKey(n.g, n.g.groups[1], t), chunked, "slice");
  npu::CompileOptions opt;
  opt.schedules = file;
  npu::Segment seg = npu::compileSegment(n.g, {0, 1}, t, opt).value();

  ASSERT_EQ(seg.residency.size(), 1u);
  EXPECT_EQ(seg.residency[0].dropped, "") << seg.residency[0].name;
  ASSERT_EQ(seg.groupInfo.size(), 2u);
  const npu::GroupInfo &gi = seg.groupInfo[1];
  EXPECT_EQ(gi.schedule.str(), chunked.str()) << gi.tiling;
  EXPECT_NE(gi.tiling.find("tiled: 4 chunk(s) of 16 of 64 rows"), std::string::npos) << gi.tiling;
  EXPECT_NE(gi.tiling.find("resident in L1 (no DRAM traffic): relu.out (in)"), std::string::npos)
      << gi.tiling;
  const int64_t compulsory = 2 * (64 * 64) + 2 * (64 * 64); // y in, o out
  EXPECT_EQ(gi.bound, "dram") << gi.tiling;
  EXPECT_EQ(gi.rooflineCycles, compulsory / 16) << gi.tiling;

  sim::Memory mem(t, seg.dramBytes);
  auto &dram = mem.dram();
  std::copy(seg.constImage.begin(), seg.constImage.end(), dram.begin() + seg.constBase);
  std::map<graph::ValueId, HostTensor> ins = {
      {n.x, HostTensor({64, 512}, halves(randomData(size_t(64 * 512), 1)))},
      {n.y, HostTensor({64, 64}, halves(randomData(size_t(64 * 64), 2)))}};
  for (const npu::DramTensor &in : seg.inputs) {
    std::vector<uint8_t> bytes = npu::packTensor(ins.at(in.value), in);
    std::copy(bytes.begin(), bytes.end(), dram.begin() + in.addr);
  }
  sim::SimStats stats = sim::run(t, seg.program, mem, sim::SimOptions{}); // hazard checker on
  // The simulated traffic: x read by the Relu, then the Slice group's y and o; t stays on chip.
  EXPECT_EQ(stats.dramBytesRead, 2 * (64 * 512) + 2 * (64 * 64));
  EXPECT_EQ(stats.dramBytesWritten, 2 * (64 * 64));
  const npu::DramTensor &o = seg.outputs.at(0);
  HostTensor got = npu::unpackTensor(dram.data() + o.addr, o);
  HostTensor want = graph::runReference(n.g, ins).at(n.o);
  ASSERT_EQ(got.shape, want.shape);
  for (size_t i = 0; i < want.data.size(); ++i)
    ASSERT_LE(std::fabs(got.data[i] - want.data[i]), std::ldexp(std::fabs(want.data[i]), -11))
        << "element " << i;
}

} // namespace
} // namespace npuc::test
