// MinimallocBench.cpp - runs npu::planMemory on the MiniMalloc "challenging" instances.
//
// Usage: minimalloc_bench [--time-limit S] [--minimize] [DIR_OR_CSV...]
// Each X.<capacity>.csv is planned within <capacity> bytes; every plan is validated by the
// independent checker (npu::checkMemoryPlan) before it counts as solved. Prints one Markdown
// table row per instance (the table in docs/PERFORMANCE.md comes from here) and exits non-zero
// if any instance is unsolved or any plan fails validation (77, "skipped", when no instance
// folder was given and the default one is absent).
#include "npu/memory/MemoryPlanner.h"

#include "support/Error.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace npuc;

namespace {

/// The capacity is the second dot-separated part of the file name: "A.1048576.csv".
int64_t capacityFromName(const fs::path &p) {
  std::string stem = p.stem().string(); // "A.1048576"
  auto dot = stem.rfind('.');
  if (dot == std::string::npos)
    fail("{}: file name must be NAME.CAPACITY.csv", p.string());
  try {
    size_t used = 0;
    int64_t c = std::stoll(stem.substr(dot + 1), &used);
    if (used != stem.size() - dot - 1 || c < 0)
      throw std::invalid_argument("");
    return c;
  } catch (const std::exception &) {
    fail("{}: '{}' in the file name is not a capacity", p.string(), stem.substr(dot + 1));
  }
}

int run(int argc, char **argv) {
  npu::PlannerOptions opts;
  opts.timeLimitSeconds = 60;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--time-limit" && i + 1 < argc)
      opts.timeLimitSeconds = std::atof(argv[++i]);
    else if (a == "--minimize")
      opts.minimizePeak = true;
    else if (a == "-h" || a == "--help") {
      std::printf("usage: minimalloc_bench [--time-limit S] [--minimize] [DIR_OR_CSV...]\n"
                  "default: %s\n",
                  NPUC_DEFAULT_INSTANCES);
      return 0;
    } else
      inputs.push_back(a);
  }
  if (inputs.empty()) {
    if (!fs::is_directory(NPUC_DEFAULT_INSTANCES)) {
      // The instances live beside the repository, not in it: a clone without them skips.
      std::printf("minimalloc_bench: %s not present, skipping\n", NPUC_DEFAULT_INSTANCES);
      return 77;
    }
    inputs.push_back(NPUC_DEFAULT_INSTANCES);
  }
  std::vector<fs::path> files;
  for (const fs::path &in : inputs) {
    if (fs::is_directory(in)) {
      for (const auto &e : fs::directory_iterator(in))
        if (e.path().extension() == ".csv")
          files.push_back(e.path());
    } else if (fs::exists(in)) {
      files.push_back(in);
    } else {
      fail("{}: no such file or directory", in.string());
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty())
    fail("no .csv instances found");

  std::printf("| instance | buffers | capacity | lower bound | solved | peak | method | "
              "search nodes | wall (s) | CPU (s) |\n");
  std::printf("|---|---:|---:|---:|---|---:|---|---:|---:|---:|\n");
  int unsolved = 0;
  double total = 0, worst = 0, totalCpu = 0, worstCpu = 0;
  for (const fs::path &f : files) {
    int64_t capacity = capacityFromName(f);
    std::vector<npu::BufferReq> bufs = npu::readBufferCsv(f.string());
    // CPU time next to wall time: on a shared machine the wall time includes waiting.
    std::clock_t c0 = std::clock();
    npu::MemoryPlan plan = npu::planMemory(bufs, capacity, opts);
    double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
    totalCpu += cpu;
    worstCpu = std::max(worstCpu, cpu);
    std::string verdict = "no";
    if (plan.solved) {
      std::string err = npu::checkMemoryPlan(bufs, plan.offsets, capacity);
      if (err.empty())
        verdict = "yes (checked)";
      else
        verdict = "INVALID: " + err;
    }
    if (verdict.rfind("yes", 0) != 0)
      ++unsolved;
    total += plan.stats.seconds;
    worst = std::max(worst, plan.stats.seconds);
    std::printf("| %s | %zu | %lld | %lld | %s | %lld | %s | %lld | %.3f | %.3f |\n",
                f.filename().string().c_str(), bufs.size(), (long long)capacity,
                (long long)plan.stats.lowerBound, verdict.c_str(), (long long)plan.peak,
                plan.stats.method.c_str(), (long long)plan.stats.searchNodes, plan.stats.seconds,
                cpu);
    std::fflush(stdout);
  }
  std::printf("\n%zu instances, %zu solved; wall: total %.3f s, slowest %.3f s; CPU: total %.3f "
              "s, slowest %.3f s\n",
              files.size(), files.size() - unsolved, total, worst, totalCpu, worstCpu);
  return unsolved == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const Error &e) {
    std::fprintf(stderr, "minimalloc_bench: %s\n", e.what());
    return 2;
  }
}
