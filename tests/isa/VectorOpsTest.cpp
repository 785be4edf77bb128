// VectorOpsTest.cpp - the vector-op table (isa/VectorOps.def): names, the operands each op reads
// and its scalar result. Expected values come from docs/ISA.md's op table and the RTL's op list
// (docs/RTL.md), written out here, not read from the table.
#include "isa/VectorOps.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <string>

using namespace npuc::isa;

namespace {

TEST(VectorOps, NamesRoundTrip) {
  const std::set<std::string> documented = {"copy", "add",  "sub",    "mul", "max",  "min",
                                            "relu", "clip", "muladd", "exp", "tanh", "sigmoid",
                                            "div",  "sqrt", "mac",    "erf"};
  std::set<std::string> names;
  for (VecOp op : kAllVecOps) {
    names.insert(vecOpName(op));
    EXPECT_EQ(vecOpFromName(vecOpName(op)), op) << vecOpName(op);
  }
  EXPECT_EQ(names, documented);
  EXPECT_EQ(vecOpFromName("muladd"), VecOp::MulAdd);
  EXPECT_EQ(vecOpFromName("fma"), std::nullopt);
  EXPECT_EQ(vecOpFromName("Add"), std::nullopt); // names are case-sensitive, as in the YAML
  EXPECT_EQ(vecOpFromName(""), std::nullopt);
}

TEST(VectorOps, OperandsEachOpReads) {
  const std::set<std::string> binary = {"add", "sub", "mul", "max", "min", "div", "mac"};
  const std::set<std::string> withImmediates = {"clip", "muladd"};
  const std::set<std::string> inRtl = {"copy", "add",  "sub",    "mul", "max",  "min",
                                       "relu", "clip", "muladd", "exp", "tanh", "sigmoid",
                                       "div",  "sqrt", "erf",    "mac"};
  for (VecOp op : kAllVecOps) {
    const std::string name = vecOpName(op);
    EXPECT_EQ(vecOpReadsSrc2(op), binary.count(name) == 1) << name;
    EXPECT_EQ(vecOpSources(op), binary.count(name) ? 2 : 1) << name;
    EXPECT_EQ(vecOpImmediates(op), withImmediates.count(name) ? 2 : 0) << name;
    EXPECT_EQ(vecOpReadsDst(op), name == "mac") << name;
    EXPECT_EQ(vecOpInRtl(op), inRtl.count(name) == 1) << name;
  }
}

TEST(VectorOps, ScalarResults) {
  // Exact in fp32: the results docs/ISA.md gives, for a = 3, b = -2, old dst c = 10.
  const float a = 3, b = -2, c = 10;
  EXPECT_EQ(vecOpApply<VecOp::Copy>(a, b, c, 0, 0), 3.0f);
  EXPECT_EQ(vecOpApply<VecOp::Add>(a, b, c, 0, 0), 1.0f);
  EXPECT_EQ(vecOpApply<VecOp::Sub>(a, b, c, 0, 0), 5.0f);
  EXPECT_EQ(vecOpApply<VecOp::Mul>(a, b, c, 0, 0), -6.0f);
  EXPECT_EQ(vecOpApply<VecOp::Div>(a, b, c, 0, 0), -1.5f);
  EXPECT_EQ(vecOpApply<VecOp::Max>(a, b, c, 0, 0), 3.0f);
  EXPECT_EQ(vecOpApply<VecOp::Min>(a, b, c, 0, 0), -2.0f);
  EXPECT_EQ(vecOpApply<VecOp::Relu>(b, a, c, 0, 0), 0.0f);
  EXPECT_EQ(vecOpApply<VecOp::Relu>(a, b, c, 0, 0), 3.0f);
  EXPECT_EQ(vecOpApply<VecOp::Clip>(a, b, c, -1, 2), 2.0f);
  EXPECT_EQ(vecOpApply<VecOp::Clip>(b, a, c, -1, 2), -1.0f);
  EXPECT_EQ(vecOpApply<VecOp::MulAdd>(a, b, c, 0.5f, 4), 5.5f);
  EXPECT_EQ(vecOpApply<VecOp::Mac>(a, b, c, 0, 0), 4.0f);
  EXPECT_EQ(vecOpApply<VecOp::Sqrt>(9.0f, b, c, 0, 0), 3.0f);
  EXPECT_EQ(vecOpApply<VecOp::Exp>(0.0f, b, c, 0, 0), 1.0f);
  // erf(0.5) = 0.520499877813... (Abramowitz and Stegun, table 7.1); erf is odd.
  EXPECT_NEAR(vecOpApply<VecOp::Erf>(0.5f, b, c, 0, 0), 0.5204998778f, 1e-7f);
  EXPECT_NEAR(vecOpApply<VecOp::Erf>(-0.5f, b, c, 0, 0), -0.5204998778f, 1e-7f);
  EXPECT_EQ(vecOpApply<VecOp::Tanh>(0.0f, b, c, 0, 0), 0.0f);
  EXPECT_EQ(vecOpApply<VecOp::Sigmoid>(0.0f, b, c, 0, 0), 0.5f);
}

TEST(VectorOps, MulAddAndMacRoundTheProductFirst) {
  // x = 1 + 2^-12: x * x = 1 + 2^-11 + 2^-24 is a tie in fp32 and rounds to even, 1 + 2^-11, so
  // x * x - (1 + 2^-11) is 0 with two roundings and 2^-24 with a fused multiply-add.
  const float x = 1.0f + std::ldexp(1.0f, -12), y = -(1.0f + std::ldexp(1.0f, -11));
  EXPECT_EQ(vecOpApply<VecOp::MulAdd>(x, 0, 0, x, y), 0.0f);
  EXPECT_EQ(vecOpApply<VecOp::Mac>(x, x, y, 0, 0), 0.0f);
}

} // namespace
