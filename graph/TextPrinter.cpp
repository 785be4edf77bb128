// TextPrinter.cpp - writes the graph text that TextParser.cpp reads (see Text.h for the syntax).
#include "graph/Text.h"

#include "graph/Ops.h"

#include "support/Error.h"
#include "support/Hash.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <set>

namespace npuc::graph {
namespace {

bool isBareName(const std::string &s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.')
      return false;
  return true;
}

std::string quote(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += std::string("\\") + c;
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    else
      out += c;
  }
  return out + "\"";
}

constexpr uint32_t kCanonicalNan = 0x7fc00000u;

// The shortest decimal that strtof reads back to the same bits (fmt's float formatting).
std::string floatText(float f) {
  if (std::isnan(f)) {
    uint32_t bits = std::bit_cast<uint32_t>(f);
    return bits == kCanonicalNan ? "nan" : fmt::format("bits({})", bits);
  }
  if (std::isinf(f))
    return f > 0 ? "inf" : "-inf";
  return fmt::format("{}", f);
}

// An attribute float: the shortest round-trip decimal of the double, always with a '.' or an
// exponent so that it reads back as a float, not an integer.
std::string doubleText(double d) {
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

std::string attrText(const AttrValue &a) {
  return std::visit(
      [](const auto &v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          return fmt::format("{}", v);
        } else if constexpr (std::is_same_v<T, double>) {
          return doubleText(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return quote(v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          return fmt::format("[{}]", fmt::join(v, ", "));
        } else {
          if (v.empty())
            return "f64[]";
          std::vector<std::string> parts;
          for (double d : v)
            parts.push_back(doubleText(d));
          return fmt::format("[{}]", fmt::join(parts, ", "));
        }
      },
      a);
}

class Printer {
public:
  Printer(const Graph &g, const TextOptions &o) : g_(g), o_(o) {}

  std::string run() {
    std::vector<NodeId> order = g_.topoOrder();
    nameValues(order);
    nameNodes(order);
    out_ = "graph " + quote(g_.name) + "\n";
    for (ValueId v : g_.inputs)
      out_ += "  input " + decl(v) + "\n";
    for (ValueId v : constants_)
      out_ += "  const " + decl(v) + " = " + data(g_.value(v)) + "\n";
    for (NodeId n : order)
      out_ += "  " + node(g_.node(n)) + "\n";
    if (!g_.outputs.empty())
      out_ += "  output " + outputs() + "\n";
    for (const FusedGroup &grp : g_.groups)
      out_ += "  " + group(grp) + "\n";
    return out_;
  }

private:
  // Gives every value the text mentions a unique printed name, in the order of first mention,
  // and collects the constants (declared before the nodes, in that order).
  void nameValues(const std::vector<NodeId> &order) {
    auto mention = [&](ValueId v) {
      if (v == kNoValue || valueNames_.count(v))
        return;
      valueNames_[v] = unique(g_.value(v).name, usedValueNames_, "v");
      if (g_.value(v).isConstant())
        constants_.push_back(v);
    };
    for (ValueId v : g_.inputs)
      mention(v);
    for (NodeId n : order) {
      for (ValueId v : g_.node(n).inputs)
        mention(v);
      for (ValueId v : g_.node(n).outputs)
        mention(v);
    }
    for (ValueId v : g_.outputs)
      mention(v);
  }

  void nameNodes(const std::vector<NodeId> &order) {
    for (NodeId n : order)
      nodeNames_[n] = unique(g_.node(n).name, usedNodeNames_, "n");
  }

  static std::string unique(const std::string &name, std::set<std::string> &used,
                            const char *emptyStem) {
    std::string stem = name.empty() ? emptyStem : name;
    std::string s = stem;
    for (int k = 1; used.count(s); ++k)
      s = fmt::format("{}.{}", stem, k);
    used.insert(s);
    return s;
  }

  std::string ref(ValueId v) const {
    if (v == kNoValue)
      return "<none>";
    return valueRefText(valueNames_.at(v));
  }

  std::string refs(const std::vector<ValueId> &vs, bool brackets) const {
    std::vector<std::string> parts;
    for (ValueId v : vs)
      parts.push_back(ref(v));
    std::string s = fmt::format("{}", fmt::join(parts, ", "));
    return brackets ? "[" + s + "]" : s;
  }

  // The graph outputs, each with `as "NAME"` when it is declared under another name than its
  // value's (a pass replaced the value: Graph::outputNames).
  std::string outputs() const {
    std::vector<std::string> parts;
    for (size_t i = 0; i < g_.outputs.size(); ++i) {
      const std::string &name = g_.outputName(i);
      parts.push_back(ref(g_.outputs[i]) +
                      (name != g_.value(g_.outputs[i]).name ? " as " + quote(name) : ""));
    }
    return fmt::format("{}", fmt::join(parts, ", "));
  }

  std::string decl(ValueId v) const {
    const Value &val = g_.value(v);
    return fmt::format("{}: {}[{}]", ref(v), dtypeName(val.dtype), fmt::join(val.shape, "x"));
  }

  std::string data(const Value &v) const {
    if (isIntStored(v.dtype)) {
      NPUC_ASSERT(v.i64 != nullptr, "integer and bool constants hold integer data");
      return fmt::format("[{}]", fmt::join(*v.i64, ", "));
    }
    NPUC_ASSERT(v.f32 != nullptr, "float constants hold float data");
    const std::vector<float> &d = *v.f32;
    bool splat = d.size() > 1;
    for (float f : d)
      splat = splat && std::bit_cast<uint32_t>(f) == std::bit_cast<uint32_t>(d[0]);
    if (splat)
      return "splat(" + floatText(d[0]) + ")";
    if (o_.inlineLimit >= 0 && static_cast<int64_t>(d.size()) > o_.inlineLimit) {
      std::string_view bytes(reinterpret_cast<const char *>(d.data()), d.size() * sizeof(float));
      return fmt::format("random({})", static_cast<uint32_t>(fnv1a(bytes)));
    }
    std::vector<std::string> parts;
    parts.reserve(d.size());
    for (float f : d)
      parts.push_back(floatText(f));
    return fmt::format("[{}]", fmt::join(parts, ", "));
  }

  std::string node(const Node &n) const {
    std::vector<std::string> outs;
    for (ValueId o : n.outputs)
      outs.push_back(decl(o));
    std::string s = fmt::format("{} = {} {}({})", fmt::join(outs, ", "), opName(n.kind),
                                quote(nodeNames_.at(n.id)), refs(n.inputs, false));
    if (!n.attrs.empty()) {
      std::vector<std::string> attrs;
      for (const auto &[k, v] : n.attrs)
        attrs.push_back(k + "=" + attrText(v));
      s += fmt::format(" {{{}}}", fmt::join(attrs, ", "));
    }
    return s;
  }

  std::string group(const FusedGroup &grp) const {
    std::vector<std::string> nodes;
    for (NodeId n : grp.nodes)
      nodes.push_back(quote(nodeNames_.at(n)));
    std::string s =
        fmt::format("group {} {} on {} anchor {} nodes [{}] inputs {} outputs {}", grp.id,
                    quote(grp.name), placementName(grp.placement), quote(nodeNames_.at(grp.anchor)),
                    fmt::join(nodes, ", "), refs(grp.inputs, true), refs(grp.outputs, true));
    if (!grp.cpuReason.empty())
      s += " reason " + quote(grp.cpuReason);
    if (!grp.note.empty())
      s += " note " + quote(grp.note);
    return s;
  }

  const Graph &g_;
  const TextOptions &o_;
  std::string out_;
  std::map<ValueId, std::string> valueNames_;
  std::map<NodeId, std::string> nodeNames_;
  std::set<std::string> usedValueNames_, usedNodeNames_;
  std::vector<ValueId> constants_;
};

} // namespace

std::string valueRefText(const std::string &name) {
  return "%" + (isBareName(name) ? name : quote(name));
}

std::string printGraphText(const Graph &g, const TextOptions &o) {
  return Printer(g, o).run();
}

} // namespace npuc::graph
