// ValidationTest.cpp - every class of bad target description is rejected with a message naming
// the file and the field path. Each case derives a bad YAML text from the good npu-base by one
// textual edit, so the failure is attributable to exactly that edit.
#include "TestUtil.h"

#include "support/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fmt/format.h>

using namespace npuc::isa;
using namespace npuc::isa::test;

TEST(Validation, BaseTextParses) {
  EXPECT_EQ(parseTarget(baseText(), "x.yaml").name, "npu-base");
}

TEST(Validation, YamlSyntaxErrorHasLine) {
  // Line 3 opens a flow map that is never closed.
  expectParseError("name: x\nclock_ghz: 1\nopcode: {lsb: 0, width: 8\n", {"bad.yaml:", "syntax"});
  try {
    parseTarget("name: x\nfoo: [1, 2\nbar: 3\n", "bad.yaml");
    FAIL();
  } catch (const npuc::Error &e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("YAML syntax error"), std::string::npos) << e.what();
  }
}

TEST(Validation, NotAMap) {
  expectParseError("- 1\n- 2\n", {"bad.yaml", "must be a YAML map"});
}

TEST(Validation, MissingRequiredField) {
  expectParseError(edit(baseText(), "  rows: 16 ", "  #rows "),
                   {"bad.yaml: tensor_unit.rows: missing required field"});
  expectParseError(edit(baseText(), "clock_ghz: 1.0", "#"), {"clock_ghz: missing required field"});
  expectParseError(edit(baseText(), "    engine: tensor\n", ""),
                   {"instructions[3] (mm).engine: missing required field"});
}

TEST(Validation, IllTypedFields) {
  expectParseError(edit(baseText(), "rows: 16 ", "rows: sixteen "),
                   {"bad.yaml: tensor_unit.rows: expected an integer, found 'sixteen'"});
  expectParseError(edit(baseText(), "clock_ghz: 1.0", "clock_ghz: fast"),
                   {"clock_ghz: expected a number, found 'fast'"});
  expectParseError(edit(baseText(), "{name: accumulate, width: 1}",
                        "{name: accumulate, width: 1, signed: maybe}"),
                   {"instructions[3] (mm).fields.accumulate.signed: expected true or false"});
  expectParseError(edit(baseText(), "{name: k, width: 16}", "{name: k, width: [16]}"),
                   {"instructions[3] (mm).fields.k.width: expected a scalar value"});
  expectParseError(edit(baseText(), "ops: [copy, add, sub, mul, max, min, relu, clip, muladd, mac]",
                        "ops: copy"),
                   {"vector_unit.ops: expected a sequence"});
  expectParseError(edit(baseText(), "latency: 100 ", "latency: 1e99999 "),
                   {"dram.latency: expected an integer"});
}

TEST(Validation, VectorOpLatency) {
  const std::string ops = "ops: [copy, add, sub, mul, max, min, relu, clip, muladd, mac]";
  Target t = parseTarget(edit(baseText(), ops, ops + "\n  op_latency: {mul: 3, exp: 9}"), "x.yaml");
  EXPECT_EQ(t.vector.latencyOf(VecOp::Mul), 3);
  EXPECT_EQ(t.vector.latencyOf(VecOp::Add), 0);
  // An op the unit lacks may carry a latency (a sweep may add it: explore's optional ops).
  EXPECT_EQ(t.vector.latencyOf(VecOp::Exp), 9);
  expectParseError(edit(baseText(), ops, ops + "\n  op_latency: {expp: 3}"),
                   {"bad.yaml: vector_unit.op_latency.expp: unknown vector op 'expp'"});
  expectParseError(edit(baseText(), ops, ops + "\n  op_latency: {mul: -1}"),
                   {"bad.yaml: vector_unit.op_latency.mul:"});
  expectParseError(edit(baseText(), ops, ops + "\n  op_latency: [mul]"),
                   {"bad.yaml: vector_unit.op_latency:"});
}

TEST(Validation, UnknownKey) {
  expectParseError(edit(baseText(), "  cols: 16 ", "  colz: 16 "),
                   {"tensor_unit.colz: unknown key"});
}

TEST(Validation, MissingPrimitiveField) {
  expectParseError(edit(baseText(), "      - {name: k, width: 16}\n", ""),
                   {"bad.yaml: instructions[3] (mm).fields.k: missing", "matmul"});
  expectParseError(edit(baseText(), "    fixed: {src_space: dram}\n", ""),
                   {"instructions[0] (ld).fields.src_space: missing"});
}

TEST(Validation, UnknownFieldForSemantics) {
  expectParseError(edit(baseText(), "{name: k, width: 16}", "{name: kk, width: 16}"),
                   {"instructions[3] (mm).fields.kk: unknown field 'kk' for matmul"});
}

TEST(Validation, DuplicateAndOverlappingOpcodes) {
  expectParseError(edit(baseText(), "opcode: 0x02", "opcode: 0x01"),
                   {"instructions[1] (mov).opcode: opcode 1 is already used by 'ld'"});
  expectParseError(edit(baseText(), "opcode: 0x02", "opcode: 0x100"),
                   {"instructions[1] (mov).opcode: opcode 256 does not fit the 8-bit opcode"});
}

TEST(Validation, FieldLayout) {
  // An explicit lsb inside another field.
  expectParseError(edit(baseText(), "{name: n, width: 16}", "{name: n, width: 16, lsb: 30}"),
                   {"instructions[3] (mm).fields.n: bits [30, 46) overlap field 'a_addr'"});
  expectParseError(
      edit(baseText(), "{name: accumulate, width: 1}", "{name: accumulate, width: 1, lsb: 3}"),
      {"fields.accumulate: bits [3, 4) overlap the opcode"});
  // Past the end of the word: vop needs 409 bits.
  expectParseError(edit(baseText(), "instruction_bits: 512", "instruction_bits: 384"),
                   {"instructions[4] (vop).fields.", "exceed instruction_bits 384"});
  expectParseError(edit(baseText(), "{name: k, width: 16}", "{name: k, width: 65}"),
                   {"fields.k.width: value 65 is out of range [1, 64]"});
  expectParseError(edit(baseText(), "instruction_bits: 512", "instruction_bits: 500"),
                   {"instruction_bits: 500 is not a multiple of 8"});
  expectParseError(edit(baseText(), "opcode: {lsb: 0, width: 8}", "opcode: {lsb: 510, width: 8}"),
                   {"opcode: bits [510, 518) exceed instruction_bits 512"});
}

TEST(Validation, MemoryLevels) {
  expectParseError(edit(baseText(), "size: 1 MiB, banks: 16", "size: 1 MiB, banks: 12"),
                   {"memory[1] (l1).size: size 1048576 is not a multiple of banks*bank_width"});
  expectParseError(edit(baseText(), "size: 128 KiB, banks: 4, bank_width: 64, alignment: 64",
                        "size: 128 KiB, banks: 4, bank_width: 64, alignment: 48"),
                   {"memory[4] (acc).alignment: alignment 48 is not a power of two"});
  expectParseError(edit(baseText(), "{name: l0b, kind: sram", "{name: l0a, kind: sram"),
                   {"memory[3] (l0a).name: duplicate memory level name 'l0a'"});
  expectParseError(edit(baseText(), "{name: l1, kind: sram", "{name: l1, kind: flash"),
                   {"memory[1] (l1).kind: unknown kind 'flash'"});
  expectParseError(edit(baseText(), "{name: l1, kind: sram", "{name: l1, kind: dram"),
                   {"memory: exactly one level must have kind dram, found 2"});
}

TEST(Validation, UnknownNames) {
  expectParseError(edit(baseText(), "engine: feed", "engine: feeder"),
                   {"instructions[1] (mov).engine: unknown engine 'feeder'"});
  expectParseError(edit(baseText(), "fixed: {src_space: dram}", "fixed: {src_space: dram2}"),
                   {"instructions[0] (ld).fixed.src_space: unknown memory level 'dram2'"});
  expectParseError(edit(baseText(), "a_level: l0a", "a_level: l0c"),
                   {"tensor_unit.a_level: unknown memory level 'l0c'"});
  expectParseError(edit(baseText(), "acc_level: acc", "acc_level: dram"),
                   {"tensor_unit.acc_level: level 'dram' is the dram"});
  expectParseError(edit(baseText(), "levels: [l1, acc]", "levels: [l1, l3]"),
                   {"vector_unit.levels[1]: unknown memory level 'l3'"});
  expectParseError(edit(baseText(), "semantics: matmul", "semantics: conv"),
                   {"instructions[3] (mm).semantics: unknown semantics 'conv'"});
}

TEST(Validation, Units) {
  expectParseError(
      edit(baseText(), "ops: [copy, add, sub, mul, max, min, relu, clip, muladd, mac]", "ops: []"),
      {"vector_unit.ops: the vector op list is empty"});
  expectParseError(edit(baseText(), "ops: [copy, add,", "ops: [copy, copy,"),
                   {"vector_unit.ops[1]: duplicate vector op 'copy'"});
  // Op names are the ones isa/VectorOps.def defines (docs/ISA.md's table); any other is a typo or
  // an op no part of npuc implements, so the target is refused where it names it.
  expectParseError(edit(baseText(), "ops: [copy, add,", "ops: [copy, fma,"),
                   {"bad.yaml: vector_unit.ops[1]: unknown vector op 'fma' (known: copy, add, sub, "
                    "mul, max, min, relu, clip, muladd, exp, tanh, sigmoid, div, sqrt, mac, erf)"});
  expectParseError(edit(baseText(), "ops: [copy, add,", "ops: [copy, Add,"),
                   {"bad.yaml: vector_unit.ops[1]: unknown vector op 'Add'"});
  // A vop whose op is fixed by name: the name must be one of the target's ops.
  auto fixedOp = [](const std::string &op) {
    std::string y = edit(baseText(), "      - {name: op, width: 6}\n", "");
    return edit(y, "    semantics: vector\n",
                "    semantics: vector\n    fixed: {op: " + op + "}\n");
  };
  EXPECT_EQ(parseTarget(fixedOp("relu"), "x.yaml").findInstr("vop")->fixed.at("op"), 6);
  expectParseError(fixedOp("exp"), {"(vop).fixed.op: 'exp' is not in vector_unit.ops"});
  expectParseError(fixedOp("fma"), {"(vop).fixed.op: 'fma' is not in vector_unit.ops"});
  expectParseError(edit(baseText(), "acc_dtype: fp32", "acc_dtype: bf16"),
                   {"tensor_unit.acc_dtype: unknown dtype 'bf16'"});
  expectParseError(edit(baseText(), "acc_dtype: fp32", "acc_dtype: int8"),
                   {"tensor_unit.acc_dtype: operand_dtype fp16 needs acc_dtype fp32"});
  expectParseError(edit(baseText(), "max_dims: 3", "max_dims: 4"),
                   {"vector_unit.max_dims: value 4 is out of range [1, 3]"});
}

TEST(Validation, DuplicateNames) {
  expectParseError(
      edit(baseText(), "{name: vector, queue_depth: 16}", "{name: tensor, queue_depth: 16}"),
      {"engines[3] (tensor).name: duplicate engine name 'tensor'"});
  expectParseError(edit(baseText(), "mnemonic: st ", "mnemonic: ld "),
                   {"instructions[2] (ld).mnemonic: duplicate mnemonic 'ld'"});
  expectParseError(edit(baseText(), "{name: n, width: 16}", "{name: k, width: 16}"),
                   {"instructions[3] (mm).fields.k: duplicate field 'k'"});
}

TEST(Validation, TokensAndFixedFields) {
  // pop must have one bit per engine (5 engines).
  std::string text =
      edit(baseText(),
           "  - mnemonic: finish          # end of program once every engine has "
           "drained\n    opcode: 0xff\n    engine: vector\n    semantics: finish\n"
           "    timing: {latency: 1, per_element: 0}\n    fields:\n"
           "      - {name: pop, width: 8}",
           "  - mnemonic: finish\n    opcode: 0xff\n    engine: vector\n    semantics: finish\n"
           "    fields:\n      - {name: pop, width: 4}");
  expectParseError(text, {"instructions[5] (finish).fields.pop: pop needs an unsigned bit per "
                          "engine: width 4 < 5 engines"});
  expectParseError(
      edit(baseText(), "fixed: {dst_space: dram}", "fixed: {dst_space: dram, push: 0}"),
      {"instructions[2] (st).fixed.push: pop and push", "must be encoded"});
  expectParseError(
      edit(baseText(), "fixed: {dst_space: dram}", "fixed: {dst_space: dram, n0: 4}"),
      {"instructions[2] (st).fixed.n0: field 'n0' is both encoded in fields and fixed"});
  expectParseError(edit(baseText(), "fixed: {dst_space: dram}", "fixed: {dst_space: 9}"),
                   {"fixed.dst_space: 9 is not a memory level index"});
  // A DMA on an engine without a transfer rate.
  expectParseError(edit(baseText(), "engine: feed", "engine: tensor"),
                   {"instructions[1] (mov).engine: engine 'tensor' runs a dma instruction"});
}

namespace {
// 1-based line of the single occurrence of `needle` in `text`.
int lineOf(const std::string &text, const std::string &needle) {
  size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  EXPECT_EQ(text.find(needle, at + 1), std::string::npos) << needle << " is not unique";
  return 1 + int(std::count(text.begin(), text.begin() + long(at), '\n'));
}
} // namespace

TEST(Validation, DuplicateKeysAreRejectedWithTheirPosition) {
  // Deleting `- mnemonic: vop` used to merge vop's keys into mm's map, the later copy of each
  // key silently ignored (issue 18); the second `opcode:` is the first duplicate met.
  const std::string merged = edit(baseText(), "  - mnemonic: vop ", "  # ");
  const int mmOpcode = lineOf(merged, "opcode: 0x10");
  const int vopOpcode = lineOf(merged, "opcode: 0x20");
  expectParseError(merged, {fmt::format("bad.yaml:{}:5: duplicate key 'opcode' (first at line {})",
                                        vopOpcode, mmOpcode)
                                .c_str()});
  // A duplicate inside a flow map, and at the top level.
  std::string flow = edit(baseText(), "{name: k, width: 16}", "{name: k, width: 16, width: 8}");
  const int kLine = lineOf(flow, "{name: k, width: 16, width: 8}");
  expectParseError(flow, {fmt::format("bad.yaml:{}:", kLine).c_str(), "duplicate key 'width'"});
  expectParseError(baseText() + "\nname: again\n", {"duplicate key 'name' (first at line"});
}

TEST(Validation, LevelLargerThanItsAddressFieldsIsRejected) {
  // npu-base's on-chip address fields are 24 bits: 16 MiB is the largest L1 they address.
  EXPECT_NO_THROW(parseTarget(edit(baseText(), "size: 1 MiB, banks: 16", "size: 16 MiB, banks: 16"),
                              "ok.yaml"));
  expectParseError(edit(baseText(), "size: 1 MiB, banks: 16", "size: 1 GiB, banks: 16"),
                   {"bad.yaml: memory[1] (l1).size: 1073741824 bytes, but instructions[",
                    "dst_addr (24 bits) addresses at most 16777216 bytes"});
  // The dram may exceed its address fields: a tensor out of reach is an encoding Reject at compile
  // time (tests/e2e/RetryTest.cpp), and only the image a program uses is held.
  EXPECT_NO_THROW(
      parseTarget(edit(baseText(), "size: 1 GiB, banks: 1,", "size: 8 GiB, banks: 1,"), "ok.yaml"));
  // Wider fields do not lift the model's own limit of 256 MiB per on-chip level.
  std::string wide = baseText();
  for (size_t at = 0; (at = wide.find("_addr, width: 24}", at)) != std::string::npos;)
    wide.replace(at, 17, "_addr, width: 32}");
  EXPECT_NO_THROW(
      parseTarget(edit(wide, "size: 1 MiB, banks: 16", "size: 256 MiB, banks: 16"), "ok.yaml"));
  expectParseError(edit(wide, "size: 1 MiB, banks: 16", "size: 512 MiB, banks: 16"),
                   {"bad.yaml: memory[1] (l1).size: 536870912 bytes exceeds 268435456 bytes, the "
                    "largest on-chip level npuc models"});
  expectParseError(edit(baseText(), "{name: c_addr, width: 24}", "{name: c_addr, width: 16}"),
                   {"memory[4] (acc).size: 131072 bytes, but instructions[3] (mm).fields.c_addr "
                    "(16 bits) addresses at most 65536 bytes"});
}
