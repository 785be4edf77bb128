// PackageTest.cpp - the .npub package: exact round trips (hand-built graph with every attribute
// kind, and a compiled bundled model whose reloaded package must run to identical outputs), and
// the errors a damaged or foreign file must produce.
#include "E2eUtil.h"

#include "graph/Passes.h"
#include "graph/Reference.h"
#include "graph/ShapeInference.h"
#include "isa/Target.h"
#include "npu/pipeline/Compile.h"
#include "support/Error.h"
#include "support/File.h"
#include "support/Npy.h"
#include "tools/driver/Compiler.h"
#include "tools/driver/Package.h"
#include "tools/driver/Runtime.h"

#include <cmath>
#include <cstring>

namespace npuc::e2e {
namespace {

std::string errorOf(const std::string &bytes) {
  try {
    driver::parsePackage(bytes, "pkg.npub");
  } catch (const Error &e) {
    return e.what();
  }
  return "<no error>";
}

/// A small graph built by hand, using every value dtype and attribute kind.
driver::CompiledModel handBuilt(const isa::Target &t) {
  driver::CompiledModel m;
  m.target = t;
  m.options.doubleBuffer = false;
  graph::Graph &g = m.graph;
  g.name = "hand";
  graph::ValueId x = g.addValue("x", {1, 4}, graph::DType::F32);
  graph::ValueId w = g.addConstant("w", {4, 2}, {1, -2, 3.5f, 0, 1e-8f, 7, -0.25f, 9});
  graph::ValueId s = g.addConstantI64("shape", {2}, {2, 1});
  graph::ValueId y = g.addValue("y", {1, 2}, graph::DType::F32);
  graph::ValueId z = g.addValue("z", {2, 1}, graph::DType::F32);
  g.inputs = {x};
  g.outputs = {z};
  graph::NodeId mm = g.addNode(graph::OpKind::MatMul, "mm", {x, w}, {y});
  graph::NodeId rs = g.addNode(graph::OpKind::Reshape, "rs", {y, s}, {z});
  g.node(mm).attrs = {{"i", int64_t(-3)},
                      {"f", 0.1},
                      {"nan", std::nan("")},
                      {"inf", -HUGE_VAL},
                      {"s", std::string("a \"quoted\" name")},
                      {"ints", std::vector<int64_t>{1, 2, 3}},
                      {"floats", std::vector<double>{0.5, 1e300}}};
  g.node(rs).attrs = {{"allowzero", int64_t(0)}};
  graph::FusedGroup grp;
  grp.id = 0;
  grp.name = "mm";
  grp.nodes = {mm, rs};
  grp.anchor = mm;
  grp.inputs = {x};
  grp.outputs = {z};
  grp.placement = graph::Placement::Cpu;
  grp.cpuReason = "test: CPU by construction";
  g.groups = {grp};
  m.segments = {driver::Seg{false, {0}, -1}};
  return m;
}

TEST(Package, HandBuiltGraphRoundTripsExactly) {
  const std::string target = repoPath("configs/npu-base.yaml");
  NPUC_REQUIRE_FILE(target);
  driver::CompiledModel m = handBuilt(isa::loadTarget(target));
  std::string bytes = driver::packageBytes(m);
  ASSERT_EQ(bytes.substr(0, 4), "NPUB");
  driver::CompiledModel back = driver::parsePackage(bytes, "hand.npub");
  // Serialising the reloaded model reproduces the same bytes: nothing was lost or reordered.
  EXPECT_EQ(driver::packageBytes(back), bytes);
  const graph::Graph &g = back.graph;
  ASSERT_EQ(g.values.size(), 5u);
  EXPECT_EQ(*g.value(1).f32, (std::vector<float>{1, -2, 3.5f, 0, 1e-8f, 7, -0.25f, 9}));
  EXPECT_EQ(*g.value(2).i64, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(g.value(2).dtype, graph::DType::I64);
  EXPECT_EQ(g.value(3).producer, 0);
  const graph::Node &mm = g.node(0);
  EXPECT_EQ(mm.attrInt("i", 0), -3);
  EXPECT_EQ(mm.attrFloat("f", 0), 0.1);
  EXPECT_TRUE(std::isnan(mm.attrFloat("nan", 0)));
  EXPECT_EQ(mm.attrFloat("inf", 0), -HUGE_VAL);
  EXPECT_EQ(mm.attrString("s", ""), "a \"quoted\" name");
  EXPECT_EQ(mm.attrInts("ints"), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(std::get<std::vector<double>>(mm.attrs.at("floats")),
            (std::vector<double>{0.5, 1e300}));
  ASSERT_EQ(g.groups.size(), 1u);
  EXPECT_EQ(g.groups[0].cpuReason, "test: CPU by construction");
  EXPECT_EQ(g.groups[0].placement, graph::Placement::Cpu);
  EXPECT_EQ(back.segments.size(), 1u);
  EXPECT_FALSE(back.options.doubleBuffer);
  EXPECT_EQ(back.target.name, m.target.name);
}

TEST(Package, DamagedFilesAreRejectedWithTheFileName) {
  const std::string target = repoPath("configs/npu-base.yaml");
  NPUC_REQUIRE_FILE(target);
  std::string bytes = driver::packageBytes(handBuilt(isa::loadTarget(target)));
  auto has = [](const std::string &msg, const std::string &sub) {
    return msg.find(sub) != std::string::npos;
  };
  EXPECT_TRUE(has(errorOf(""), "pkg.npub: not an npuc package")) << errorOf("");
  EXPECT_TRUE(has(errorOf("ONNX" + bytes.substr(4)), "pkg.npub: not an npuc package"));
  std::string next = bytes; // a version this npuc does not read
  next[4] = static_cast<char>(driver::kPackageVersion + 1);
  const std::string nextText = "format version " + std::to_string(driver::kPackageVersion + 1);
  EXPECT_TRUE(has(errorOf(next), nextText)) << errorOf(next);
  // Cut anywhere: in the header, or in the blob area.
  for (size_t cut : {size_t(10), size_t(40), bytes.size() / 2, bytes.size() - 1}) {
    std::string msg = errorOf(bytes.substr(0, cut));
    EXPECT_TRUE(has(msg, "pkg.npub: ")) << cut << ": " << msg;
    EXPECT_TRUE(has(msg, "not an npuc package") || has(msg, "corrupt")) << cut << ": " << msg;
  }
  std::string flipped = bytes;
  flipped.back() ^= 0x40; // last byte of the blob area (a constant)
  EXPECT_TRUE(has(errorOf(flipped), "checksum")) << errorOf(flipped);
  std::string padded = bytes + "x";
  EXPECT_TRUE(has(errorOf(padded), "blob bytes expected")) << errorOf(padded);
}

TEST(Package, CorruptHeaderFieldsAreNamed) {
  const std::string target = repoPath("configs/npu-base.yaml");
  NPUC_REQUIRE_FILE(target);
  std::string bytes = driver::packageBytes(handBuilt(isa::loadTarget(target)));
  // Rewrite the header text in place (same length keeps the preamble's length field valid).
  auto patched = [&](const std::string &from, const std::string &to) {
    EXPECT_EQ(from.size(), to.size());
    std::string b = bytes;
    size_t pos = b.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    b.replace(pos, from.size(), to);
    return errorOf(b);
  };
  EXPECT_NE(patched("\"producer\":0", "\"producer\":9").find("graph.values[3].producer"),
            std::string::npos);
  EXPECT_NE(patched("\"placement\":\"cpu\"", "\"placement\":\"gpu\"").find("placement"),
            std::string::npos);
  EXPECT_NE(patched("\"dead\":false", "\"dead\":0    ").find("expected a boolean"),
            std::string::npos);
}

TEST(Package, CompiledModelRunsIdenticallyAfterReload) {
  const std::string onnx = repoPath("models/tinycnn.onnx");
  const std::string input = repoPath("models/tinycnn_input.npy");
  const std::string target = repoPath("configs/npu-base.yaml");
  NPUC_REQUIRE_FILE(onnx);
  NPUC_REQUIRE_FILE(input);
  NPUC_REQUIRE_FILE(target);
  driver::CompiledModel m = driver::compileModel(onnx, target, {});
  std::string path = (std::filesystem::temp_directory_path() /
                      ("npuc_pkg_test_" + std::to_string(::getpid()) + ".npub"))
                         .string();
  driver::savePackage(m, path);
  driver::CompiledModel back = driver::loadPackage(path);
  std::filesystem::remove(path);
  EXPECT_EQ(driver::packageBytes(back), driver::packageBytes(m));
  ASSERT_EQ(back.npuSegments.size(), m.npuSegments.size());
  HostTensor x = readNpy(input);
  std::string in = m.graph.value(m.graph.inputs[0]).name;
  driver::RunResult a = driver::runModel(m, {{in, x}});
  driver::RunResult b = driver::runModel(back, {{in, x}});
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (const auto &[name, t] : a.outputs)
    EXPECT_EQ(t.data, b.outputs.at(name).data) << name; // bit-identical: same program, same data
  EXPECT_EQ(a.report.at("total_cycles"), b.report.at("total_cycles"));
}

// Layouts through the package and the runtime: one NPU group x (NHWC) -> Reshape -> Transpose
// -> Transpose back, whose bytes move (x's channels are innermost, the output's are not), but
// only the host reads the output: the host reads it in dim order 0,2,1 and the group is a view
// of three layout ops (more than the graph has groups). The reloaded package is byte-identical,
// and the run equals the reference exactly (a view moves no values; the inputs are fp16-exact).
TEST(Package, LayoutViewsRoundTripAndRunToTheReference) {
  const std::string target = repoPath("configs/npu-base.yaml");
  NPUC_REQUIRE_FILE(target);
  driver::CompiledModel m;
  m.target = isa::loadTarget(target);
  graph::Graph &g = m.graph;
  g.name = "views";
  graph::ValueId x = g.addValue("x", {1, 8, 5, 6}, graph::DType::F32);
  g.inputs = {x};
  auto node = [&](graph::OpKind op, const std::string &name, std::vector<graph::ValueId> ins,
                  std::map<std::string, graph::AttrValue> attrs) {
    graph::ValueId o = g.addValue(name, {}, graph::DType::F32);
    graph::NodeId n = g.addNode(op, name, std::move(ins), {o});
    g.node(n).attrs = std::move(attrs);
    graph::inferNodeShape(g, n);
    return std::make_pair(n, o);
  };
  auto [rn, r] =
      node(graph::OpKind::Reshape, "flat", {x, g.addConstantI64("s", {3}, {1, 8, 30})}, {});
  auto [tn, tok] =
      node(graph::OpKind::Transpose, "tokens", {r}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  auto [bn, back] =
      node(graph::OpKind::Transpose, "back", {tok}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  g.outputs = {back};
  auto group = [&](int id, std::vector<graph::NodeId> nodes) {
    graph::FusedGroup grp;
    grp.id = id;
    grp.nodes = std::move(nodes);
    grp.anchor = grp.nodes.front();
    grp.name = g.node(grp.anchor).name;
    grp.placement = graph::Placement::Npu;
    graph::computeGroupBoundary(g, grp);
    return grp;
  };
  g.groups = {group(0, {rn, tn, bn})};
  const isa::Target &t = m.target;
  driver::compileWithRetry(
      m,
      [&t](const graph::Graph &gr, const graph::FusedGroup &grp) {
        return npu::npuRejectReason(gr, grp, t);
      },
      m.options);
  ASSERT_EQ(m.npuSegments.size(), 1u);
  const npu::Segment &seg = m.npuSegments[0];
  ASSERT_EQ(seg.groupInfo.size(), 1u);
  EXPECT_EQ(seg.groupInfo[0].instrEnd, seg.groupInfo[0].instrBegin) << "a view";
  EXPECT_EQ(seg.groupInfo[0].layoutOpsCancelled, 3);
  ASSERT_EQ(seg.outputs.size(), 1u);
  EXPECT_EQ(seg.outputs[0].layout, (npu::DramLayout{{0, 2, 1}}));
  driver::CompiledModel reloaded = driver::parsePackage(driver::packageBytes(m), "views.npub");
  EXPECT_EQ(driver::packageBytes(reloaded), driver::packageBytes(m));
  HostTensor in({1, 8, 5, 6});
  for (size_t i = 0; i < in.data.size(); ++i)
    in.data[i] = static_cast<float>(static_cast<int>(i % 17) - 8) / 4.0f;
  HostTensor want = graph::runReference(g, {{x, in}}).at(back);
  driver::RunResult res = driver::runModel(reloaded, {{"x", in}});
  EXPECT_EQ(res.outputs.at("back").data, want.data);
}

} // namespace
} // namespace npuc::e2e

namespace npuc::e2e {
namespace {

// The CPU groups' machine code (issue 22): `npuc compile` stores it, `npuc run` links it instead
// of running LLVM, and the outputs are those of a fresh compile, bit for bit. Code another CPU
// compiled is compiled again, the report saying why, with the same outputs.
TEST(Package, NativeCpuCodeIsLinkedInsteadOfCompiled) {
  const std::string onnx = repoPath("models/mlp.onnx");
  const std::string input = repoPath("models/mlp_input.npy");
  NPUC_REQUIRE_FILE(onnx);
  NPUC_REQUIRE_FILE(input);
  driver::CompiledModel m = driver::compileModelForCpu(onnx, {});
  const HostTensor x = readNpy(input);
  const std::string in = m.graph.value(m.graph.inputs[0]).name;
  driver::RunResult fresh = driver::runModel(m, {{in, x}});
  EXPECT_TRUE(fresh.cpuCode.any);
  EXPECT_FALSE(fresh.cpuCode.fromPackage);
  EXPECT_EQ(fresh.report.at("cpu_code").at("source"), "llvm");

  m.cpuCode = driver::compileCpuCode(m);
  ASSERT_TRUE(m.cpuCode.has_value());
  driver::CompiledModel back = driver::parsePackage(driver::packageBytes(m), "pkg.npub");
  ASSERT_TRUE(back.cpuCode.has_value());
  EXPECT_EQ(back.cpuCode->key, m.cpuCode->key);
  EXPECT_EQ(back.cpuCode->host, m.cpuCode->host);
  EXPECT_EQ(back.cpuCode->object, m.cpuCode->object);
  driver::RunResult linked = driver::runModel(back, {{in, x}});
  EXPECT_TRUE(linked.cpuCode.fromPackage) << linked.cpuCode.whyNot;
  EXPECT_EQ(linked.report.at("cpu_code").at("source"), "package");
  EXPECT_FALSE(linked.report.at("cpu_code").contains("package_code_unused"));
  for (const auto &[name, t] : fresh.outputs)
    EXPECT_EQ(t.data, linked.outputs.at(name).data) << name;

  back.cpuCode->host = "x86_64-unknown-linux-gnu pentium4 (features 00000000)";
  back.cpuCode->key = std::string(64, '0');
  driver::RunResult again = driver::runModel(back, {{in, x}});
  EXPECT_FALSE(again.cpuCode.fromPackage);
  EXPECT_TRUE(again.cpuCode.packageHadCode);
  const std::string why = again.report.at("cpu_code").at("package_code_unused");
  EXPECT_NE(why.find("it was compiled for x86_64-unknown-linux-gnu pentium4"), std::string::npos)
      << why;
  EXPECT_EQ(again.report.at("cpu_code").at("source"), "llvm");
  for (const auto &[name, t] : fresh.outputs)
    EXPECT_EQ(t.data, again.outputs.at(name).data) << name;
}

// A constant no live node reads (a weight batch-norm folding replaced) keeps its entry, so ids
// stay, but not its data; what is read keeps its data exactly.
TEST(Package, UnreadConstantsLeaveTheirDataOut) {
  const std::string target = repoPath("configs/npu-base.yaml");
  NPUC_REQUIRE_FILE(target);
  driver::CompiledModel m = handBuilt(isa::loadTarget(target));
  const graph::ValueId unread = m.graph.addConstant("old_w", {3}, {1, 2, 3});
  const graph::ValueId read = m.graph.node(0).inputs[1];
  driver::CompiledModel back = driver::parsePackage(driver::packageBytes(m), "pkg.npub");
  ASSERT_EQ(back.graph.values.size(), m.graph.values.size());
  EXPECT_EQ(back.graph.value(unread).name, "old_w");
  EXPECT_EQ(back.graph.value(unread).shape, (Shape{3}));
  EXPECT_FALSE(back.graph.value(unread).f32);
  ASSERT_TRUE(back.graph.value(read).f32);
  EXPECT_EQ(*back.graph.value(read).f32, *m.graph.value(read).f32);
}

// Packages of format version 3 (an FNV-1a checksum; the fuzzing corpus keeps some) still load
// and run.
TEST(Package, Version3PackagesStillLoad) {
  const std::string pkg = repoPath("fuzz/corpus/package/mlp-cpu.npub");
  const std::string input = repoPath("models/mlp_input.npy");
  const std::string expected = repoPath("models/mlp_expected.npy");
  NPUC_REQUIRE_FILE(pkg);
  NPUC_REQUIRE_FILE(input);
  NPUC_REQUIRE_FILE(expected);
  ASSERT_EQ(readFile(pkg).at(4), 3); // the version's low byte
  driver::CompiledModel m = driver::loadPackage(pkg);
  EXPECT_FALSE(m.cpuCode.has_value());
  driver::RunResult r =
      driver::runModel(m, {{m.graph.value(m.graph.inputs[0]).name, readNpy(input)}});
  ASSERT_EQ(r.outputs.size(), 1u);
  expectClose(r.outputs.begin()->second, readNpy(expected), "mlp-cpu.npub");
  EXPECT_EQ(r.report.at("cpu_code").at("source"), "llvm");
}

} // namespace
} // namespace npuc::e2e
