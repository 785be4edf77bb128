// AssemblyTest.cpp - assembly text: a hand-written program assembles to the intended field
// values, disassembly round-trips (text -> program -> text and program -> text -> program),
// and malformed lines are reported with origin, line number and the offending token.
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

void expectAsmError(const Target &t, const std::string &text,
                    std::initializer_list<const char *> needles) {
  try {
    assemble(t, text, "prog.s");
    ADD_FAILURE() << "expected an error for: " << text;
  } catch (const npuc::Error &e) {
    std::string msg = e.what();
    for (const char *n : needles)
      EXPECT_NE(msg.find(n), std::string::npos) << "message: " << msg << "\nmissing: " << n;
  }
}

} // namespace

TEST(Assembly, HandWrittenProgram) {
  Target t = base();
  std::string text = "# load a 64-element fp16 row into L1\n"
                     "ld push=0x2 src_addr=0x1000 dst_space=l1 dst_addr=128 elem_bytes=2 n0=64 "
                     "n1=1 n2=1\n"
                     "\n"
                     "vop op=relu dst_space=1 src1_space=acc src1_dtype=fp32 n0=16 imm0=0x3f800000 "
                     "  # trailing comment\n"
                     "finish pop=31\n";
  Program p = assemble(t, text, "prog.s");
  ASSERT_EQ(p.instrs.size(), 3u);
  const Instr &ld = p.instrs[0];
  EXPECT_EQ(ld.desc, t.findInstr("ld"));
  EXPECT_EQ(ld.get("push"), 2);
  EXPECT_EQ(ld.get("src_addr"), 4096);
  EXPECT_EQ(ld.get("dst_space"), 1);
  EXPECT_EQ(ld.get("dst_addr"), 128);
  EXPECT_EQ(ld.get("src_space"), 0); // fixed
  EXPECT_EQ(ld.fields().count("src_space"), 1u);
  EXPECT_EQ(ld.get("pad_value"), 0); // omitted -> 0
  const Instr &v = p.instrs[1];
  EXPECT_EQ(v.get("op"), 6); // relu is ops[6]
  EXPECT_EQ(v.get("src1_space"), 4);
  EXPECT_EQ(v.get("src1_dtype"), 1);
  EXPECT_EQ(v.get("imm0"), 0x3f800000);
  EXPECT_EQ(p.instrs[2].get("pop"), 31);

  std::string dis = disassemble(t, p);
  EXPECT_EQ(dis, "ld push=feed src_addr=4096 dst_space=l1 dst_addr=128 elem_bytes=2 n0=64 n1=1 "
                 "n2=1\n"
                 "vop op=relu dst_space=l1 src1_space=acc src1_dtype=fp32 n0=16 "
                 "imm0=0x3f800000\n"
                 "finish pop=load|feed|tensor|vector|store\n");
  EXPECT_EQ(disassemble(t, assemble(t, dis, "dis.s")), dis);
}

TEST(Assembly, RandomProgramsRoundTrip) {
  for (const char *file : {"npu-base.yaml", "npu-tiny.yaml"}) {
    Target t = loadTarget(configPath(file));
    std::mt19937_64 rng(7);
    Program p;
    for (int rep = 0; rep < 30; ++rep)
      for (const InstrDesc &d : t.instrs) {
        Instr in;
        in.desc = &d;
        for (const Field &f : d.fields) {
          // Half the fields zero, so the zero-omission path is exercised.
          std::uniform_int_distribution<int64_t> dist(f.minValue(), f.maxValue());
          in.set(f.name, rng() % 2 ? 0 : dist(rng));
        }
        p.instrs.push_back(in);
      }
    std::vector<uint8_t> bytes = encode(t, p);
    Program q = assemble(t, disassemble(t, p), "rt.s");
    EXPECT_EQ(encode(t, q), bytes) << file;
    Program dec = decode(t, bytes);
    ASSERT_EQ(q.instrs.size(), dec.instrs.size());
    for (size_t i = 0; i < q.instrs.size(); ++i)
      EXPECT_EQ(q.instrs[i].fields(), dec.instrs[i].fields()) << file << " #" << i;
  }
}

// `mac` assembles by name to its position in npu-base's op list (appended last, so 9), and
// text -> program -> bytes -> program -> text round-trips with the name.
TEST(Assembly, MacOpRoundTrips) {
  Target t = base();
  std::string text = "vop op=mac dst_space=acc dst_addr=256 dst_dtype=fp32 src1_space=l1 "
                     "src1_addr=64 src2_space=l1 src2_addr=4096 src2_dtype=fp32 n0=32 n1=7 n2=3 "
                     "dst_s0=1 dst_s1=32 dst_s2=224 src1_s0=1 src1_s1=64 src1_s2=960 src2_s0=1\n";
  Program p = assemble(t, text, "mac.s");
  ASSERT_EQ(p.instrs.size(), 1u);
  EXPECT_EQ(p.instrs[0].get("op"), 9);
  EXPECT_EQ(p.instrs[0].get("src1_s2"), 960);
  std::string dis = disassemble(t, p);
  EXPECT_NE(dis.find("vop op=mac dst_space=acc dst_addr=256"), std::string::npos) << dis;
  Program dec = decode(t, encode(t, p));
  EXPECT_EQ(dec.instrs.at(0).fields(), p.instrs[0].fields());
  EXPECT_EQ(disassemble(t, dec), dis);
  // A target without an op (npu-base has no exp) rejects its name.
  expectAsmError(t, "vop op=exp\n", {"bad value 'exp' for field 'op'"});
}

TEST(Assembly, Errors) {
  Target t = base();
  expectAsmError(t, "finish\nld foo=1\n", {"prog.s:2: unknown field 'foo' for 'ld'"});
  expectAsmError(t, "jmp x=1\n", {"prog.s:1: unknown mnemonic 'jmp'"});
  expectAsmError(t, "ld src_space=1\n", {"prog.s:1: field 'src_space' of 'ld' is fixed to 0"});
  expectAsmError(t, "\n\nmm m=65536\n",
                 {"prog.s:3: value 65536 does not fit field 'm' of 'mm'", "[0, 65535]"});
  expectAsmError(t, "mm m=12x\n", {"prog.s:1: bad value '12x' for field 'm'"});
  expectAsmError(t, "mm m\n", {"prog.s:1: expected field=value, found 'm'"});
  expectAsmError(t, "mm m=1 m=2\n", {"prog.s:1: field 'm' given twice"});
  expectAsmError(t, "vop op=exp\n", {"bad value 'exp' for field 'op'"});
  expectAsmError(t, "vop dst_space=l9\n", {"bad value 'l9'"});
  // Fixed fields may be restated with their value, by number or by name.
  EXPECT_NO_THROW(assemble(t, "ld src_space=dram\nst dst_space=0\n", "prog.s"));
}

TEST(Assembly, LabelsRegionsAndTokenNames) {
  Target t = base();
  std::string text = ".region weights l1 0x1000 4096 fp16 32x64   # 32x64 fp16 = 4096 bytes\n"
                     ".region in dram 0x200 128\n"
                     "start:\n"
                     "  ld push=feed|tensor src_addr=in+64 dst_space=l1 dst_addr=weights+64 "
                     "elem_bytes=2 n0=4\n"
                     "mid: again: mov pop=load push=0x4|vector src_space=l1 src_addr=weights "
                     "dst_space=l0a dst_addr=weights-0x1000\n"
                     "end:\n";
  AsmSymbols sym;
  Program p = assemble(t, text, "prog.s", &sym);
  ASSERT_EQ(p.instrs.size(), 2u);
  EXPECT_EQ(p.instrs[0].get("src_addr"), 0x200 + 64);
  EXPECT_EQ(p.instrs[0].get("dst_addr"), 0x1000 + 64);
  EXPECT_EQ(p.instrs[0].get("push"), (1 << 1) | (1 << 2)); // feed is engine 1, tensor 2
  EXPECT_EQ(p.instrs[1].get("pop"), 1);
  EXPECT_EQ(p.instrs[1].get("push"), 4 | 8);
  EXPECT_EQ(p.instrs[1].get("src_addr"), 0x1000);
  EXPECT_EQ(p.instrs[1].get("dst_addr"), 0);
  std::map<std::string, int64_t> labels = {{"start", 0}, {"mid", 1}, {"again", 1}, {"end", 2}};
  EXPECT_EQ(sym.labels, labels);
  ASSERT_EQ(sym.regions.size(), 2u);
  EXPECT_EQ(sym.regions[0].name, "weights");
  EXPECT_EQ(sym.regions[0].level, 1);
  EXPECT_EQ(sym.regions[0].dtype, "fp16");
  EXPECT_EQ(sym.regions[0].shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(sym.regions[1].dtype, "u8");
  // Disassembly names the engines; it carries no regions or labels but the same bytes.
  std::string dis = disassemble(t, p);
  EXPECT_NE(dis.find("ld push=feed|tensor src_addr=576"), std::string::npos) << dis;
  EXPECT_EQ(encode(t, assemble(t, dis, "dis.s")), encode(t, p));

  expectAsmError(t, "a:\na:\n", {"prog.s:2: label 'a' defined twice"});
  expectAsmError(t, "1x: finish\n", {"prog.s:1: bad label '1x'"});
  expectAsmError(t, ".region r l7 0 64\n", {"prog.s:1: region 'r': unknown memory level 'l7'"});
  expectAsmError(t, ".region r l1 0xffff0 0x100\n",
                 {"prog.s:1: region 'r' [0xffff0, 0x1000f0) lies outside level 'l1'"});
  expectAsmError(t, ".region r l1 0 64\n.region r l1 64 64\n",
                 {"prog.s:2: region 'r' defined twice"});
  expectAsmError(t, ".region r l1 0 64 fp32 4x5\n",
                 {"prog.s:1: region 'r': 64 bytes is not 20 fp32 elements"});
  expectAsmError(t, ".region r l1 0 64 bf16\n", {"unknown dtype 'bf16'"});
  expectAsmError(t, ".org 5\n", {"prog.s:1: unknown directive '.org'"});
  expectAsmError(t, "ld dst_addr=nowhere+4\n", {"prog.s:1: bad value 'nowhere+4'"});
  expectAsmError(t, "ld push=load|dsp\n", {"prog.s:1: bad value 'load|dsp' for field 'push'"});
}
