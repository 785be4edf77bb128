// BankReportTest.cpp - what the report says of a kernel whose buffers bank-aware placement moved
// (npu/pipeline/BankAlloc.h): placement moves addresses only, so the kernel re-lowered at the
// winner's placement reports what the selected kernel reports: the same tiling text, including
// the note kernel selection appends of how it chose it (KernelSelect.cpp), and the same on-chip
// peak (Builder: with a placement the bump allocator accounts as without one).
//
// Expectation (derived): the group compiled with bank-aware placement off and with every buffer
// moved (CompileOptions::bankAlwaysMove) has equal tiling text and on-chip bytes, and both
// outputs are bit-identical.
#include "NpuTestUtil.h"

#include "npu/schedule/Schedule.h"

#include <gtest/gtest.h>

    namespace npuc::test {
  namespace {

  // A 3x3 stride-2 max pool of 32 x 17 x 17 (the pooling kernel: double buffers by default).
  graph::Graph maxPool() {
    graph::Graph g;
    auto x = g.addValue("x", {1, 32, 17, 17}, graph::DType::F32);
    g.inputs = {x};
    auto y = g.addValue("y", {1, 32, 9, 9}, graph::DType::F32);
    auto n = g.addNode(graph::OpKind::MaxPool, "pool", {x}, {y});
    g.node(n).attrs["kernel_shape"] = std::vector<int64_t>{3, 3};
    g.node(n).attrs["strides"] = std::vector<int64_t>{2, 2};
    g.node(n).attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
    oneGroup(g, y);
    return g;
  }

  enum class Given { Forced, Tuned };

  class BankReport : public ::testing::TestWithParam<Given> {};

  TEST_P(BankReport, AMovedKernelKeepsItsTilingNoteAndOnChipPeak) {
    const Given given = GetParam();
    graph::Graph g = maxPool();
    const isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
    HostTensor in({1, 32, 17, 17}, halves(randomData(32 * 17 * 17, 1)));
    npu::CompileOptions off;
    off.bankAware = false;
    // A point other than the default, so that selection notes where it came from.
    npu::Schedule s = compileAndRun(g, t, {in}, off).seg.groupInfo.at(0).schedule;
    ASSERT_EQ(s.strategy, npu::Strategy::Pool);
    ASSERT_EQ(s.get("buffers"), 2);
    s.set("buffers", 1).set("toh", 1);
    auto file = std::make_shared<npu::ScheduleFile>();
    file->put(npu::scheduleKey(g, g.groups[0], t), s, "pool");
    (given == Given::Forced ? off.schedules : off.tuned) = file;
    npu::CompileOptions moved = off;
    moved.bankAware = true;
    moved.bankAlwaysMove = true;

    NpuRun r0 = compileAndRun(g, t, {in}, off), r1 = compileAndRun(g, t, {in}, moved);
    const npu::GroupInfo &kept = r0.seg.groupInfo.at(0), &gi = r1.seg.groupInfo.at(0);
    EXPECT_EQ(kept.bank.change, "");
    EXPECT_NE(gi.bank.change, "") << "bankAlwaysMove moves the buffers";
    EXPECT_EQ(gi.schedule.str(), s.str());
    const std::string note = given == Given::Forced ? " (forced by the schedule file)" : " (tuned)";
    EXPECT_NE(kept.tiling.find(note), std::string::npos) << kept.tiling;
    EXPECT_NE(gi.tiling.find(note), std::string::npos) << gi.tiling;
    EXPECT_EQ(gi.tiling, kept.tiling);
    ASSERT_TRUE(kept.onChipBytes.count("l1")) << "the pooling kernel stages its tiles in L1";
    EXPECT_GT(kept.onChipBytes.at("l1"), 0);
    EXPECT_EQ(gi.onChipBytes, kept.onChipBytes);
    ASSERT_EQ(r0.out.data.size(), r1.out.data.size());
    for (size_t i = 0; i < r0.out.data.size(); ++i)
      ASSERT_EQ(r0.out.data[i], r1.out.data[i]) << "element " << i;
  }

  INSTANTIATE_TEST_SUITE_P(Selection, BankReport, ::testing::Values(Given::Forced, Given::Tuned),
                           [](const ::testing::TestParamInfo<Given> &i) {
                             return std::string(i.param == Given::Forced ? "Forced" : "Tuned");
                           });

  } // namespace
} // namespace npuc::test
