// LoadTest.cpp - the bundled target descriptions load and mean what their comments say. The
// expected numbers come from the task's hardware spec (and hand-summed field widths), not from
// the loader.
#include "TestUtil.h"

#include "isa/Target.h"
#include "support/Error.h"

#include <gtest/gtest.h>

using namespace npuc::isa;
using namespace npuc::isa::test;

TEST(Load, NpuBaseMachine) {
  Target t = loadTarget(configPath("npu-base.yaml"));
  EXPECT_EQ(t.name, "npu-base");
  EXPECT_EQ(t.path, configPath("npu-base.yaml"));
  EXPECT_FALSE(t.sourceText.empty());
  EXPECT_DOUBLE_EQ(t.clockGhz, 1.0);
  EXPECT_EQ(t.instructionBits, 512);
  EXPECT_EQ(t.instructionBytes(), 64);
  EXPECT_EQ(t.opcodeField.lsb, 0);
  EXPECT_EQ(t.opcodeField.width, 8);

  ASSERT_EQ(t.levels.size(), 5u);
  EXPECT_EQ(t.dramLevel(), 0);
  EXPECT_TRUE(t.level("dram").isDram);
  EXPECT_EQ(t.level("dram").size, int64_t(1) << 30);
  const MemoryLevel &l1 = t.level("l1");
  EXPECT_EQ(l1.index, 1);
  EXPECT_EQ(l1.size, 1 << 20);
  EXPECT_EQ(l1.banks, 16);
  EXPECT_EQ(l1.bankWidth, 64);
  EXPECT_EQ(l1.alignment, 64);
  EXPECT_EQ(t.level("l0a").size, 64 * 1024);
  EXPECT_EQ(t.level("l0a").alignment, 32);
  EXPECT_EQ(t.level("l0b").size, 64 * 1024);
  EXPECT_EQ(t.level("acc").size, 128 * 1024);
  EXPECT_EQ(t.level("acc").alignment, 64);
  EXPECT_FALSE(t.findLevel("l2").has_value());

  ASSERT_EQ(t.engines.size(), 5u);
  const char *engines[] = {"load", "feed", "tensor", "vector", "store"};
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(t.findEngine(engines[i]), i) << engines[i];
  EXPECT_DOUBLE_EQ(t.engines[1].bytesPerCycle, 64);
  EXPECT_DOUBLE_EQ(t.engines[2].bytesPerCycle, 0);

  EXPECT_EQ(t.tensor.rows, 16);
  EXPECT_EQ(t.tensor.cols, 16);
  EXPECT_EQ(t.tensor.peakMacsPerCycle(), 256);
  EXPECT_EQ(t.tensor.operandType, ElemType::F16);
  EXPECT_EQ(t.tensor.accType, ElemType::F32);
  EXPECT_EQ(t.tensor.dataflow, "weight-stationary");
  EXPECT_EQ(t.tensor.fillLatency, 32);
  EXPECT_EQ(t.tensor.aLevel, 2);
  EXPECT_EQ(t.tensor.bLevel, 3);
  EXPECT_EQ(t.tensor.accLevel, 4);

  EXPECT_EQ(t.vector.lanes, 16);
  using npuc::isa::VecOp;
  std::vector<VecOp> ops = {VecOp::Copy, VecOp::Add,  VecOp::Sub,  VecOp::Mul,    VecOp::Max,
                            VecOp::Min,  VecOp::Relu, VecOp::Clip, VecOp::MulAdd, VecOp::Mac};
  EXPECT_EQ(t.vector.ops, ops);
  EXPECT_EQ(t.vector.opCode(VecOp::Relu), 6);
  EXPECT_EQ(t.vector.opCode(VecOp::Mac), 9); // appended: the older ops keep their codes
  EXPECT_FALSE(t.vector.supports(VecOp::Exp));
  EXPECT_EQ(t.vector.opCode(VecOp::Exp), -1);
  EXPECT_EQ(t.vector.opOf(6), VecOp::Relu);
  EXPECT_EQ(t.vector.opOf(10), std::nullopt);
  EXPECT_EQ(t.vector.opOf(-1), std::nullopt);
  EXPECT_EQ(t.vector.levels, (std::vector<int>{1, 4}));

  EXPECT_DOUBLE_EQ(t.dram.bytesPerCycle, 16);
  EXPECT_EQ(t.dram.latency, 100);
  EXPECT_EQ(t.tokenQueueDepth, 32);
}

TEST(Load, NpuBaseInstructions) {
  Target t = loadTarget(configPath("npu-base.yaml"));
  ASSERT_EQ(t.instrs.size(), 6u);
  const InstrDesc *ld = t.findInstr("ld");
  ASSERT_TRUE(ld);
  EXPECT_EQ(ld->semantics, Semantics::Dma);
  EXPECT_EQ(ld->engine, 0);
  EXPECT_EQ(ld->fixed.at("src_space"), 0); // dram is level 0
  EXPECT_FALSE(ld->field("src_space"));
  EXPECT_TRUE(ld->hasField("src_space"));
  // opcode 8 bits, pop 8, push 8: src_addr starts at bit 24, dst_space at 24+32.
  ASSERT_TRUE(ld->field("src_addr"));
  EXPECT_EQ(ld->field("src_addr")->lsb, 24);
  EXPECT_EQ(ld->field("dst_space")->lsb, 56);
  EXPECT_EQ(ld->field("dst_space")->width, 3);
  const InstrDesc *st = t.findInstr("st");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->fixed.at("dst_space"), 0);
  EXPECT_EQ(st->engine, 4);
  const InstrDesc *vop = t.findInstr("vop");
  ASSERT_TRUE(vop);
  // vop uses 409 bits in total; imm1 is last and 32 bits wide.
  EXPECT_EQ(vop->field("imm1")->lsb, 409 - 32);
  EXPECT_EQ(vop->field("op")->width, 6);
  EXPECT_EQ(t.findByOpcode(0x10), t.findInstr("mm"));
  EXPECT_EQ(t.findByOpcode(0x77), nullptr);
  EXPECT_EQ(t.instrsWith(Semantics::Dma).size(), 3u);
  EXPECT_EQ(t.instrsWith(Semantics::Finish).size(), 1u);
  // Every primitive field is available on every instruction (the loader's coverage rule).
  for (const InstrDesc &d : t.instrs)
    for (const std::string &f : primitiveFields(d.semantics))
      EXPECT_TRUE(d.hasField(f)) << d.mnemonic << "." << f;
}

TEST(Load, NpuTinyIsSmaller) {
  Target t = loadTarget(configPath("npu-tiny.yaml"));
  EXPECT_EQ(t.name, "npu-tiny");
  EXPECT_EQ(t.instructionBits, 384);
  EXPECT_EQ(t.opcodeField.width, 6);
  EXPECT_EQ(t.tensor.rows, 8);
  EXPECT_EQ(t.tensor.cols, 8);
  EXPECT_EQ(t.level("l1").size, 256 * 1024);
  EXPECT_EQ(t.level("l1").banks, 8);
  EXPECT_EQ(t.level("l0a").size, 16 * 1024);
  EXPECT_EQ(t.level("acc").size, 32 * 1024);
  EXPECT_EQ(t.vector.lanes, 8);
  EXPECT_EQ(t.findInstr("mm")->opcode, 0x08u);
  EXPECT_EQ(t.findInstr("mov")->field("src_addr")->width, 18);
}

TEST(Load, MissingFileNamesThePath) {
  try {
    loadTarget("/nonexistent/dir/npu.yaml");
    FAIL() << "expected an error";
  } catch (const npuc::Error &e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/npu.yaml"), std::string::npos);
  }
}

TEST(Load, EnumNames) {
  EXPECT_STREQ(semanticsName(Semantics::Matmul), "matmul");
  EXPECT_EQ(elemBytes(ElemType::F16), 2);
  EXPECT_EQ(elemBytes(ElemType::F32), 4);
  EXPECT_STREQ(elemTypeName(ElemType::F32), "fp32");
  Field f{"x", 0, 8, true};
  EXPECT_EQ(f.maxValue(), 127);
  EXPECT_EQ(f.minValue(), -128);
  f.isSigned = false;
  EXPECT_EQ(f.maxValue(), 255);
  EXPECT_EQ(f.minValue(), 0);
}

// The presets' numbers come from the description of each machine (VTA's default
// configuration; a datacenter core; int8/int32 edge NPU), not from the loader.
TEST(Load, VtaLikeIsVtasDefaultConfiguration) {
  Target t = loadTarget(configPath("vta-like.yaml"));
  EXPECT_EQ(t.tensor.rows, 16);
  EXPECT_EQ(t.tensor.cols, 16);
  EXPECT_EQ(t.tensor.peakMacsPerCycle(), 256);
  EXPECT_EQ(t.tensor.operandType, ElemType::I8);
  EXPECT_EQ(t.tensor.accType, ElemType::I32);
  EXPECT_EQ(t.levels[size_t(t.tensor.aLevel)].size, 32 * 1024);
  EXPECT_EQ(t.levels[size_t(t.tensor.bLevel)].size, 256 * 1024);
  EXPECT_EQ(t.levels[size_t(t.tensor.accLevel)].size, 128 * 1024);
  ASSERT_EQ(t.engines.size(), 3u);
  EXPECT_EQ(t.engines[0].name, "load");
  EXPECT_EQ(t.engines[1].name, "compute");
  EXPECT_EQ(t.engines[2].name, "store");
  // GEMM and ALU share the compute module.
  EXPECT_EQ(t.findInstr("gemm")->engine, 1);
  EXPECT_EQ(t.findInstr("alu")->engine, 1);
}

TEST(Load, NpuLargeAndInt8) {
  Target base = loadTarget(configPath("npu-base.yaml"));
  Target large = loadTarget(configPath("npu-large.yaml"));
  EXPECT_GT(large.tensor.peakMacsPerCycle(), base.tensor.peakMacsPerCycle());
  EXPECT_GT(large.level("l1").banks, base.level("l1").banks);
  EXPECT_GT(large.dram.bytesPerCycle, base.dram.bytesPerCycle);
  EXPECT_EQ(large.tensor.peakMacsPerCycle(), 64 * 64);
  Target i8 = loadTarget(configPath("npu-int8.yaml"));
  EXPECT_EQ(i8.tensor.operandType, ElemType::I8);
  EXPECT_EQ(i8.tensor.accType, ElemType::I32);
  EXPECT_EQ(elemBytes(ElemType::I8), 1);
  EXPECT_EQ(elemBytes(ElemType::I32), 4);
  EXPECT_STREQ(elemTypeName(ElemType::I32), "int32");
}

TEST(Load, IntegerOperandsNeedInt32Accumulators) {
  expectParseError(edit(baseText(), "operand_dtype: fp16", "operand_dtype: int8"),
                   {"tensor_unit.acc_dtype", "operand_dtype int8 needs acc_dtype int32"});
  expectParseError(edit(baseText(), "acc_dtype: fp32", "acc_dtype: int32"),
                   {"operand_dtype fp16 needs acc_dtype fp32"});
  expectParseError(edit(baseText(), "operand_dtype: fp16", "operand_dtype: int4"),
                   {"unknown dtype 'int4' (expected fp16, fp32, int8 or int32)"});
}
