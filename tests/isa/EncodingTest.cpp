// EncodingTest.cpp - binary encoding against hand-derived bytes and an independent bit-level
// reference, random round trips for every mnemonic, range errors, decode errors, and a
// modified description (new instruction, widened field) that the encoder must follow.
#include "TestUtil.h"

#include "isa/Program.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <random>

using namespace npuc::isa;
using namespace npuc::isa::test;

namespace {

Target base() {
  return loadTarget(configPath("npu-base.yaml"));
}

/// Reference packer written without the library's helpers: places each value at the
/// consecutive position implied by the declaration order (fields follow the opcode).
std::vector<uint8_t> referenceEncode(const Target &t, const Instr &in) {
  std::vector<bool> bits(static_cast<size_t>(t.instructionBits), false);
  auto put = [&](int lsb, int width, uint64_t v) {
    for (int i = 0; i < width; ++i)
      bits[static_cast<size_t>(lsb + i)] = (v >> i) & 1;
  };
  put(t.opcodeField.lsb, t.opcodeField.width, in.desc->opcode);
  int pos = t.opcodeField.lsb + t.opcodeField.width;
  for (const Field &f : in.desc->fields) {
    put(pos, f.width, static_cast<uint64_t>(in.get(f.name)));
    pos += f.width;
  }
  std::vector<uint8_t> bytes(bits.size() / 8, 0);
  for (size_t b = 0; b < bits.size(); ++b)
    if (bits[b])
      bytes[b / 8] |= static_cast<uint8_t>(1u << (b % 8));
  return bytes;
}

Instr randomInstr(const InstrDesc &d, std::mt19937_64 &rng) {
  Instr in;
  in.desc = &d;
  for (const Field &f : d.fields) {
    std::uniform_int_distribution<int64_t> dist(f.minValue(), f.maxValue());
    // Bias towards the extremes, where off-by-one and sign bugs live.
    int pick = static_cast<int>(rng() % 4);
    in.set(f.name, pick == 0 ? f.minValue() : pick == 1 ? f.maxValue() : dist(rng));
  }
  return in;
}

std::map<std::string, int64_t> withFixed(const Instr &in) {
  std::map<std::string, int64_t> m = in.fields();
  for (const auto &[k, v] : in.desc->fixed)
    m[k] = v;
  return m;
}

} // namespace

TEST(Encoding, HandComputedBytes) {
  Target t = base();
  Program p;
  Instr fin;
  fin.desc = t.findInstr("finish");
  fin.set("pop", 3);
  fin.set("push", 0x15);
  Instr mm;
  mm.desc = t.findInstr("mm");
  mm.set("a_addr", 0x123456); // bits 24..47 -> bytes 3..5 little endian
  mm.set("accumulate", 1);    // bit 8+8+8+72+48 = 144 -> byte 18 bit 0
  p.instrs = {fin, mm};
  std::vector<uint8_t> b = encode(t, p);
  ASSERT_EQ(b.size(), 128u);
  std::vector<uint8_t> want0(64, 0);
  want0[0] = 0xff;
  want0[1] = 3;
  want0[2] = 0x15;
  EXPECT_EQ(std::vector<uint8_t>(b.begin(), b.begin() + 64), want0);
  std::vector<uint8_t> want1(64, 0);
  want1[0] = 0x10;
  want1[3] = 0x56;
  want1[4] = 0x34;
  want1[5] = 0x12;
  want1[18] = 0x01;
  EXPECT_EQ(std::vector<uint8_t>(b.begin() + 64, b.end()), want1);
}

TEST(Encoding, RandomRoundTripEveryMnemonic) {
  for (const char *file : {"npu-base.yaml", "npu-tiny.yaml"}) {
    Target t = loadTarget(configPath(file));
    std::mt19937_64 rng(42);
    Program p;
    for (int rep = 0; rep < 50; ++rep)
      for (const InstrDesc &d : t.instrs)
        p.instrs.push_back(randomInstr(d, rng));
    std::vector<uint8_t> bytes = encode(t, p);
    ASSERT_EQ(bytes.size(), p.instrs.size() * size_t(t.instructionBytes()));
    for (size_t i = 0; i < p.instrs.size(); ++i) {
      std::vector<uint8_t> ref = referenceEncode(t, p.instrs[i]);
      std::vector<uint8_t> got(bytes.begin() + i * ref.size(),
                               bytes.begin() + (i + 1) * ref.size());
      ASSERT_EQ(got, ref) << file << " instruction " << i << " " << p.instrs[i].desc->mnemonic;
    }
    Program q = decode(t, bytes);
    ASSERT_EQ(q.instrs.size(), p.instrs.size());
    for (size_t i = 0; i < p.instrs.size(); ++i) {
      EXPECT_EQ(q.instrs[i].desc, p.instrs[i].desc);
      EXPECT_EQ(q.instrs[i].fields(), withFixed(p.instrs[i])) << file << " #" << i;
      // The slot accessor the simulator reads agrees with the names, slot by slot.
      const InstrDesc &d = *q.instrs[i].desc;
      std::map<std::string, int64_t> want = withFixed(p.instrs[i]);
      int s = 0;
      for (const Field &f : d.fields)
        EXPECT_EQ(q.instrs[i].at(s++), want.at(f.name)) << file << " #" << i << " " << f.name;
      for (const auto &[name, v] : d.fixed)
        EXPECT_EQ(q.instrs[i].at(s++), v) << file << " #" << i << " " << name;
      for (s = 0; s < Instr::numSlots(d); ++s)
        EXPECT_TRUE(q.instrs[i].given(s)) << file << " #" << i << " slot " << s;
      EXPECT_TRUE(q.instrs[i].others().empty());
    }
  }
}

TEST(Encoding, SignedFieldsAreTwosComplement) {
  std::string text =
      edit(baseText(), "{name: src1_s0, width: 20}", "{name: src1_s0, width: 20, signed: true}");
  Target t = parseTarget(text, "signed.yaml");
  const Field *f = t.findInstr("vop")->field("src1_s0");
  ASSERT_TRUE(f && f->isSigned);
  EXPECT_EQ(f->minValue(), -(1 << 19));
  Instr in;
  in.desc = t.findInstr("vop");
  in.set("src1_s0", -1);
  std::vector<uint8_t> b = encode(t, Program{{in}});
  // All 20 bits of the field are set.
  int ones = 0;
  for (int i = 0; i < 20; ++i)
    ones += (b[size_t(f->lsb + i) / 8] >> ((f->lsb + i) % 8)) & 1;
  EXPECT_EQ(ones, 20);
  EXPECT_EQ(decode(t, b).instrs[0].get("src1_s0"), -1);
  in.set("src1_s0", -(1 << 19) - 1);
  EXPECT_THROW(encode(t, Program{{in}}), npuc::Error);
}

TEST(Encoding, ValueOutOfRangeNamesInstruction) {
  Target t = base();
  Instr ok;
  ok.desc = t.findInstr("finish");
  Instr bad;
  bad.desc = t.findInstr("mm");
  bad.set("m", 65536); // 16-bit field
  try {
    encode(t, Program{{ok, bad}});
    FAIL();
  } catch (const npuc::Error &e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("instruction 1 (mm)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("65536"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'m'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[0, 65535]"), std::string::npos) << msg;
  }
  bad.set("m", -1);
  EXPECT_THROW(encode(t, Program{{bad}}), npuc::Error);
}

TEST(Encoding, FixedAndUnknownFields) {
  Target t = base();
  Instr ld;
  ld.desc = t.findInstr("ld");
  ld.set("src_space", 0); // equal to the fixed value: accepted
  EXPECT_NO_THROW(encode(t, Program{{ld}}));
  ld.set("src_space", 1);
  EXPECT_THROW(encode(t, Program{{ld}}), npuc::Error);
  Instr mm;
  mm.desc = t.findInstr("mm");
  mm.set("bogus", 1);
  EXPECT_THROW(encode(t, Program{{mm}}), npuc::Error);
}

TEST(Encoding, DecodeErrors) {
  Target t = base();
  try {
    decode(t, std::vector<uint8_t>(100, 0));
    FAIL();
  } catch (const npuc::Error &e) {
    EXPECT_NE(std::string(e.what()).find("100 bytes"), std::string::npos) << e.what();
  }
  Instr fin;
  fin.desc = t.findInstr("finish");
  std::vector<uint8_t> b = encode(t, Program{{fin, fin}});
  b[64] = 0x77; // second instruction: no such opcode
  try {
    decode(t, b);
    FAIL();
  } catch (const npuc::Error &e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("byte offset 64"), std::string::npos) << msg;
    EXPECT_NE(msg.find("unknown opcode"), std::string::npos) << msg;
  }
  EXPECT_TRUE(decode(t, {}).instrs.empty());
}

TEST(Encoding, ModifiedDescriptionIsFollowed) {
  // Widen vop.n0 from 16 to 20 bits and add an fp16-only load "ldh" with elem_bytes fixed.
  std::string text = baseText();
  size_t vop = text.find("mnemonic: vop");
  std::string head = text.substr(0, vop), tail = text.substr(vop);
  tail = edit(tail, "{name: n0, width: 16}", "{name: n0, width: 20}");
  text = head + tail;
  text += "  - mnemonic: ldh\n    opcode: 0x05\n    engine: load\n    semantics: dma\n"
          "    fixed: {src_space: dram, elem_bytes: 2, n2: 1, src_s2: 0, dst_s2: 0,\n"
          "            pad0_lo: 0, pad0_hi: 0, pad1_lo: 0, pad1_hi: 0, pad2_lo: 0, pad2_hi: 0,\n"
          "            pad_value: 0}\n"
          "    fields:\n"
          "      - {name: pop, width: 8}\n      - {name: push, width: 8}\n"
          "      - {name: src_addr, width: 32}\n      - {name: dst_space, width: 3}\n"
          "      - {name: dst_addr, width: 24}\n      - {name: n0, width: 16}\n"
          "      - {name: n1, width: 16}\n      - {name: src_s0, width: 32}\n"
          "      - {name: src_s1, width: 32}\n      - {name: dst_s0, width: 20}\n"
          "      - {name: dst_s1, width: 20}\n";
  Target t = parseTarget(text, "modified.yaml");
  Target b = base();
  // n1 moved up by the 4 extra bits of n0.
  EXPECT_EQ(t.findInstr("vop")->field("n1")->lsb, b.findInstr("vop")->field("n1")->lsb + 4);
  Instr v;
  v.desc = t.findInstr("vop");
  v.set("n0", 1 << 19); // does not fit npu-base's 16-bit n0
  v.set("n1", 7);
  Instr vb = v;
  vb.desc = b.findInstr("vop");
  EXPECT_THROW(encode(b, Program{{vb}}), npuc::Error);
  Program dv = decode(t, encode(t, Program{{v}}));
  EXPECT_EQ(dv.instrs[0].get("n0"), 1 << 19);
  EXPECT_EQ(dv.instrs[0].get("n1"), 7);

  const InstrDesc *ldh = t.findInstr("ldh");
  ASSERT_TRUE(ldh);
  EXPECT_EQ(ldh->engine, 0);
  Instr l;
  l.desc = ldh;
  l.set("src_addr", 0xdeadbeef);
  l.set("n0", 64);
  l.set("n1", 3);
  std::vector<uint8_t> bytes = encode(t, Program{{l}});
  EXPECT_EQ(bytes[0], 0x05);
  Program d = decode(t, bytes);
  ASSERT_EQ(d.instrs[0].desc, ldh);
  EXPECT_EQ(d.instrs[0].get("src_addr"), 0xdeadbeef);
  EXPECT_EQ(d.instrs[0].get("elem_bytes"), 2); // fixed, filled in by decode
  EXPECT_EQ(d.instrs[0].get("n1"), 3);
  Program a = assemble(t, "ldh src_addr=0xdeadbeef n0=64 n1=3 elem_bytes=2\n", "m.s");
  EXPECT_EQ(encode(t, a), bytes);
  EXPECT_THROW(assemble(t, "ldh elem_bytes=4\n", "m.s"), npuc::Error);
  EXPECT_EQ(disassemble(t, d), "ldh src_addr=3735928559 n0=64 n1=3\n");
}
