// PassManager.cpp - the pass registry, pipeline parsing, option lookup and the pass-running loop.
#include "tir/PassManager.h"

#include "support/Error.h"
#include "tir/Printer.h"
#include "tir/Verify.h"

#include <chrono>
#include <cstdlib>

namespace npuc::tir {

void PassRegistry::add(PassInfo p) {
  NPUC_ASSERT(!find(p.name), std::string("pass ") + p.name + " is registered twice");
  passes_.push_back(std::move(p));
}

const PassInfo *PassRegistry::find(const std::string &name) const {
  for (const PassInfo &p : passes_)
    if (name == p.name)
      return &p;
  return nullptr;
}

std::string passOption(const char *pass, const PassOptions &opts, const std::string &name) {
  auto it = opts.find(name);
  NPUC_ASSERT(it != opts.end(), std::string("pass ") + pass + " has no option " + name);
  return it->second;
}

int64_t passOptionInt(const char *pass, const PassOptions &opts, const std::string &name) {
  std::string v = passOption(pass, opts, name);
  char *end = nullptr;
  long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0')
    npuc::fail("pass '{}': option '{}' must be an integer, not '{}'", pass, name, v);
  return n;
}

std::vector<PipelineEntry> parsePipeline(const PassRegistry &r, const std::string &spec) {
  std::vector<PipelineEntry> out;
  size_t i = 0;
  auto trim = [](std::string s) {
    size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
    return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
  };
  while (i < spec.size()) {
    size_t end = spec.find_first_of(",{", i);
    std::string name = trim(spec.substr(i, end == std::string::npos ? end : end - i));
    if (name.empty())
      npuc::fail("pipeline '{}': empty pass name at offset {}", spec, i);
    const PassInfo *p = r.find(name);
    if (!p) {
      std::string known;
      for (const PassInfo &q : r.passes())
        known += (known.empty() ? "" : ", ") + std::string(q.name);
      npuc::fail("pipeline '{}': unknown pass '{}' (known: {})", spec, name, known);
    }
    PipelineEntry e{*p, {}};
    i = end;
    if (i != std::string::npos && spec[i] == '{') {
      size_t close = spec.find('}', i);
      if (close == std::string::npos)
        npuc::fail("pipeline '{}': unterminated options of pass '{}'", spec, name);
      std::string body = spec.substr(i + 1, close - i - 1);
      size_t j = 0;
      while (j <= body.size() && !body.empty()) {
        size_t comma = body.find(',', j);
        std::string kv = body.substr(j, comma == std::string::npos ? comma : comma - j);
        size_t eq = kv.find('=');
        std::string key = trim(kv.substr(0, eq));
        bool known = false;
        for (const PassOption &o : p->options)
          known = known || key == o.name;
        if (eq == std::string::npos || !known)
          npuc::fail("pipeline '{}': pass '{}' has no option '{}'", spec, name, key);
        e.options[key] = trim(kv.substr(eq + 1));
        if (comma == std::string::npos)
          break;
        j = comma + 1;
      }
      i = close + 1;
    }
    for (const PassOption &o : p->options)
      e.options.emplace(o.name, o.defaultValue); // keeps the values given above
    out.push_back(std::move(e));
    if (i == std::string::npos || i >= spec.size())
      break;
    if (spec[i] != ',')
      npuc::fail("pipeline '{}': expected ',' at offset {}", spec, i);
    ++i;
  }
  return out;
}

PassManager::PassManager(std::vector<PipelineEntry> pipeline, PassContext &ctx,
                         PassManagerOptions o)
    : pipeline_(std::move(pipeline)), ctx_(ctx), opts_(std::move(o)) {
  if (!opts_.stopAfter.empty()) {
    bool found = false;
    for (const PipelineEntry &e : pipeline_)
      found = found || opts_.stopAfter == e.pass.name;
    if (!found)
      npuc::fail("--stop-after={}: no such pass in the pipeline", opts_.stopAfter);
  }
  for (const PipelineEntry &e : pipeline_)
    timings_.push_back({e.pass.name, 0});
}

PrimFunc PassManager::run(const PrimFunc &f, std::ostream *log) {
  PrimFunc cur = f;
  for (size_t i = 0; i < pipeline_.size(); ++i) {
    const PipelineEntry &e = pipeline_[i];
    auto t0 = std::chrono::steady_clock::now();
    cur = e.pass.run(cur, e.options, ctx_);
    auto t1 = std::chrono::steady_clock::now();
    timings_[i].ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
    verify(cur);
    if (opts_.printAfterAll && log)
      *log << "// *** IR after " << e.pass.name << " ***\n" << toText(cur);
    if (opts_.stopAfter == e.pass.name)
      break;
  }
  return cur;
}

} // namespace npuc::tir
