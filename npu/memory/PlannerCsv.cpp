// PlannerCsv.cpp - reads buffer lists in the MiniMalloc CSV format (id,lower,upper,size).
//
// This is the interchange format of the MiniMalloc benchmark set and a convenient way to feed
// the planner by hand (npuc's benchmarks and tests use it); rows may come in any id order.
#include "npu/memory/MemoryPlanner.h"

#include "support/Error.h"

#include <charconv>
#include <fstream>
#include <sstream>

namespace npuc::npu {

namespace {

int64_t parseField(const std::string &text, const std::string &path, int line, const char *column) {
  int64_t v = 0;
  const char *b = text.data(), *e = text.data() + text.size();
  while (b < e && (*b == ' ' || *b == '\t'))
    ++b;
  while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
    --e;
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e || b == e)
    fail("{}:{}: column '{}': '{}' is not an integer", path, line, column, text);
  return v;
}

} // namespace

std::vector<BufferReq> readBufferCsv(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    fail("{}: cannot open", path);
  std::string text;
  std::vector<BufferReq> bufs;
  std::vector<bool> seen;
  int line = 0;
  static const char *kColumns[] = {"id", "lower", "upper", "size"};
  while (std::getline(in, text)) {
    ++line;
    if (text.empty() || text == "\r")
      continue;
    std::vector<std::string> cols;
    std::stringstream ss(text);
    for (std::string c; std::getline(ss, c, ',');)
      cols.push_back(c);
    if (line == 1 && !cols.empty() && cols[0].find("id") != std::string::npos)
      continue; // header
    if (cols.size() != 4)
      fail("{}:{}: expected 4 columns id,lower,upper,size, got {}", path, line, cols.size());
    int64_t v[4];
    for (int k = 0; k < 4; ++k)
      v[k] = parseField(cols[k], path, line, kColumns[k]);
    if (v[0] < 0 || v[0] > 100000000)
      fail("{}:{}: buffer id {} out of range", path, line, v[0]);
    if (v[2] < v[1] || v[3] < 0)
      fail("{}:{}: buffer {} has upper {} < lower {} or negative size {}", path, line, v[0], v[2],
           v[1], v[3]);
    size_t id = static_cast<size_t>(v[0]);
    if (bufs.size() <= id) {
      bufs.resize(id + 1);
      seen.resize(id + 1, false);
    }
    if (seen[id])
      fail("{}:{}: buffer id {} appears twice", path, line, id);
    seen[id] = true;
    bufs[id] = BufferReq{v[1], v[2], v[3], 1};
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i])
      fail("{}: buffer ids are not contiguous: id {} is missing", path, i);
  return bufs;
}

} // namespace npuc::npu
