// GpuTest.cpp - the NVPTX target: thread binding of loop nests (launch sizes derived by hand
// from the loop extents), PTX emission for a whole bundled model, and the PTX assembled by the
// CUDA toolkit's ptxas when it is installed (skipped with a message otherwise). No GPU runs here.
#include "cpu_fallback/Gpu.h"
#include "support/Error.h"
#include "tools/driver/Compiler.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace npuc;
using namespace npuc::tir;

namespace {

const char *kPtxas = "/usr/local/cuda/bin/ptxas";

std::string repo(const std::string &rel) {
  return (std::filesystem::path(NPUC_SOURCE_DIR) / rel).string();
}

TEST(GpuBind, BlocksAndThreadsFromTheFirstNonUnitLoops) {
  // for a in [0,1): for i in [0,1000): for j in [0,300): out[i*300+j] = in[i*300+j] * 2
  Buffer in = Buffer::make("in", DataType::Float(32), {1000, 300});
  Buffer out = Buffer::make("out", DataType::Float(32), {1000, 300});
  Var a = Var::make("a"), i = Var::make("i"), j = Var::make("j");
  Expr idx = i * 300 + j;
  PrimFunc f;
  f.name = "scale";
  f.params = {in, out};
  f.body =
      forLoop(a, imm(0), imm(1),
              forLoop(i, imm(0), imm(1000),
                      forLoop(j, imm(0), imm(300), store(out, load(in, idx) * fimm(2.0), idx))));
  std::vector<cpu::GpuKernel> ks = cpu::bindThreads(f, 256);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].grid, 1000); // i: one block per row
  EXPECT_EQ(ks[0].block, 256); // j: 300 > 256, so each thread takes ceil(300/256) = 2 steps
  std::string ptx = cpu::emitPtx({ks[0].func});
  EXPECT_NE(ptx.find(".entry scale_k0"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("%ctaid.x"), std::string::npos);
  EXPECT_NE(ptx.find("%tid.x"), std::string::npos);
}

TEST(GpuModel, TinyCnnToPtxAndPtxasAcceptsIt) {
  const std::string onnx = repo("models/tinycnn.onnx");
  if (!std::filesystem::exists(onnx))
    GTEST_SKIP() << "missing bundled model " << onnx;
  driver::CompiledModel m = driver::compileModelForCpu(onnx, {});
  cpu::GpuArtifacts art = cpu::buildGpu(m.graph);
  // One kernel per top-level nest; the softmax needs libdevice's expf.
  EXPECT_NE(art.ptx.find(".visible .entry npuc_gpu_group_0_k0"), std::string::npos);
  EXPECT_NE(art.plan.find("kernel npuc_gpu_group_0_k0 grid "), std::string::npos) << art.plan;
  if (!std::filesystem::exists(kPtxas))
    GTEST_SKIP() << kPtxas << " not installed: PTX generated but not assembled";
  auto dir = std::filesystem::temp_directory_path() / ("npuc-gpu-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream o(dir / "tinycnn.ptx");
    o << art.ptx;
  }
  std::string cmd = std::string(kPtxas) + " -arch=sm_80 '" + (dir / "tinycnn.ptx").string() +
                    "' -o '" + (dir / "tinycnn.cubin").string() + "'";
  int rc = std::system(cmd.c_str());
  bool cubin = std::filesystem::exists(dir / "tinycnn.cubin");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(rc, 0) << cmd;
  EXPECT_TRUE(cubin);
}

} // namespace
