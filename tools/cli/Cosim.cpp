// Cosim.cpp - `npuc cosim`: runs a program on the cycle-approximate simulator and on the verilated
// RTL core and reports whether they agree, in data (bit for bit) and in cycles.
//
//   npuc cosim PROG.s|PROG.bin --target configs/npu-rtl.yaml [--dram-init FILE@ADDR] [--wave F]
//   npuc cosim MODEL.npub                                 (every NPU segment of the package)
//   [--dram-fault ADDR:MASK]...  the RTL reads DRAM byte ADDR XOR MASK (fault injection)
//
// Hand-written programs start from a zeroed image plus --dram-init files and are compared over
// every byte of every memory level. A package's NPU segments get their constant image and
// deterministic pseudo-random fp16 inputs (the cosim checks RTL against model, not the model
// against a reference) and are compared over their output tensors. The command fails (exit 1)
// when data differ or the total cycle error exceeds --cycle-tolerance.
#include "tools/cli/Commands.h"

#include "isa/Program.h"
#include "simulator/rtl/RtlCore.h"
#include "support/Error.h"
#include "support/Half.h"
#include "support/Npy.h"
#include "tools/driver/Package.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

namespace npuc::cli {

namespace {

bool hasSuffix(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int64_t parseNumber(const std::string &s, const std::string &what) {
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 0);
  if (s.empty() || errno != 0 || end != s.c_str() + s.size() || v < 0)
    fail("{}: '{}' is not a non-negative integer", what, s);
  return int64_t(v);
}

/// Prints one co-simulation and returns whether it is within tolerance.
bool report(const isa::Target &t, const std::string &what, const rtl::CosimResult &r,
            double tolerance, std::ostream &out) {
  bool ok = r.dataMatch && r.cycleError() <= tolerance;
  out << fmt::format("== {}: {}\n", what, ok ? "AGREE" : "DISAGREE");
  out << r.summary(t);
  return ok;
}

} // namespace

bool cmdCosim(const CosimArgs &a, std::ostream &out) {
  rtl::RtlOptions opt;
  opt.wave = a.wave;
  opt.maxCycles = a.maxCycles;
  for (const std::string &f : a.dramFaults) {
    size_t colon = f.find(':');
    if (colon == std::string::npos || colon == 0)
      fail("--dram-fault '{}': expected ADDR:MASK", f);
    int64_t mask = parseNumber(f.substr(colon + 1), "--dram-fault '" + f + "' mask");
    if (mask == 0 || mask > 0xff)
      fail("--dram-fault '{}': the mask must be a non-zero byte (1..0xff)", f);
    opt.faults.push_back(
        {parseNumber(f.substr(0, colon), "--dram-fault '" + f + "' address"), uint8_t(mask)});
  }
  if (hasSuffix(a.input, ".npub")) {
    driver::CompiledModel m = driver::loadPackage(a.input);
    if (!a.target.empty()) {
      isa::Target given = isa::loadTarget(a.target);
      if (given.sourceText != m.target.sourceText)
        fail("{}: compiled for target '{}', which differs from --target {}", a.input, m.target.name,
             a.target);
    }
    rtl::checkTarget(m.target);
    if (m.npuSegments.empty())
      fail("{}: the package has no NPU segments", a.input);
    if (!a.wave.empty() && m.npuSegments.size() > 1)
      out << "note: --wave records the last NPU segment only\n";
    bool all = true;
    for (size_t s = 0; s < m.npuSegments.size(); ++s) {
      const npu::Segment &seg = m.npuSegments[s];
      sim::Memory mem(m.target, seg.dramBytes);
      std::copy(seg.constImage.begin(), seg.constImage.end(), mem.dram().begin() + seg.constBase);
      std::vector<rtl::Region> regions;
      std::mt19937 rng(static_cast<unsigned>(1234 + s));
      std::uniform_real_distribution<float> dist(-1.f, 1.f);
      for (const npu::DramTensor &in : seg.inputs)
        for (int64_t i = 0; i < in.bytes() / 2; ++i) {
          uint16_t h = floatToHalf(dist(rng));
          std::memcpy(mem.dram().data() + in.addr + 2 * i, &h, 2);
        }
      for (const npu::DramTensor &o : seg.outputs)
        regions.push_back({o.name, mem.dramIndex(), o.addr, o.bytes()});
      rtl::CosimResult r = rtl::cosim(m.target, seg.program, mem, regions, opt);
      all = report(m.target,
                   fmt::format("NPU segment {} ({} instructions)", s, seg.program.instrs.size()), r,
                   a.cycleTolerance, out) &&
            all;
    }
    return all;
  }

  if (a.target.empty())
    fail("cosim {}: --target is required for a program (.s or .bin)", a.input);
  isa::Target t = isa::loadTarget(a.target);
  rtl::checkTarget(t);
  std::string text = readFile(a.input);
  isa::Program p;
  if (hasSuffix(a.input, ".bin")) {
    try {
      p = isa::decode(t, std::vector<uint8_t>(text.begin(), text.end()));
    } catch (const Error &e) {
      fail("{}: {}", a.input, e.what());
    }
  } else {
    p = isa::assemble(t, text, a.input);
  }
  struct Init {
    std::string bytes;
    int64_t addr;
  };
  std::vector<Init> inits;
  int64_t need = a.dramBytes > 0 ? a.dramBytes : int64_t(1) << 20;
  for (const std::string &s : a.dramInit) {
    size_t at = s.rfind('@');
    if (at == std::string::npos || at == 0)
      fail("--dram-init '{}': expected FILE@ADDR", s);
    Init i{readFile(s.substr(0, at)), parseNumber(s.substr(at + 1), "--dram-init '" + s + "'")};
    need = std::max(need, i.addr + int64_t(i.bytes.size()));
    inits.push_back(std::move(i));
  }
  if (need > t.levels.at(size_t(t.dramLevel())).size)
    fail("{}: DRAM image of {} bytes exceeds the target's DRAM ({})", a.input, need, t.path);
  sim::Memory mem(t, need);
  for (const Init &i : inits)
    std::memcpy(mem.dram().data() + i.addr, i.bytes.data(), i.bytes.size());
  rtl::CosimResult r = rtl::cosim(t, p, mem, {}, opt);
  return report(t, fmt::format("{} ({} instructions)", a.input, p.instrs.size()), r,
                a.cycleTolerance, out);
}

} // namespace npuc::cli
