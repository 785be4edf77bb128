// ProgramCommands.cpp - `npuc asm`, `npuc sim` and `npuc disasm PROG.bin --target T`:
// hand-written NPU programs without a model.
//
// These exist to exercise the ISA and the simulator directly (microbenchmarks, bring-up of a new
// target YAML). DRAM starts zeroed; --dram-init places file contents at byte addresses (or at a
// `.region`), and --dump writes a `.region` of any level as .npy, or raw DRAM ranges, after the
// run. Hazard checking is on unless --no-check; --timing-only skips all data work.
#include "tools/cli/Commands.h"

#include "isa/Program.h"
#include "simulator/Simulator.h"
#include "support/Error.h"
#include "support/Npy.h"
#include "tools/driver/Package.h"
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

// A compiled package handed to a command for programs: it would otherwise be read as assembly
// text ("unknown mnemonic 'NPUB'") or decoded as instructions.
void rejectPackage(const std::string &path, const std::string &bytes) {
  if (driver::hasPackageMagic(bytes))
    fail("{}: is an npuc package (a compiled model), not a program; run it with `npuc run {}`, "
         "or list its programs with `npuc disasm {}`",
         path, path, path);
}

isa::Program loadProgram(const isa::Target &t, const std::string &path, isa::AsmSymbols &sym) {
  std::string bytes = readFile(path);
  rejectPackage(path, bytes);
  if (endsWith(path, ".bin")) {
    try {
      return isa::decode(t, std::vector<uint8_t>(bytes.begin(), bytes.end()));
    } catch (const Error &e) {
      fail("{}: {}", path, e.what());
    }
  }
  return isa::assemble(t, bytes, path, &sym);
}

struct DramInit {
  std::string file, bytes;
  int64_t addr = 0;
};
struct Dump {
  int64_t addr = 0, bytes = 0;
  std::string file;
  const isa::Region *region = nullptr; // REGION=FILE.npy
};

const isa::Region *findRegion(const isa::AsmSymbols &p, const std::string &name) {
  for (const isa::Region &r : p.regions)
    if (r.name == name)
      return &r;
  return nullptr;
}

/// The .npy file of a region's bytes: element type and shape from its declaration.
std::string regionNpy(const isa::Region &r, const uint8_t *data) {
  const char *descr = r.dtype == "fp16"   ? "<f2"
                      : r.dtype == "fp32" ? "<f4"
                      : r.dtype == "i32"  ? "<i4"
                      : r.dtype == "i8"   ? "|i1"
                                          : "|u1";
  int64_t elemBytes = r.dtype == "fp16" ? 2 : (r.dtype == "fp32" || r.dtype == "i32") ? 4 : 1;
  std::vector<int64_t> shape = r.shape;
  if (shape.empty())
    shape.push_back(r.bytes / elemBytes);
  std::string dims;
  for (int64_t d : shape)
    dims += std::to_string(d) + ", ";
  // "(16,)" for 1-D, "(4, 4)" otherwise
  dims.resize(dims.size() - (shape.size() > 1 ? 2 : 1));
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, dims);
  // Version 1.0: magic, version, 2-byte header length; the header is padded with spaces and
  // ends in '\n' so that the data starts on a 64-byte boundary.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += char(1);
  out += char(0);
  out += char(header.size() & 0xff);
  out += char(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char *>(data), size_t(r.bytes));
  return out;
}

} // namespace

void cmdAsm(const AsmArgs &a, std::ostream &out) {
  isa::Target t = isa::loadTarget(a.target);
  std::string text = readFile(a.program);
  rejectPackage(a.program, text);
  isa::Program p = isa::assemble(t, text, a.program);
  std::vector<uint8_t> code = isa::encode(t, p);
  OutputSet outs({a.program, a.target});
  outs.writeFile(a.output, std::string(code.begin(), code.end()));
  outs.commit();
  out << fmt::format("assembled {} instructions ({} bytes) -> {}\n", p.instrs.size(), code.size(),
                     a.output);
}

void cmdSim(const SimArgs &a, std::ostream &out) {
  isa::Target t = isa::loadTarget(a.target);
  isa::AsmSymbols sym;
  isa::Program p = loadProgram(t, a.program, sym);
  int64_t need = 0;
  std::vector<DramInit> inits;
  for (const std::string &s : a.dramInit) {
    size_t at = s.rfind('@');
    if (at == std::string::npos || at == 0)
      fail("--dram-init '{}': expected FILE@ADDR", s);
    std::string where = s.substr(at + 1);
    const isa::Region *r = findRegion(sym, where);
    if (r && r->level != t.dramLevel())
      fail("--dram-init '{}': region '{}' is not in DRAM", s, where);
    DramInit d{s.substr(0, at), readFile(s.substr(0, at)),
               r ? r->addr : parseAddr(where, "--dram-init '" + s + "'")};
    need = std::max(need, d.addr + int64_t(d.bytes.size()));
    inits.push_back(std::move(d));
  }
  std::vector<Dump> dumps;
  for (const std::string &s : a.dumps) {
    size_t eqPos = s.find('=');
    if (eqPos != std::string::npos && s.find(':') == std::string::npos) {
      const isa::Region *r = findRegion(sym, s.substr(0, eqPos));
      if (!r)
        fail("--dump '{}': no region named '{}' in {} (declare it with .region)", s,
             s.substr(0, eqPos), a.program);
      if (eqPos + 1 == s.size())
        fail("--dump '{}': expected REGION=FILE.npy", s);
      if (r->level == t.dramLevel())
        need = std::max(need, r->addr + r->bytes);
      dumps.push_back({r->addr, r->bytes, s.substr(eqPos + 1), r});
      continue;
    }
    size_t colon = s.find(':'), eq = s.find('=');
    if (colon == std::string::npos || eq == std::string::npos || eq < colon || eq + 1 == s.size())
      fail("--dump '{}': expected REGION=FILE.npy or ADDR:BYTES=FILE", s);
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
  opt.check = !a.noCheck;
  opt.functional = !a.timingOnly;
  if (a.maxWork > 0)
    opt.maxWork = a.maxWork;
  if (a.timingOnly && !dumps.empty())
    fail("--dump: a --timing-only run computes no data to dump");
  sim::SimStats stats = sim::run(t, p, mem, opt);

  std::vector<std::string> read;
  for (const DramInit &d : inits)
    read.push_back(d.file);
  read.push_back(a.program);
  read.push_back(a.target);
  OutputSet outs(read);
  for (const Dump &d : dumps) {
    if (d.region)
      outs.writeFile(d.file, regionNpy(*d.region, mem.level(d.region->level).data() + d.addr));
    else
      outs.writeFile(d.file,
                     std::string(reinterpret_cast<const char *>(mem.dram().data()) + d.addr,
                                 size_t(d.bytes)));
  }
  nlohmann::json report = driver::buildProgramReport(t, stats);
  report["instructions"] = p.instrs.size();
  report["hazard_check"] = opt.check;
  report["functional"] = opt.functional;
  if (!a.report.empty())
    outs.writeFile(a.report, report.dump(2) + "\n");
  if (!a.trace.empty())
    outs.writeFile(a.trace, sim::traceToJson(t, stats));
  outs.commit();
  out << driver::formatReport(report);
}

} // namespace npuc::cli

namespace npuc::cli {

void cmdDisasmProgram(const std::string &binary, const std::string &target, std::ostream &out) {
  isa::Target t = isa::loadTarget(target);
  std::string bytes = readFile(binary);
  rejectPackage(binary, bytes);
  isa::Program p;
  try {
    p = isa::decode(t, std::vector<uint8_t>(bytes.begin(), bytes.end()));
  } catch (const Error &e) {
    fail("{}: {}", binary, e.what());
  }
  // Only instruction lines and comments: `npuc asm` of this text reproduces the binary exactly.
  out << fmt::format("# {}: {} instructions for target {}\n", binary, p.instrs.size(), t.name);
  out << isa::disassemble(t, p);
}

} // namespace npuc::cli
