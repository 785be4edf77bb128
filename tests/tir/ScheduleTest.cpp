// ScheduleTest.cpp - the schedule primitives (tir/Schedule.h): the loop structure each one
// produces (checked on printed text written by hand from the primitive's definition), that the
// result computes the same buffers as the input in the interpreter, and the legality errors.
#include "DiffUtil.h"

#include "support/Error.h"
#include "tir/Schedule.h"

#include <gtest/gtest.h>

using namespace npuc;
using namespace npuc::tir;
namespace sch = npuc::tir::schedule;

namespace {

PrimFunc parse(const std::string &text) {
  return parseFunc(text, {"schedule-test", 1});
}

// Body text without the function header, for compact expectations.
std::string bodyText(const PrimFunc &f) {
  std::string t = toText(f);
  t = t.substr(t.find('\n') + 1);
  return t.substr(0, t.rfind('}'));
}

void expectError(const std::function<void()> &fn, const std::string &msg) {
  try {
    fn();
    ADD_FAILURE() << "expected error: " << msg;
  } catch (const npuc::Error &e) {
    EXPECT_NE(std::string(e.what()).find(msg), std::string::npos) << e.what();
  }
}

const char *kAdd = R"(func add(A: float32[6, 10] @global, B: float32[6, 10] @global) {
  for (i, 0, 6) {
    for (j, 0, 10) {
      B[i * 10 + j] = A[i * 10 + j] + 1.0f
    }
  }
})";

TEST(Schedule, SplitDividesAndGuardsTheRemainder) {
  PrimFunc f = parse(kAdd);
  PrimFunc s = sch::split(f, "j", 5);
  EXPECT_EQ(bodyText(s),
            "  for (i, 0, 6) {\n"
            "    for (j_o, 0, 2) {\n"
            "      for (j_i, 0, 5) {\n"
            "        B[i * 10 + (j_o * 5 + j_i)] = A[i * 10 + (j_o * 5 + j_i)] + 1.0f\n"
            "      }\n    }\n  }\n");
  test::expectSameResults(f, s, "split by 5");
  PrimFunc r = sch::split(f, "j", 4); // 10 = 4 + 4 + 2: the last outer iteration is guarded
  EXPECT_NE(toText(r).find("for (j_o, 0, 3)"), std::string::npos) << toText(r);
  EXPECT_NE(toText(r).find("if (j_o * 4 + j_i < 10)"), std::string::npos) << toText(r);
  test::expectSameResults(f, r, "split by 4");
  expectError([&] { sch::split(f, "j", 0); }, "split: factor must be positive, not 0");
  expectError([&] { sch::split(f, "k", 2); }, "split: function 'add' has no loop 'k'");
}

TEST(Schedule, SplitTurnsDivisionIntoTheNewLoops) {
  PrimFunc f = parse(R"(func up(A: float32[3] @global, B: float32[6] @global) {
  for (i, 0, 6) {
    B[i] = A[floordiv(i, 2)] + float32(floormod(i, 2))
  }
})");
  PrimFunc s = sch::split(f, "i", 2);
  EXPECT_EQ(bodyText(s), "  for (i_o, 0, 3) {\n    for (i_i, 0, 2) {\n"
                         "      B[i_o * 2 + i_i] = A[i_o] + float32(i_i)\n    }\n  }\n");
  test::expectSameResults(f, s, "split by the divisor");
}

TEST(Schedule, TileFuseReorder) {
  PrimFunc f = parse(kAdd);
  PrimFunc t = sch::tile(f, "i", "j", 3, 5);
  EXPECT_NE(toText(t).find("for (i_o, 0, 2) {\n    for (j_o, 0, 2) {\n      for (i_i, 0, 3) {\n"
                           "        for (j_i, 0, 5) {"),
            std::string::npos)
      << toText(t);
  test::expectSameResults(f, t, "tile");
  PrimFunc fu = sch::fuse(f, "i", "j");
  EXPECT_EQ(bodyText(fu), "  for (i_j, 0, 60) {\n"
                          "    B[floordiv(i_j, 10) * 10 + floormod(i_j, 10)] = "
                          "A[floordiv(i_j, 10) * 10 + floormod(i_j, 10)] + 1.0f\n  }\n");
  test::expectSameResults(f, fu, "fuse");
  PrimFunc r = sch::reorder(f, {"j", "i"});
  EXPECT_EQ(bodyText(r), "  for (j, 0, 10) {\n    for (i, 0, 6) {\n"
                         "      B[i * 10 + j] = A[i * 10 + j] + 1.0f\n    }\n  }\n");
  test::expectSameResults(f, r, "reorder");
  expectError([&] { sch::fuse(f, "j", "i"); }, "fuse: loop 'i' is not the whole body of loop 'j'");
}

// Extents computed by fuse and split never overflow: an extent product past int64 is an error,
// and a loop that never runs makes its fused pair never run (-2 x -3 iterations fused to 6).
TEST(Schedule, FuseAndSplitExtentsDoNotOverflow) {
  PrimFunc big = parse(R"(func big(A: float32[4] @global) {
  for (i, 0, 4294967296) {
    for (j, 0, 4294967296) {
      A[0] = 1.0f
    }
  }
})");
  expectError([&] { sch::fuse(big, "i", "j"); },
              "fuse: the fused extent of 'i' (4294967296) and 'j' (4294967296) does not fit in "
              "int64");
  PrimFunc neg = parse(R"(func neg(A: float32[4] @global) {
  for (i, 0, -2) {
    for (j, 0, -3) {
      A[0] = 1.0f
    }
  }
})");
  EXPECT_EQ(bodyText(sch::fuse(neg, "i", "j")), "  for (i_j, 0, 0) {\n    A[0] = 1.0f\n  }\n");
  // ceil((2^62 + 1) / 2^62) = 2 outer iterations; (extent + factor - 1) / factor overflowed.
  PrimFunc wide = parse(R"(func wide(A: float32[4] @global) {
  for (i, 0, 4611686018427387905) {
    A[0] = 1.0f
  }
})");
  EXPECT_NE(bodyText(sch::split(wide, "i", 4611686018427387904)).find("for (i_o, 0, 2) {"),
            std::string::npos);
  // The guarded index outer * factor + inner would reach 2^63 + 2^62 - 2.
  PrimFunc huge = parse(R"(func huge(A: float32[4] @global) {
  for (i, 0, 9223372036854775807) {
    A[0] = 1.0f
  }
})");
  expectError([&] { sch::split(huge, "i", 4611686018427387904); },
              "split: loop 'i' of extent 9223372036854775807 split by 4611686018427387904 would "
              "compute indices past int64");
}

TEST(Schedule, ReorderRefusesDependencesAndReductionOrder) {
  PrimFunc scan = parse(R"(func scan(A: float32[4, 4] @global) {
  for (i, 0, 4) {
    for (j, 1, 3) {
      A[i * 4 + j] = A[i * 4 + j - 1] + A[i * 4 + j]
    }
  }
})");
  expectError(
      [&] {
        sch::reorder(scan, {"j", "i"});
      },
      "reorder: loops j, i carry a dependence through buffer A (written at A[i * 4 + j], "
      "read at A[i * 4 + j - 1])");
  PrimFunc red = parse(R"(func red(A: float32[3, 4, 5] @global, B: float32[3] @global) {
  for (i, 0, 3) {
    for (r, 0, 4) {
      for (s, 0, 5) {
        B[i] = B[i] + A[i * 20 + r * 5 + s]
      }
    }
  }
})");
  expectError(
      [&] {
        sch::reorder(red, {"i", "s", "r"});
      },
      "reorder: would change the order of the reduction loops r, s of B[i]");
  PrimFunc ok = sch::reorder(red, {"r", "i", "s"}); // reduction order r, s kept
  test::expectSameResults(red, ok, "reorder around a reduction");
}

TEST(Schedule, Annotations) {
  PrimFunc f = parse(kAdd);
  EXPECT_NE(toText(sch::unroll(f, "j")).find("unrolled for (j, 0, 10)"), std::string::npos)
      << toText(sch::unroll(f, "j"));
  PrimFunc p = sch::pipeline(f, "i", 2);
  EXPECT_NE(toText(p).find("attr pipeline_stages = 2 {"), std::string::npos) << toText(p);
  expectError([&] { sch::pipeline(f, "i", 0); }, "pipeline: loop 'i' needs at least 1 stage");
  PrimFunc d = parse(R"(func db(A: float32[8] @global, B: float32[8] @global) {
  for (i, 0, 2) {
    allocate T: float32[4] @l1 {
      for (j, 0, 4) {
        T[j] = A[i * 4 + j]
      }
      for (k, 0, 4) {
        B[i * 4 + k] = T[k]
      }
    }
  }
})");
  PrimFunc dd = sch::doubleBuffer(d, "T");
  EXPECT_NE(toText(dd).find("attr double_buffer = 1 {\n      allocate T"), std::string::npos)
      << toText(dd);
  test::expectSameResults(d, dd, "double_buffer");
  expectError([&] { sch::doubleBuffer(d, "A"); }, "double_buffer: 'A' is a parameter");
}

TEST(Schedule, CacheReadWriteAndComputeAt) {
  PrimFunc f = parse(kAdd);
  PrimFunc r = sch::cacheRead(f, "A", "l1", "i");
  EXPECT_NE(toText(r).find("allocate A_l1: float32[6, 10] @l1 {"), std::string::npos) << toText(r);
  EXPECT_NE(toText(r).find("B[i * 10 + j] = A_l1[i * 10 + j] + 1.0f"), std::string::npos);
  test::expectSameResults(f, r, "cache_read");
  expectError([&] { sch::cacheRead(f, "B", "l1", "i"); },
              "cache_read: loop 'i' writes 'B'; a read cache would miss the writes");
  PrimFunc w = sch::cacheWrite(f, "B", "l1", "i");
  EXPECT_NE(toText(w).find("B_l1[i * 10 + j] = A[i * 10 + j] + 1.0f"), std::string::npos)
      << toText(w);
  test::expectSameResults(f, w, "cache_write");

  PrimFunc two =
      parse(R"(func two(A: float32[8] @global, T: float32[8] @global, B: float32[8] @global) {
  for (p, 0, 8) {
    T[p] = A[p] * 2.0f
  }
  for (i, 0, 2) {
    for (j, 0, 4) {
      B[i * 4 + j] = T[i * 4 + j] + 1.0f
    }
  }
})");
  PrimFunc c = sch::computeAt(two, "p", "i");
  // The producer moved to the front of loop i's body (recomputed per iteration).
  EXPECT_NE(toText(c).find("  for (i, 0, 2) {\n    for (p, 0, 8) {\n      T[p] = A[p] * 2.0f"),
            std::string::npos)
      << toText(c);
  test::expectSameResults(two, c, "compute_at");
  expectError([&] { sch::computeAt(two, "i", "p"); }, "compute_at: loop 'p' does not read 'B'");
}

} // namespace
