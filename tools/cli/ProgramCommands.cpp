// ProgramCommands.cpp - `npuc asm` and `npuc sim`: hand-written NPU programs without a model.
//
// These exist to exercise the ISA and the simulator directly (microbenchmarks, bring-up of a new
// target YAML). DRAM starts zeroed; --dram-init places file contents at byte addresses and
// --dump copies DRAM ranges to files after the run.
#include "tools/cli/Commands.h"

#include "isa/Program.h"
#include "simulator/Simulator.h"
#include "support/Error.h"
#include "support/Npy.h"
#include "tools/driver/Report.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace npuc::cli {

namespace {

// Default DRAM image for `npuc sim` when the target's DRAM is larger: enough for hand-written
// programs without allocating gigabytes. --dram-bytes overrides it.
constexpr int64_t kDefaultSimDram = int64_t(64) << 20;

int64_t parseAddr(const std::string &s, const std::string &what) {
  if (s.empty())
    fail("{}: missing number", what);
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 0); // decimal or 0x hex
  if (errno != 0 || end != s.c_str() + s.size() || v < 0)
    fail("{}: '{}' is not a non-negative integer", what, s);
  return int64_t(v);
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

isa::Program loadProgram(const isa::Target &t, const std::string &path) {
  std::string bytes = readFile(path);
  if (endsWith(path, ".bin")) {
    try {
      return isa::decode(t, std::vector<uint8_t>(bytes.begin(), bytes.end()));
    } catch (const Error &e) {
      fail("{}: {}", path, e.what());
    }
  }
  return isa::assemble(t, bytes, path);
}

struct DramInit {
  std::string file, bytes;
  int64_t addr = 0;
};
struct Dump {
  int64_t addr = 0, bytes = 0;
  std::string file;
};

} // namespace

void cmdAsm(const AsmArgs &a, std::ostream &out) {
  isa::Target t = isa::loadTarget(a.target);
  isa::Program p = isa::assemble(t, readFile(a.program), a.program);
  std::vector<uint8_t> code = isa::encode(t, p);
  OutputSet outs;
  outs.writeFile(a.output, std::string(code.begin(), code.end()));
  outs.commit();
  out << fmt::format("assembled {} instructions ({} bytes) -> {}\n", p.instrs.size(), code.size(),
                     a.output);
}

void cmdSim(const SimArgs &a, std::ostream &out) {
  isa::Target t = isa::loadTarget(a.target);
  isa::Program p = loadProgram(t, a.program);
  int64_t need = 0;
  std::vector<DramInit> inits;
  for (const std::string &s : a.dramInit) {
    size_t at = s.rfind('@');
    if (at == std::string::npos || at == 0)
      fail("--dram-init '{}': expected FILE@ADDR", s);
    DramInit d{s.substr(0, at), readFile(s.substr(0, at)),
               parseAddr(s.substr(at + 1), "--dram-init '" + s + "'")};
    need = std::max(need, d.addr + int64_t(d.bytes.size()));
    inits.push_back(std::move(d));
  }
  std::vector<Dump> dumps;
  for (const std::string &s : a.dumps) {
    size_t colon = s.find(':'), eq = s.find('=');
    if (colon == std::string::npos || eq == std::string::npos || eq < colon || eq + 1 == s.size())
      fail("--dump '{}': expected ADDR:BYTES=FILE", s);
    Dump d{parseAddr(s.substr(0, colon), "--dump '" + s + "'"),
           parseAddr(s.substr(colon + 1, eq - colon - 1), "--dump '" + s + "'"), s.substr(eq + 1)};
    need = std::max(need, d.addr + d.bytes);
    dumps.push_back(std::move(d));
  }
  const int64_t levelSize = t.levels.at(size_t(t.dramLevel())).size;
  int64_t dramBytes = a.dramBytes > 0 ? a.dramBytes : std::min(levelSize, kDefaultSimDram);
  dramBytes = std::max(dramBytes, need);
  if (dramBytes > levelSize)
    fail("{}: DRAM image of {} bytes exceeds the target's DRAM size {} ({})", a.program, dramBytes,
         levelSize, t.path);

  sim::Memory mem(t, dramBytes);
  for (const DramInit &d : inits)
    std::memcpy(mem.dram().data() + d.addr, d.bytes.data(), d.bytes.size());
  sim::SimOptions opt;
  opt.trace = !a.trace.empty();
  sim::SimStats stats = sim::run(t, p, mem, opt);

  OutputSet outs;
  for (const Dump &d : dumps)
    outs.writeFile(d.file, std::string(reinterpret_cast<const char *>(mem.dram().data()) + d.addr,
                                       size_t(d.bytes)));
  nlohmann::json report = driver::buildProgramReport(t, stats);
  report["instructions"] = p.instrs.size();
  if (!a.report.empty())
    outs.writeFile(a.report, report.dump(2) + "\n");
  if (!a.trace.empty())
    outs.writeFile(a.trace, sim::traceToJson(t, stats));
  outs.commit();
  out << driver::formatReport(report);
}

} // namespace npuc::cli
