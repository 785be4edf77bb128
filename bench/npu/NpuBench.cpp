// NpuBench.cpp - NPU code quality over real layers: compiles each model of a manifest
// (bench/npu/export_layers.py) for one target, simulates it timing-only with hazard checking,
// and prints one row per model: cycles, roofline cycles, their ratio, MAC utilisation,
// bank-conflict stalls, the roofline's bound and the tiling; then the same cycles under each
// ablation (single buffering, naive tiling, no bank-aware allocation). Summary lines give the
// MAC-weighted mean ratio per network and kind, and the worst layers.
//
// Usage: npu_bench TARGET.yaml MODEL_DIR [FILTER]   (FILTER: only manifest rows whose file name
// contains it). Not a test: figures go to docs/PERFORMANCE.md ("NPU benchmark").
#include "simulator/Simulator.h"
#include "support/Error.h"
#include "tools/driver/Compiler.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace npuc;

namespace {

struct Row {
  std::string file, net, layer, kind;
  int64_t mult = 1, macs = 0;
};

struct Result {
  bool npu = false;
  std::string cpuReason; // set when any group is not on the NPU
  int64_t cycles = 0, roofline = 0, macs = 0, stalls = 0;
  std::string bound, tiling;
  double ratio() const { return cycles > 0 ? double(roofline) / double(cycles) : 0.0; }
};

std::vector<Row> readManifest(const std::string &dir) {
  std::ifstream in(dir + "/manifest.tsv");
  if (!in)
    fail("{}/manifest.tsv: cannot open (run bench/npu/export_layers.py first)", dir);
  std::vector<Row> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    Row r;
    std::string mult, macs;
    if (!std::getline(ls, r.file, '\t') || !std::getline(ls, r.net, '\t') ||
        !std::getline(ls, r.layer, '\t') || !std::getline(ls, r.kind, '\t') ||
        !std::getline(ls, mult, '\t') || !std::getline(ls, macs, '\t'))
      fail("{}/manifest.tsv: malformed line '{}'", dir, line);
    r.mult = std::stoll(mult);
    r.macs = std::stoll(macs);
    rows.push_back(r);
  }
  return rows;
}

Result measure(const std::string &path, const isa::Target &t, const npu::CompileOptions &opt) {
  driver::CompiledModel m = driver::compileModel(path, t, {}, opt);
  Result r;
  for (const graph::FusedGroup &g : m.graph.groups)
    if (g.placement != graph::Placement::Npu && r.cpuReason.empty())
      r.cpuReason = g.name + ": " + g.cpuReason;
  r.npu = !m.npuSegments.empty();
  int64_t biggest = -1;
  for (const npu::Segment &seg : m.npuSegments) {
    sim::Memory mem(t, seg.dramBytes);
    sim::SimOptions so;
    so.functional = false; // cycles are identical to a functional run (docs/SIMULATOR.md)
    so.check = true;       // every compiled program must pass the hazard checker
    sim::SimStats s = sim::run(t, seg.program, mem, so);
    r.cycles += s.totalCycles;
    r.macs += s.macs;
    r.stalls += s.bankConflictStallCycles;
    for (const npu::GroupInfo &gi : seg.groupInfo) {
      r.roofline += gi.rooflineCycles;
      if (gi.rooflineCycles > biggest) {
        biggest = gi.rooflineCycles;
        r.bound = gi.bound;
        r.tiling = gi.tiling;
      }
    }
  }
  return r;
}

struct Variant {
  const char *name;
  npu::CompileOptions opt;
};

} // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: npu_bench TARGET.yaml MODEL_DIR [FILTER]\n");
    return 2;
  }
  const std::string dir = argv[2], filter = argc > 3 ? argv[3] : "";
  try {
    isa::Target t = isa::loadTarget(argv[1]);
    const int64_t peak = int64_t(t.tensor.rows) * t.tensor.cols;
    std::vector<Variant> variants;
    variants.push_back({"base", {}});
    Variant nodb{"no-db", {}};
    nodb.opt.doubleBuffer = false;
    variants.push_back(nodb);
    Variant naive{"naive", {}};
    naive.opt.naiveTiling = true;
    variants.push_back(naive);
    Variant nopf{"no-pf", {}};
    nopf.opt.crossGroupPrefetch = false;
    variants.push_back(nopf);
    Variant nobank{"no-bank", {}};
    nobank.opt.bankAware = false;
    variants.push_back(nobank);
    Variant nores{"no-res", {}}; // L1 residency between groups: whole networks only
    nores.opt.residency = false;
    variants.push_back(nores);

    std::printf("target %s: %lld MAC/cycle\n", t.name.c_str(), static_cast<long long>(peak));
    std::printf("%-44s %4s %10s %10s %6s %6s %8s %-6s", "model", "mult", "cycles", "roofline",
                "ratio", "util", "bankstl", "bound");
    for (size_t v = 1; v < variants.size(); ++v)
      std::printf(" %8s", (std::string(variants[v].name) + "%").c_str());
    std::printf("  tiling\n");

    // Per (network, kind): MAC-weighted sums of the ratio, and the worst layer.
    struct Acc {
      double wsum = 0, w = 0, worst = 2;
      std::string worstName;
      int64_t cycles = 0, stalls = 0;
    };
    std::map<std::string, Acc> acc;
    for (const Row &row : readManifest(dir)) {
      if (!filter.empty() && row.file.find(filter) == std::string::npos)
        continue;
      std::string path = dir + "/" + row.file;
      Result base;
      try {
        base = measure(path, t, variants[0].opt);
      } catch (const Error &e) {
        // One model the compiler rejects must not hide the others: report it in its row.
        std::string msg = e.what();
        std::printf("%-44s %4lld  compile/simulate error: %s\n", row.file.c_str(),
                    static_cast<long long>(row.mult), msg.substr(0, msg.find('\n')).c_str());
        continue;
      }
      if (!base.npu || !base.cpuReason.empty()) {
        std::printf("%-44s %4lld  not on the NPU: %s\n", row.file.c_str(),
                    static_cast<long long>(row.mult), base.cpuReason.c_str());
        continue;
      }
      double util = base.cycles > 0 ? double(base.macs) / (double(peak) * double(base.cycles)) : 0;
      std::printf("%-44s %4lld %10lld %10lld %6.3f %6.3f %8lld %-6s", row.file.c_str(),
                  static_cast<long long>(row.mult), static_cast<long long>(base.cycles),
                  static_cast<long long>(base.roofline), base.ratio(), util,
                  static_cast<long long>(base.stalls),
                  row.kind == "network" ? "-" : base.bound.c_str());
      for (size_t v = 1; v < variants.size(); ++v) {
        // A single-op model has no tensor to keep between groups.
        if (!variants[v].opt.residency && row.kind != "network") {
          std::printf(" %8s", "-");
          continue;
        }
        // Cycles of the ablation relative to the full compiler (100% = no change).
        try {
          Result r = measure(path, t, variants[v].opt);
          std::printf(" %7.1f%%", 100.0 * double(r.cycles) / double(base.cycles));
        } catch (const Error &) {
          std::printf(" %8s", "error");
        }
      }
      // A whole network's groups each have their own tiling (npuc inspect shows them).
      std::printf("  %s\n", row.kind == "network" ? "-" : base.tiling.c_str());
      std::fflush(stdout);
      if (row.kind == "network")
        continue;
      for (const std::string &key : {row.net + " " + row.kind, row.net + " all"}) {
        Acc &a = acc[key];
        // Weighted by the layer's MACs from the manifest: a depthwise conv on the vector unit
        // runs no tensor-unit MACs but still counts as much work.
        double w = double(row.mult) * double(row.macs);
        a.wsum += w * base.ratio();
        a.w += w;
        a.cycles += row.mult * base.cycles;
        a.stalls += row.mult * base.stalls;
        if (base.ratio() < a.worst) {
          a.worst = base.ratio();
          a.worstName = row.file;
        }
      }
    }
    std::printf("\n%-24s %12s %8s %8s  %s\n", "layers", "MAC-w ratio", "bank%", "worst",
                "worst layer");
    for (const auto &[key, a] : acc)
      std::printf("%-24s %12.3f %7.2f%% %8.3f  %s\n", key.c_str(), a.w > 0 ? a.wsum / a.w : 0.0,
                  a.cycles > 0 ? 100.0 * double(a.stalls) / double(a.cycles) : 0.0, a.worst,
                  a.worstName.c_str());
  } catch (const Error &e) {
    std::fprintf(stderr, "npu_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
