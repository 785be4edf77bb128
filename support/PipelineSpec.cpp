// PipelineSpec.cpp - splits `a,b{opt=v},c` into pass names and options (see PipelineSpec.h).
#include "support/PipelineSpec.h"

#include "support/Error.h"

namespace npuc {
namespace {

std::string trim(const std::string &s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

} // namespace

std::vector<PassSpec> splitPipelineSpec(const std::string &spec) {
  std::vector<PassSpec> out;
  size_t i = 0;
  while (i < spec.size()) {
    size_t end = spec.find_first_of(",{", i);
    PassSpec p;
    p.name = trim(spec.substr(i, end == std::string::npos ? end : end - i));
    if (p.name.empty())
      fail("pipeline '{}': empty pass name at offset {}", spec, i);
    i = end;
    if (i != std::string::npos && spec[i] == '{') {
      size_t close = spec.find('}', i);
      if (close == std::string::npos)
        fail("pipeline '{}': unterminated options of pass '{}'", spec, p.name);
      std::string body = spec.substr(i + 1, close - i - 1);
      size_t j = 0;
      while (!body.empty()) {
        size_t comma = body.find(',', j);
        std::string kv = body.substr(j, comma == std::string::npos ? comma : comma - j);
        size_t eq = kv.find('=');
        std::string key = trim(kv.substr(0, eq));
        if (eq == std::string::npos)
          fail("pipeline '{}': option '{}' of pass '{}' needs a value (name=value)", spec, key,
               p.name);
        p.options[key] = trim(kv.substr(eq + 1));
        p.optionOrder.push_back(key);
        if (comma == std::string::npos)
          break;
        j = comma + 1;
      }
      i = close + 1;
    }
    out.push_back(std::move(p));
    if (i == std::string::npos || i >= spec.size())
      break;
    if (spec[i] != ',')
      fail("pipeline '{}': expected ',' at offset {}", spec, i);
    ++i;
  }
  return out;
}

} // namespace npuc
