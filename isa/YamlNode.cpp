// YamlNode.cpp - located access to yaml-cpp nodes for the target loader (see YamlNode.h).
// Integers are parsed here rather than with yaml-cpp's as<int64_t>() because sizes in the
// target files read best with unit suffixes ("1 MiB") and hex, and because we want overflow
// and junk to be reported with the field path rather than as a generic conversion failure.
#include "isa/YamlNode.h"

#include "support/Error.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <map>

namespace npuc::isa::detail {

void rejectDuplicateKeys(const YAML::Node &doc, const std::string &origin) {
  // An explicit stack: a hostile file may nest deeper than the native stack allows. Aliases are
  // walked once per use, so a budget keeps a file of nested aliases from expanding without end.
  constexpr int64_t kMaxNodes = int64_t(1) << 20;
  std::vector<YAML::Node> todo{doc};
  for (int64_t visited = 0; !todo.empty(); ++visited) {
    if (visited == kMaxNodes)
      fail("{}: more than {} YAML nodes (aliases counted at each use); a target description is "
           "far smaller",
           origin, kMaxNodes);
    YAML::Node n = todo.back();
    todo.pop_back();
    if (n.IsSequence())
      for (auto it = n.begin(); it != n.end(); ++it)
        todo.push_back(*it);
    if (!n.IsMap())
      continue;
    std::map<std::string, YAML::Mark> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (it->first.IsScalar()) {
        const YAML::Mark m = it->first.Mark();
        auto [first, fresh] = seen.emplace(it->first.Scalar(), m);
        if (!fresh)
          fail("{}:{}:{}: duplicate key '{}' (first at line {})", origin, m.line + 1, m.column + 1,
               it->first.Scalar(), first->second.line + 1);
      }
      todo.push_back(it->second);
    }
  }
}

void YNode::error(const std::string &msg) const {
  YAML::Mark m = node_.Mark();
  std::string where = path_.empty() ? std::string("(top level)") : path_;
  if (m.line >= 0)
    fail("{}: {}: {} (line {})", *origin_, where, msg, m.line + 1);
  fail("{}: {}: {}", *origin_, where, msg);
}

void YNode::requireMap() const {
  if (!node_.IsMap())
    error("expected a map of key: value entries");
}

YNode YNode::req(const std::string &key) const {
  std::optional<YNode> n = opt(key);
  if (!n)
    YNode(node_, child(key), origin_).error("missing required field");
  return *n;
}

std::optional<YNode> YNode::opt(const std::string &key) const {
  requireMap();
  YAML::Node c = node_[key];
  if (!c.IsDefined() || c.IsNull())
    return std::nullopt;
  return YNode(c, child(key), origin_);
}

void YNode::allowKeys(std::initializer_list<const char *> allowed) const {
  requireMap();
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    std::string k = it->first.Scalar();
    bool ok = std::any_of(allowed.begin(), allowed.end(), [&](const char *a) { return k == a; });
    if (!ok) {
      std::string list;
      for (const char *a : allowed)
        list += (list.empty() ? "" : ", ") + std::string(a);
      YNode(it->first, child(k), origin_).error("unknown key (expected one of: " + list + ")");
    }
  }
}

size_t YNode::size() const {
  if (!node_.IsSequence())
    error("expected a sequence (a YAML list)");
  return node_.size();
}

YNode YNode::at(size_t i) const {
  size();
  return YNode(node_[i], path_ + "[" + std::to_string(i) + "]", origin_);
}

std::vector<std::pair<std::string, YNode>> YNode::entries() const {
  requireMap();
  std::vector<std::pair<std::string, YNode>> out;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    std::string k = it->first.Scalar();
    out.emplace_back(k, YNode(it->second, child(k), origin_));
  }
  return out;
}

std::string YNode::scalarText() const {
  if (!node_.IsScalar())
    error(node_.IsMap()        ? "expected a scalar value, found a map"
          : node_.IsSequence() ? "expected a scalar value, found a sequence"
                               : "expected a scalar value");
  return node_.Scalar();
}

std::string YNode::asString() const {
  return scalarText();
}

int64_t YNode::asInt() const {
  std::string s = scalarText();
  std::string text = s;
  int64_t scale = 1;
  // Unit suffixes, optionally separated by a space: "64 KiB", "1MiB".
  static const std::pair<const char *, int64_t> units[] = {
      {"KiB", int64_t(1) << 10}, {"MiB", int64_t(1) << 20}, {"GiB", int64_t(1) << 30}};
  for (auto [suffix, mult] : units) {
    std::string suf(suffix);
    if (text.size() > suf.size() && text.compare(text.size() - suf.size(), suf.size(), suf) == 0) {
      text = text.substr(0, text.size() - suf.size());
      while (!text.empty() && text.back() == ' ')
        text.pop_back();
      scale = mult;
      break;
    }
  }
  bool neg = !text.empty() && text[0] == '-';
  std::string digits = neg ? text.substr(1) : text;
  int base = 10;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    digits = digits.substr(2);
  }
  bool valid = !digits.empty();
  for (char c : digits)
    valid = valid && (base == 16 ? std::isxdigit(static_cast<unsigned char>(c)) != 0
                                 : (c >= '0' && c <= '9'));
  if (!valid)
    error("expected an integer, found '" + s + "'");
  errno = 0;
  unsigned long long v = std::strtoull(digits.c_str(), nullptr, base);
  uint64_t limit = uint64_t(std::numeric_limits<int64_t>::max()) / uint64_t(scale);
  if (errno == ERANGE || v > limit)
    error("integer '" + s + "' is out of the 64-bit range");
  int64_t r = static_cast<int64_t>(v) * scale;
  return neg ? -r : r;
}

int64_t YNode::asIntIn(int64_t lo, int64_t hi) const {
  int64_t v = asInt();
  if (v < lo || v > hi)
    error(fmt::format("value {} is out of range [{}, {}]", v, lo, hi));
  return v;
}

double YNode::asDouble() const {
  std::string s = scalarText();
  try {
    return node_.as<double>();
  } catch (const YAML::Exception &) {
    error("expected a number, found '" + s + "'");
  }
}

bool YNode::asBool() const {
  std::string s = scalarText();
  try {
    return node_.as<bool>();
  } catch (const YAML::Exception &) {
    error("expected true or false, found '" + s + "'");
  }
}

int64_t YNode::intOr(const std::string &key, int64_t dflt, int64_t lo, int64_t hi) const {
  std::optional<YNode> n = opt(key);
  return n ? n->asIntIn(lo, hi) : dflt;
}

double YNode::doubleOr(const std::string &key, double dflt) const {
  std::optional<YNode> n = opt(key);
  return n ? n->asDouble() : dflt;
}

} // namespace npuc::isa::detail
