// GeneticSearchTest.cpp - the multi-objective search (explore/GeneticSearch.h): ranks on a
// constructed set, and a small search run twice (reproducible) and resumed (replayed from
// results.jsonl).
#include "SweepTestUtil.h"

#include "explore/Explore.h"
#include "explore/GeneticSearch.h"
#include "explore/Results.h"

#include <set>
#include <sstream>

using namespace npuc;
using namespace npuc::explore;
using namespace exploretest;

TEST(ExploreGeneticSearch, NondominatedRanks) {
  using S = std::optional<std::vector<double>>;
  // Fronts: {0, 1} (trade-off), {2} (dominated by 1 only), {3} (by 2); 4 is not ok.
  const std::vector<S> s = {S({1, 5}), S({2, 2}), S({3, 3}), S({4, 4}), std::nullopt};
  const std::vector<int> r = nondominatedRanks(s);
  EXPECT_EQ(r[0], 0);
  EXPECT_EQ(r[1], 0);
  EXPECT_EQ(r[2], 1);
  EXPECT_EQ(r[3], 2);
  EXPECT_GT(r[4], r[3]);
}

TEST(ExploreGeneticSearch, ReproducibleAndResumable) {
  const std::string dir = testDir();
  const SweepSpec s = loadSweep(writeSpec(dir, R"(axes:
  - {name: array, params: [tensor_unit.rows, tensor_unit.cols], values: [[8, 8], [16, 16], [32, 32]]}
  - {param: memory.l1.size, values: [256 KiB, 512 KiB, 1 MiB]}
  - {param: dram.bytes_per_cycle, values: [4, 8, 16, 32]}
objectives: [cycles, area_mm2]
search: {strategy: nsga2, population: 4, generations: 2, seed: 3}
allow_cpu_groups: true
)"));
  auto indices = [](const std::string &path) {
    std::set<int64_t> ix;
    for (const nlohmann::json &r : readResults(path).records)
      ix.insert(r.at("index").get<int64_t>());
    return ix;
  };
  std::ostringstream log;
  ExploreOptions o;
  o.plots = false;
  o.outDir = dir + "/a";
  const ExploreSummary a = runSweep(s, o, log);
  EXPECT_GE(a.evaluated, 5u); // the first generation and at least one child
  EXPECT_LE(a.evaluated, 12u);
  EXPECT_NE(log.str().find("nsga2: generation 2 of 2 done"), std::string::npos) << log.str();
  o.outDir = dir + "/b";
  (void)runSweep(s, o, log);
  EXPECT_EQ(indices(dir + "/a/results.jsonl"), indices(dir + "/b/results.jsonl"));
  // A rerun replays the same generations from the records: nothing new to evaluate.
  o.outDir = dir + "/a";
  const ExploreSummary again = runSweep(s, o, log);
  EXPECT_EQ(again.evaluated, 0u);
  EXPECT_EQ(again.resumed, a.evaluated);
}
