// DecodeTest.cpp - how the decoder resolves each field of an instruction (Decode.h): the
// instruction's own value, else the description's fixed value, else 0 for an encoded field, else
// the primitive's default for a field the description lacks (extent 1, offsets 0). The decoder
// reads an instruction's slots (isa::Instr) and looks up the names it holds outside them; these
// cases pin that: names that are no field (sorting anywhere, prefixes of real names), fields
// given before the description is set, and descriptions that are not the target's own.
#include "simulator/Decode.h"
#include "SimTestUtil.h"

#include <gtest/gtest.h>

using namespace simtest;

namespace {

sim::Decoded decodeOne(const isa::Target &t, const isa::Instr &in) {
  isa::Program p;
  p.instrs.push_back(in);
  sim::Memory mem(t, 1 << 20);
  std::vector<sim::Decoded> d = sim::decodeProgram(t, p, mem);
  EXPECT_EQ(d.size(), 1u);
  return d.at(0);
}

} // namespace

TEST(SimDecode, InstructionValueBeatsFixedValue) {
  auto t = makeTarget();
  isa::InstrDesc &ld = t->instrs[0];
  ASSERT_EQ(ld.mnemonic, "ld");
  ld.fixed["src_space"] = DRAM;
  ld.fixed["elem_bytes"] = 2;
  // The instruction gives src_space itself (L1); elem_bytes comes from the description.
  isa::Instr in =
      make(*t, "ld", {{"src_space", L1}, {"dst_space", L1}, {"dst_addr", 256}, {"n0", 4}});
  sim::Decoded d = decodeOne(*t, in);
  EXPECT_EQ(d.dma.src.level, L1);
  EXPECT_EQ(d.dma.src.elemBytes, 2);
  EXPECT_EQ(d.bytes, 8);
  in.erase("src_space");
  EXPECT_EQ(decodeOne(*t, in).dma.src.level, DRAM);
}

TEST(SimDecode, FieldsTheDescriptionLacksTakeThePrimitiveDefaults) {
  auto t = makeTarget();
  isa::InstrDesc &ld = t->instrs[0];
  // A 2-D DMA: no n2, no third-dimension strides or pads.
  std::erase_if(ld.fields, [](const isa::Field &f) {
    return f.name == "n2" || f.name == "src_s2" || f.name == "dst_s2" || f.name == "pad2_lo" ||
           f.name == "pad2_hi";
  });
  isa::Instr in;
  in.desc = &ld;
  for (const auto &[k, v] : std::map<std::string, int64_t>{{"src_space", DRAM},
                                                           {"dst_space", L1},
                                                           {"elem_bytes", 1},
                                                           {"n0", 8},
                                                           {"n1", 3},
                                                           {"src_s0", 1},
                                                           {"src_s1", 8},
                                                           {"dst_s0", 1},
                                                           {"dst_s1", 8}})
    in.set(k, v);
  sim::Decoded d = decodeOne(*t, in);
  EXPECT_EQ(d.dma.n[2], 1); // absent extent: 1
  EXPECT_EQ(d.dma.padLo[2], 0);
  EXPECT_EQ(d.elements, 24);
  // An encoded field left out of the instruction reads 0, also an extent (nothing to move).
  isa::Instr noN1 = in;
  noN1.erase("n1");
  EXPECT_EQ(decodeOne(*t, noN1).elements, 0);
  // A field the description lacks but the instruction gives (kept by name) is read as given.
  isa::Instr withN2 = in;
  withN2.set("n2", 2);
  ASSERT_EQ(withN2.others().size(), 1u);
  EXPECT_EQ(decodeOne(*t, withN2).elements, 48);
}

TEST(SimDecode, FieldsGivenBeforeTheDescriptionDecode) {
  auto t = makeTarget();
  isa::Instr in;
  in.set("m", 2); // no description yet: the instruction keeps them by name
  in.set("k", 3);
  in.set("n", 4);
  in.desc = desc(*t, "mm");
  ASSERT_EQ(in.layout(), nullptr);
  sim::Decoded d = decodeOne(*t, in);
  EXPECT_EQ(d.mm.m, 2);
  EXPECT_EQ(d.mm.k, 3);
  EXPECT_EQ(d.mm.n, 4);
  EXPECT_EQ(d.elements, 8);
}

TEST(SimDecode, NamesThatAreNotFieldsAreIgnoredWhereverTheySort) {
  auto t = makeTarget();
  // Real names, and around them names that sort first, last, between two real names, and as
  // prefixes or extensions of real names: none of them may shift or shadow a real field.
  isa::Instr in =
      make(*t, "vop", {{"op", 1},          {"dst_space", L1}, {"dst_addr", 64},  {"dst_dtype", 1},
                       {"src1_space", L1}, {"src1_addr", 0},  {"src1_dtype", 1}, {"src2_space", L1},
                       {"src2_addr", 32},  {"src2_dtype", 1}, {"n0", 3},         {"n1", 2},
                       {"dst_s0", 1},      {"dst_s1", 3},     {"src1_s0", 1},    {"src1_s1", 4},
                       {"src2_s0", 2},     {"src2_s1", 0},    {"imm0", 7},       {"AAA", 11},
                       {"zzz", 12},        {"n00", 13},       {"src1_s", 14},    {"src1_s00", 15},
                       {"dst", 16},        {"op_", 17},       {"imm", 18}});
  sim::Decoded d = decodeOne(*t, in);
  EXPECT_EQ(d.vec.op, isa::VecOp::Add);
  EXPECT_EQ(d.vec.n[0], 3);
  EXPECT_EQ(d.vec.n[1], 2);
  EXPECT_EQ(d.vec.n[2], 1);
  EXPECT_EQ(d.vec.dst.addr, 64);
  EXPECT_EQ(d.vec.src2.addr, 32);
  EXPECT_EQ(d.vec.src1.stride[0], 1);
  EXPECT_EQ(d.vec.src1.stride[1], 4);
  EXPECT_EQ(d.vec.src2.stride[0], 2);
  EXPECT_EQ(d.vec.src2.stride[1], 0);
  EXPECT_EQ(d.vec.dst.stride[1], 3);
  uint32_t imm0;
  std::memcpy(&imm0, &d.vec.imm0, 4);
  EXPECT_EQ(imm0, 7u);
  EXPECT_EQ(d.vec.src1.type, isa::ElemType::F32);
}

TEST(SimDecode, DescriptionsOutsideTheTargetDecodeToo) {
  auto t = makeTarget();
  // A description that is not one of t's (e.g. a program decoded against a copy of the target).
  isa::InstrDesc other = t->instrs[1];
  ASSERT_EQ(other.mnemonic, "mm");
  other.fixed["k"] = 8;
  isa::Instr in;
  in.desc = &other;
  for (const auto &[k, v] :
       std::map<std::string, int64_t>{{"m", 2}, {"n", 4}, {"c_addr", 128}, {"accumulate", 1}})
    in.set(k, v);
  sim::Decoded d = decodeOne(*t, in);
  EXPECT_EQ(d.mm.m, 2);
  EXPECT_EQ(d.mm.k, 8);
  EXPECT_EQ(d.mm.n, 4);
  EXPECT_EQ(d.mm.cAddr, 128);
  EXPECT_TRUE(d.mm.accumulate);
}
