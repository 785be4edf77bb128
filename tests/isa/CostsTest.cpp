// CostsTest.cpp - the energy and area tables of a target description (docs/ENERGY.md): their
// defaults, overrides from `energy:`/`area:` and per level, the SRAM scaling rule, the area
// model, and bad figures rejected with the field's path.
#include "TestUtil.h"

#include "isa/Costs.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace npuc::isa;
using namespace npuc::isa::test;

namespace {

// The base text with a YAML section inserted before `tokens:`.
std::string withSection(const std::string &section) {
  return edit(baseText(), "\ntokens:\n", "\n" + section + "\ntokens:\n");
}

} // namespace

TEST(Costs, SramEnergyScalesWithBankSize) {
  Target t = parseTarget(baseText(), "x.yaml");
  // npu-base: l1 1 MiB in 16 banks = 64 KiB per bank; l0a 64 KiB in one; acc 128 KiB in 4.
  // Reference 1.25 pJ/B at 8 KiB, exponent 0.5: 64 KiB -> 1.25 * sqrt(8), 32 KiB -> 1.25 * 2.
  EXPECT_NEAR(readPjPerByte(t, t.level("l1")), 1.25 * std::sqrt(8.0), 1e-12);
  EXPECT_NEAR(readPjPerByte(t, t.level("l0a")), 1.25 * std::sqrt(8.0), 1e-12);
  EXPECT_NEAR(writePjPerByte(t, t.level("acc")), 2.5, 1e-12);
  EXPECT_EQ(readPjPerByte(t, t.level("dram")), 160.0);
}

TEST(Costs, OverridesFromTheDescription) {
  Target t =
      parseTarget(withSection("energy: {dram_pj_per_byte: 40, sram_ref_kib: 64, sram_exponent: 1,\n"
                              "         mac_pj: {fp16: 1.5}}\narea: {sram_mm2_per_kib: 0.01}"),
                  "x.yaml");
  EXPECT_EQ(readPjPerByte(t, t.level("dram")), 40.0);
  EXPECT_NEAR(readPjPerByte(t, t.level("l1")), 1.25, 1e-12);      // 64 KiB banks = reference
  EXPECT_NEAR(readPjPerByte(t, t.level("acc")), 1.25 / 2, 1e-12); // 32 KiB banks, linear
  EXPECT_EQ(t.energy.macPj[int(ElemType::F16)], 1.5);
  EXPECT_EQ(t.energy.macPj[int(ElemType::I8)], EnergyTable().macPj[int(ElemType::I8)]);
  EXPECT_EQ(t.area.sramMm2PerKib, 0.01);

  Target lv =
      parseTarget(edit(baseText(), "alignment: 64, ports: 2}\n  # index 2/3",
                       "alignment: 64, ports: 2, read_pj_per_byte: 7, area_mm2: 3}\n  # index 2/3"),
                  "x.yaml");
  EXPECT_EQ(readPjPerByte(lv, lv.level("l1")), 7.0);
  EXPECT_NEAR(writePjPerByte(lv, lv.level("l1")), 1.25 * std::sqrt(8.0), 1e-12);
  EXPECT_EQ(areaOf(lv).levels[size_t(lv.level("l1").index)], 3.0);
}

TEST(Costs, AreaModelByHand) {
  Target t = parseTarget(
      withSection(
          "area: {mac_mm2: {fp16: 0.01}, vector_lane_mm2: 0.1, vector_special_lane_mm2: 1,\n"
          "       sram_mm2_per_kib: 0.001, sram_bank_mm2: 0.5, "
          "sram_extra_port_fraction: 1}"),
      "x.yaml");
  AreaBreakdown a = areaOf(t);
  EXPECT_NEAR(a.tensorUnit, 256 * 0.01, 1e-12);
  EXPECT_NEAR(a.vectorUnit, 16 * 0.1, 1e-12); // npu-base has no special op
  // l1: 1024 KiB * 0.001 * (1 + 1 * (2 ports - 1)) + 16 banks * 0.5.
  EXPECT_NEAR(a.levels[size_t(t.level("l1").index)], 1024 * 0.001 * 2 + 16 * 0.5, 1e-12);
  EXPECT_NEAR(a.levels[size_t(t.level("l0a").index)], 64 * 0.001 + 0.5, 1e-12);
  EXPECT_EQ(a.levels[size_t(t.dramLevel())], 0.0);
  double sum = a.tensorUnit + a.vectorUnit;
  for (double l : a.levels)
    sum += l;
  EXPECT_NEAR(a.total(), sum, 1e-12);

  // Each special-function op adds a unit per lane: what an `exp` instruction costs in area.
  Target ex =
      parseTarget(edit(baseText(), "ops: [copy, add, sub, mul, max, min, relu, clip, muladd, mac]",
                       "ops: [copy, add, sub, mul, max, min, relu, clip, muladd, mac, exp]"),
                  "x.yaml");
  EXPECT_NEAR(areaOf(ex).vectorUnit - areaOf(parseTarget(baseText(), "x.yaml")).vectorUnit,
              16 * AreaTable().vectorSpecialLaneMm2, 1e-12);
}

TEST(Costs, VectorOpEnergyClasses) {
  EnergyTable e;
  EXPECT_EQ(vecOpPj(e, VecOp::Copy), 0.0);
  EXPECT_EQ(vecOpPj(e, VecOp::Add), e.vectorAluPj);
  EXPECT_EQ(vecOpPj(e, VecOp::Mul), e.vectorMulPj);
  EXPECT_EQ(vecOpPj(e, VecOp::Mac), e.vectorMulPj + e.vectorAluPj);
  EXPECT_EQ(vecOpPj(e, VecOp::Erf), e.vectorSpecialPj);
  for (VecOp op : kAllVecOps)
    EXPECT_GE(vecOpPj(e, op), 0.0) << vecOpName(op);
}

TEST(Costs, BadFiguresNameTheField) {
  expectParseError(withSection("energy: {dram_pj_per_byte: -1}"),
                   {"bad.yaml: energy.dram_pj_per_byte: -1 is not a finite, non-negative figure"});
  expectParseError(withSection("energy: {mac_pj: {fp8: 1}}"),
                   {"energy.mac_pj.fp8: unknown dtype 'fp8'"});
  expectParseError(withSection("energy: {sram_pj: 1}"), {"energy", "sram_pj"});
  expectParseError(withSection("energy: {sram_ref_kib: 0}"),
                   {"energy.sram_ref_kib: must be positive"});
  expectParseError(withSection("area: {sram_mm2_per_kib: lots}"),
                   {"area.sram_mm2_per_kib: expected a number, found 'lots'"});
  expectParseError(edit(baseText(), "alignment: 64, ports: 2}\n  # index 2/3",
                        "alignment: 64, ports: 2, area_mm2: .nan}\n  # index 2/3"),
                   {"memory[1] (l1).area_mm2", "not a finite"});
}
