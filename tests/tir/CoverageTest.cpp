// CoverageTest.cpp - the coverage corpus (corpus/corpus.tir plus operators as lowerGroup writes
// them): for each loop nest, the fraction of its innermost work that NPU instructions perform
// when emission runs on the nest as written and after the normalisation pipeline (with
// PreProcess), on npu-base. Cases named *_full must be covered completely after normalisation;
// the corpus as a whole must reach 95% tensor/vector work. Every case, before and after every
// pass and the whole pipeline, computes the same buffers in the interpreter on random inputs.
//
// docs/COVERAGE.md is this test's report:
//   NPUC_COVERAGE_REPORT=docs/COVERAGE.md build/tests/tir/tir_tests --gtest_filter='Coverage.*'
#include "DiffUtil.h"
#include "TestGraphs.h"

#include "tir/Coverage.h"
#include "tir/IRMutator.h"
#include "tir/LowerOps.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <unordered_map>

using namespace npuc;
using namespace npuc::tir;

namespace {

struct Case {
  std::string name, what;
  PrimFunc f;
  bool full = false;
};

// Every buffer moved to L1: an operator's operands once its kernel has staged them on chip.
class ToL1 : public IRMutator {
public:
  Buffer mutateBuffer(const Buffer &b) override {
    auto it = map_.find(b.get());
    if (it == map_.end())
      it = map_.emplace(b.get(), Buffer::make(b->name, b->dtype, b->shape, "l1")).first;
    return it->second;
  }

private:
  std::unordered_map<const BufferNode *, Buffer> map_;
};

PrimFunc toL1(const PrimFunc &f) {
  ToL1 m;
  PrimFunc out = f;
  for (Buffer &b : out.params)
    b = m.mutateBuffer(b);
  out.body = m.mutate(f.body);
  return out;
}

std::vector<Case> corpus() {
  std::string path = std::string(NPUC_SOURCE_DIR) + "/tests/tir/corpus/corpus.tir";
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<Case> out;
  // The comment right above each function describes it.
  std::map<std::string, std::string> what;
  std::string line, comment;
  std::istringstream lines(ss.str());
  while (std::getline(lines, line)) {
    if (line.rfind("// ", 0) == 0) {
      if (!comment.empty())
        comment += ' ';
      comment.append(line, 3);
    } else if (line.rfind("func ", 0) == 0)
      what[line.substr(5, line.find('(') - 5)] = comment;
    else
      comment.clear();
    if (line.rfind("func ", 0) == 0)
      comment.clear();
  }
  for (const PrimFunc &f : parseFuncs(ss.str(), {path, 1})) {
    bool full = f.name.size() > 5 && f.name.compare(f.name.size() - 5, 5, "_full") == 0;
    out.push_back({f.name, what[f.name], f, full});
  }

  using testgraphs::input;
  using testgraphs::node;
  graph::Graph g;
  graph::ValueId x = input(g, "x", {1, 2, 7, 5});
  graph::ValueId w = g.addConstant("w", {3, 2, 3, 3}, std::vector<float>(54, 0.25f));
  node(g, "Conv", {x, w}, {1, 3, 4, 3},
       {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  node(g, "MaxPool", {x}, {1, 2, 4, 3},
       {{"kernel_shape", std::vector<int64_t>{3, 3}},
        {"strides", std::vector<int64_t>{2, 2}},
        {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  node(g, "Pad", {x}, {1, 2, 9, 8}, {{"pads", std::vector<int64_t>{0, 0, 1, 2, 0, 0, 1, 1}}});
  node(g, "Transpose", {x}, {1, 5, 7, 2}, {{"perm", std::vector<int64_t>{0, 3, 2, 1}}});
  node(g, "Concat", {x, x}, {1, 2, 14, 5}, {{"axis", int64_t{2}}});
  node(g, "Relu", {x}, {1, 2, 7, 5});
  const char *whatOf[] = {
      "lowerGroup's Conv 2 -> 3 channels, 3x3, stride 2, pad 1 on 7x5 (clamped reads)",
      "lowerGroup's MaxPool 3x3, stride 2, pad 1 on 7x5 (border windows)",
      "lowerGroup's Pad of 7x5 by (1, 2) rows and (0, 1) columns",
      "lowerGroup's Transpose (0, 3, 2, 1) of 1x2x7x5",
      "lowerGroup's Concat of two 1x2x7x5 along H",
      "lowerGroup's Relu on 1x2x7x5"};
  const char *names[] = {"lowered_conv",      "lowered_maxpool",     "lowered_pad",
                         "lowered_transpose", "lowered_concat_full", "lowered_relu_full"};
  size_t i = 0;
  testgraphs::forEachNodeLowered(g, [&](const PrimFunc &f) {
    PrimFunc l1 = toL1(f);
    l1.name = names[i];
    out.push_back(
        {names[i], whatOf[i], l1, std::string(names[i]).find("_full") != std::string::npos});
    ++i;
  });
  return out;
}

std::string emitSpec() {
  return "emit-npu{target=" + test::kTargetPath + "}";
}

std::string normaliseSpec() {
  return std::string(test::kPipeline) + ",pre-process{target=" + test::kTargetPath + "}," +
         emitSpec();
}

struct Row {
  Case c;
  Coverage before, after;
};

std::string pct(double f) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1) << 100 * f << "%";
  return o.str();
}

void writeReport(const std::vector<Row> &rows, const Coverage &before, const Coverage &after,
                 const std::string &path) {
  std::ofstream o(path);
  ASSERT_TRUE(o) << path;
  double meanBefore = 0, meanAfter = 0;
  for (const Row &r : rows) {
    meanBefore += r.before.computeFraction() / static_cast<double>(rows.size());
    meanAfter += r.after.computeFraction() / static_cast<double>(rows.size());
  }
  o << "# Instruction coverage of the TIR corpus\n\n"
    << "Generated by `tests/tir/CoverageTest.cpp` (do not edit by hand):\n\n"
    << "```\nNPUC_COVERAGE_REPORT=docs/COVERAGE.md build/tests/tir/tir_tests "
       "--gtest_filter='Coverage.*'\n```\n\n"
    << "Each case is a loop nest of `tests/tir/corpus/corpus.tir` or an operator as "
       "`tir::lowerGroup` writes it, with its operands in L1 (the tensor unit's levels for "
       "matmul). *Before*: instruction emission (`emit-npu`, target npu-base) on the nest as "
       "written. *After*: `"
    << test::kPipeline
    << ",pre-process,emit-npu`. Work is the innermost work (tir/Coverage.h): executed scalar "
       "stores plus the elements NPU instructions process; PreProcess adds the work of its "
       "temporaries, so *after* totals can be larger. *T+V* is the share done by tensor and "
       "vector instructions, *DMA* by DMA copies and fills, *scalar* what stays for the CPU "
       "fallback. Cases named `*_full` are asserted to reach 100% after normalisation; the "
       "corpus as a whole is asserted to reach at least 95% T+V.\n\n"
    << "| case | work before | T+V before | work after | T+V after | DMA after | scalar after "
       "| instructions issued after |\n|---|---:|---:|---:|---:|---:|---:|---|\n";
  for (const Row &r : rows) {
    std::string issued;
    for (const auto &[m, n] : r.after.issued) {
      if (!issued.empty())
        issued += ", ";
      issued += m;
      issued += ' ';
      issued += std::to_string(n);
    }
    o << "| `" << r.c.name << "` | " << r.before.total() << " | " << pct(r.before.computeFraction())
      << " | " << r.after.total() << " | " << pct(r.after.computeFraction()) << " | "
      << pct(r.after.total() ? double(r.after.dma) / double(r.after.total()) : 0) << " | "
      << r.after.scalar << " | " << issued << " |\n";
  }
  o << "| **corpus** | " << before.total() << " | " << pct(before.computeFraction()) << " | "
    << after.total() << " | " << pct(after.computeFraction()) << " | "
    << pct(double(after.dma) / double(after.total())) << " | " << after.scalar << " | |\n\n"
    << "Unweighted mean over the cases: T+V " << pct(meanBefore) << " before, "
    << pct(meanAfter) << " after (the corpus total is dominated by the matmul case).\n\n"
    << "What stays scalar after normalisation:\n\n";
  for (const Row &r : rows)
    if (r.after.scalar > 0)
      o << "- `" << r.c.name << "`: " << r.after.scalar << " of " << r.after.total()
        << " work units\n";
  o << "\n## Cases\n\n";
  for (const Row &r : rows)
    o << "- `" << r.c.name << "`: " << r.c.what << "\n";
}

TEST(Coverage, CorpusReachesFullCoverageAfterNormalisation) {
  const isa::Target &t = test::target();
  PassManager emitOnly(parsePipeline(emitSpec()));
  PassManager normalised(parsePipeline(normaliseSpec()));
  std::vector<Row> rows;
  Coverage before, after;
  int full = 0, improved = 0;
  for (const Case &c : corpus()) {
    SCOPED_TRACE(c.name);
    Row r{c, measureCoverage(emitOnly.run(c.f), t), {}};
    PrimFunc out = normalised.run(c.f);
    r.after = measureCoverage(out, t);
    if (std::getenv("NPUC_COVERAGE_DUMP"))
      std::cerr << toText(c.f) << toText(out);
    if (r.before.computeFraction() < 0.5 && r.after.scalar == 0)
      ++improved;
    if (c.full) {
      ++full;
      EXPECT_EQ(r.after.scalar, 0) << toText(out);
    }
    before += r.before;
    after += r.after;
    rows.push_back(r);
  }
  EXPECT_GE(rows.size(), 25u);
  EXPECT_GE(full, 18);
  EXPECT_GE(after.computeFraction(), 0.95);
  // The normalisation is what makes the difference: cases emission alone leaves mostly scalar
  // become fully emitted.
  EXPECT_GE(improved, 10);
  if (const char *path = std::getenv("NPUC_COVERAGE_REPORT"))
    writeReport(rows, before, after, path);
}

TEST(Coverage, EveryPassKeepsEveryCaseEquivalent) {
  for (const Case &c : corpus()) {
    SCOPED_TRACE(c.name);
    for (const PassInfo &p : passTable()) {
      PassManager pm(parsePipeline(test::passSpec(p)));
      test::expectSameResults(c.f, pm.run(c.f), std::string("pass ") + p.name);
    }
    PassManager emitOnly(parsePipeline(emitSpec()));
    test::expectSameResults(c.f, emitOnly.run(c.f), "emission alone");
    PassManager normalised(parsePipeline(normaliseSpec()));
    test::expectSameResults(c.f, normalised.run(c.f), "normalisation and emission");
  }
}

} // namespace
