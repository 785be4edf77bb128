// InstrTest.cpp - isa::Instr's storage: values by description slot (encoded fields, then fixed
// fields in name order) with presence, names the description lacks kept by name, and the sorted
// name view fields() that tools and tests compare. The simulator reads the slots; these cases pin
// that the slots and the names always say the same thing.
#include "isa/Program.h"

#include <gtest/gtest.h>

using namespace npuc::isa;

namespace {

Field field(const std::string &name, int width = 16) {
  Field f;
  f.name = name;
  f.width = width;
  return f;
}

std::string wideName(int i) {
  std::string s(1, 'f');
  s += std::to_string(i);
  return s;
}

/// Encoded a, b, c; fixed x = 5, b = 9 (b both encoded and fixed, as hand-built targets allow).
InstrDesc desc() {
  InstrDesc d;
  d.mnemonic = "op";
  d.fields = {field("a"), field("b"), field("c")};
  d.fixed = {{"x", 5}, {"b", 9}};
  return d;
}

} // namespace

TEST(IsaInstr, SlotsAreEncodedFieldsThenFixedFieldsByName) {
  InstrDesc d = desc();
  EXPECT_EQ(Instr::numSlots(d), 5);
  EXPECT_EQ(Instr::slotOf(d, "a"), 0);
  EXPECT_EQ(Instr::slotOf(d, "c"), 2);
  EXPECT_EQ(Instr::slotOf(d, "b"), 1); // the encoded slot wins over the fixed one
  EXPECT_EQ(Instr::slotOf(d, "x"), 4); // fixed in name order: b (3), x (4)
  EXPECT_EQ(Instr::slotOf(d, "y"), -1);
  EXPECT_EQ(Instr::slotOf(d, ""), -1);
}

TEST(IsaInstr, NamesAndSlotsAgreeAndPresenceIsKept) {
  InstrDesc d = desc();
  Instr in;
  in.desc = &d;
  EXPECT_EQ(in.layout(), nullptr);
  EXPECT_EQ(in.get("a"), 0);
  EXPECT_FALSE(in.find("a"));
  in.set("c", -7);
  in.set("x", 5);
  in.set("zz", 3); // not a field of d
  EXPECT_EQ(in.layout(), &d);
  EXPECT_TRUE(in.given(2));
  EXPECT_EQ(in.at(2), -7);
  EXPECT_TRUE(in.given(4));
  EXPECT_FALSE(in.given(0));
  EXPECT_FALSE(in.given(1));
  EXPECT_EQ(in.at(0), 0);
  EXPECT_EQ(in.get("zz"), 3);
  EXPECT_EQ(in.others(), (std::map<std::string, int64_t>{{"zz", 3}}));
  EXPECT_EQ(in.fields(), (std::map<std::string, int64_t>{{"c", -7}, {"x", 5}, {"zz", 3}}));
  in.setAt(Instr::slotOf(d, "a"), 11);
  EXPECT_EQ(in.get("a"), 11);
  EXPECT_EQ(*in.find("a"), 11);
  in.erase("c");
  in.erase("zz");
  EXPECT_FALSE(in.given(2));
  EXPECT_FALSE(in.find("c"));
  EXPECT_EQ(in.fields(), (std::map<std::string, int64_t>{{"a", 11}, {"x", 5}}));
  // A copy keeps everything (programs are copied between compiler passes).
  Instr copy = in;
  EXPECT_EQ(copy.fields(), in.fields());
  EXPECT_EQ(copy.at(0), 11);
}

TEST(IsaInstr, FieldsGivenBeforeTheDescriptionMoveIntoTheirSlots) {
  InstrDesc d = desc();
  Instr in;
  in.set("a", 1); // no description yet: kept by name
  in.set("q", 2);
  EXPECT_EQ(in.others().size(), 2u);
  in.desc = &d;
  EXPECT_EQ(in.get("a"), 1);
  in.set("c", 3); // lays the slots out; "a" moves into slot 0
  EXPECT_TRUE(in.given(0));
  EXPECT_EQ(in.at(0), 1);
  EXPECT_EQ(in.others(), (std::map<std::string, int64_t>{{"q", 2}}));
  EXPECT_EQ(in.fields(), (std::map<std::string, int64_t>{{"a", 1}, {"c", 3}, {"q", 2}}));
}

TEST(IsaInstr, SlotsPastTheFlatOnesAreKeptByName) {
  InstrDesc d;
  d.mnemonic = "wide";
  for (int i = 0; i < Instr::kFlatSlots + 3; ++i)
    d.fields.push_back(field(wideName(i)));
  Instr in;
  in.desc = &d;
  const std::string last = wideName(Instr::kFlatSlots + 2);
  in.set(last, 42);
  in.setAt(Instr::kFlatSlots, 43);
  in.set("f0", 1);
  EXPECT_EQ(in.get(last), 42);
  EXPECT_EQ(in.get(wideName(Instr::kFlatSlots)), 43);
  EXPECT_FALSE(in.given(Instr::kFlatSlots));
  EXPECT_EQ(in.others().size(), 2u);
  EXPECT_EQ(in.fields().size(), 3u);
  EXPECT_EQ(in.at(0), 1);
}

TEST(IsaInstr, TheDescriptionIsNotChangedOnceAFieldIsGiven) {
  InstrDesc d = desc(), e = desc();
  Instr in;
  in.desc = &d;
  in.set("a", 1);
  in.desc = &e;
  EXPECT_DEATH(in.set("a", 2), "description is not changed once a field is given");
}
