// Sweep.cpp - loading a sweep spec, enumerating its points, and each point's target description
// (contract in Sweep.h).
#include "explore/Sweep.h"

#include "isa/VectorOps.h"
#include "isa/YamlNode.h"
#include "support/Error.h"
#include "support/File.h"
#include "support/Hash.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <set>

namespace npuc::explore {

using isa::detail::YNode;
using nlohmann::json;

namespace {

struct MetricInfo {
  Metric m;
  const char *name;
  bool max;
};
constexpr MetricInfo kMetrics[] = {{Metric::Cycles, "cycles", false},
                                   {Metric::LatencyUs, "latency_us", false},
                                   {Metric::EnergyUj, "energy_uj", false},
                                   {Metric::AreaMm2, "area_mm2", false},
                                   {Metric::DramBytes, "dram_bytes", false},
                                   {Metric::MacUtilization, "mac_utilization", true},
                                   {Metric::Edp, "edp", false}};

static_assert(std::size(kMetrics) == std::size(kAllMetrics), "a name for every metric");

} // namespace

const char *metricName(Metric m) {
  return kMetrics[int(m)].name;
}
bool maximised(Metric m) {
  return kMetrics[int(m)].max;
}
std::optional<Metric> metricFromName(const std::string &name) {
  for (const MetricInfo &i : kMetrics)
    if (name == i.name)
      return i.m;
  return std::nullopt;
}
std::string metricNameList() {
  std::string s;
  for (const MetricInfo &i : kMetrics) {
    if (!s.empty())
      s += ", ";
    s += i.name;
  }
  return s;
}

std::vector<Metric> metricsFromNames(const std::vector<std::string> &names,
                                     const std::string &where) {
  std::vector<Metric> ms;
  for (const std::string &n : names) {
    std::optional<Metric> m = metricFromName(n);
    if (!m)
      fail("{}: unknown objective '{}' (expected one of: {})", where, n, metricNameList());
    ms.push_back(*m);
  }
  return ms;
}

namespace {

// ---- values and paths ----

/// A scalar as JSON: a plain number stays a number, anything else (512 KiB, fp16) a string.
json scalarJson(const YAML::Node &n) {
  const std::string text = n.Scalar();
  if (text == "true" || text == "false")
    return text == "true";
  bool plain = !text.empty();
  for (char c : text)
    plain = plain && (std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' ||
                      c == 'e' || c == 'E' || c == '+');
  if (std::optional<double> v = parseQuantity(text); plain && v) {
    if (*v == std::floor(*v) && std::fabs(*v) < 9e15)
      return int64_t(*v);
    return *v;
  }
  return text;
}

json valueJson(const YNode &y) {
  const YAML::Node &n = y.raw();
  if (n.IsScalar())
    return scalarJson(n);
  if (n.IsSequence()) {
    json a = json::array();
    for (size_t i = 0; i < y.size(); ++i)
      a.push_back(valueJson(y.at(i)));
    return a;
  }
  y.error("expected a value or a list of values");
}

YAML::Node toYaml(const json &j) {
  if (j.is_array()) {
    YAML::Node seq(YAML::NodeType::Sequence);
    for (const json &e : j)
      seq.push_back(toYaml(e));
    return seq;
  }
  if (j.is_string())
    return YAML::Node(j.get<std::string>());
  return YAML::Node(j.dump()); // numbers and booleans as JSON writes them
}

std::vector<std::string> splitPath(const std::string &path) {
  std::vector<std::string> segs;
  size_t start = 0;
  for (;;) {
    size_t dot = path.find('.', start);
    segs.push_back(path.substr(start, dot == std::string::npos ? dot : dot - start));
    if (dot == std::string::npos)
      return segs;
    start = dot + 1;
  }
}

/// The child of a sequence a path segment names: the element whose `name` (or `mnemonic`) is the
/// segment, or the element at that index.
std::optional<size_t> sequenceChild(const YAML::Node &seq, const std::string &seg) {
  for (size_t i = 0; i < seq.size(); ++i)
    for (const char *key : {"name", "mnemonic"})
      if (seq[i].IsMap() && seq[i][key] && seq[i][key].IsScalar() && seq[i][key].Scalar() == seg)
        return i;
  if (!seg.empty() && std::all_of(seg.begin(), seg.end(), ::isdigit) &&
      std::stoul(seg) < seq.size())
    return std::stoul(seg);
  return std::nullopt;
}

/// The node at `path` under `root` (nodes share their data: writing to the result writes into
/// root); nullopt when some segment names nothing.
std::optional<YAML::Node> nodeAt(YAML::Node root, const std::string &path) {
  YAML::Node cur = root;
  for (const std::string &seg : splitPath(path)) {
    YAML::Node next;
    if (cur.IsMap()) {
      if (!static_cast<const YAML::Node &>(cur)[seg])
        return std::nullopt;
      next.reset(cur[seg]);
    } else if (cur.IsSequence()) {
      std::optional<size_t> i = sequenceChild(cur, seg);
      if (!i)
        return std::nullopt;
      next.reset(cur[*i]);
    } else {
      return std::nullopt;
    }
    cur.reset(next);
  }
  return cur;
}

/// Replaces the node at `path` (which must exist) by `value`.
void setAt(YAML::Node root, const std::string &path, const YAML::Node &value) {
  std::optional<YAML::Node> n = nodeAt(root, path);
  if (!n)
    fail("the target has no field '{}'", path);
  *n = value; // n shares the tree's node: assigning replaces the field's value in the tree
}

void addOps(YAML::Node root, const std::vector<std::string> &ops) {
  std::optional<YAML::Node> list = nodeAt(root, "vector_unit.ops");
  if (!list || !list->IsSequence())
    fail("the target has no vector_unit.ops list");
  for (const std::string &op : ops) {
    bool present = false;
    for (size_t i = 0; i < list->size(); ++i)
      present = present || ((*list)[i].IsScalar() && (*list)[i].Scalar() == op);
    if (!present)
      list->push_back(op);
  }
}

void applyPoint(YAML::Node root, const SweepSpec &s, const Point &p) {
  for (size_t a = 0; a < s.axes.size(); ++a) {
    const Axis &ax = s.axes[a];
    const std::vector<json> &v = ax.values[size_t(p.choice[a])];
    if (!ax.optionalOps.empty()) {
      if (v[0].get<bool>())
        addOps(root, ax.optionalOps);
      continue;
    }
    for (size_t i = 0; i < ax.params.size(); ++i)
      setAt(root, ax.params[i], toYaml(v[i]));
  }
}

YAML::Node loadYaml(const std::string &text, const std::string &origin) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException &e) {
    fail("{}:{}:{}: YAML syntax error: {}", origin, e.mark.line + 1, e.mark.column + 1, e.msg);
  } catch (const YAML::Exception &e) {
    fail("{}: cannot read YAML: {}", origin, e.what());
  }
}

// ---- the spec ----

std::string resolve(const std::string &specPath, const std::string &p) {
  namespace fs = std::filesystem;
  if (fs::path(p).is_absolute())
    return p;
  return (fs::path(specPath).parent_path() / p).lexically_normal().string();
}

std::vector<std::vector<json>> rangeValues(const YNode &r) {
  r.allowKeys({"from", "to", "step", "times"});
  const double from = r.req("from").asDouble(), to = r.req("to").asDouble();
  const bool times = r.opt("times").has_value();
  if (times == r.opt("step").has_value())
    r.error("a range takes exactly one of step (from, from+step, ...) or times (from, "
            "from*times, ...)");
  const double by = times ? r.req("times").asDouble() : r.req("step").asDouble();
  if (times ? !(by > 1) || !(from > 0) : !(by > 0))
    r.error(times ? "times must be > 1 and from > 0" : "step must be > 0");
  if (!(to >= from))
    r.error(fmt::format("to ({}) is below from ({})", to, from));
  std::vector<std::vector<json>> values;
  for (double v = from; v <= to * (1 + 1e-12); v = times ? v * by : v + by) {
    if (values.size() >= 10000)
      r.error("more than 10000 values");
    values.push_back({v == std::floor(v) ? json(int64_t(v)) : json(v)});
  }
  return values;
}

Axis parseAxis(const YNode &y, const YAML::Node &base) {
  y.allowKeys({"name", "param", "params", "values", "range", "optional_ops"});
  Axis ax;
  if (auto ops = y.opt("optional_ops")) {
    if (y.opt("param") || y.opt("params") || y.opt("values") || y.opt("range"))
      y.error("an optional_ops axis takes no param, params, values or range");
    for (size_t i = 0; i < ops->size(); ++i) {
      std::string op = ops->at(i).asString();
      if (!isa::vecOpFromName(op))
        ops->at(i).error(
            fmt::format("unknown vector op '{}' (known: {})", op, isa::vecOpNameList()));
      ax.optionalOps.push_back(op);
    }
    if (ax.optionalOps.empty())
      ops->error("lists no op");
    ax.name = y.opt("name") ? y.req("name").asString() : "ops+" + ax.optionalOps[0];
    ax.values = {{false}, {true}};
    return ax;
  }
  if (y.opt("param").has_value() == y.opt("params").has_value())
    y.error("an axis takes exactly one of param (one field), params (fields set together) or "
            "optional_ops");
  if (auto p = y.opt("param"))
    ax.params.push_back(p->asString());
  else
    for (size_t i = 0; i < y.req("params").size(); ++i)
      ax.params.push_back(y.req("params").at(i).asString());
  if (ax.params.empty())
    y.req("params").error("lists no field");
  ax.name = y.opt("name") ? y.req("name").asString() : ax.params[0];
  YNode where = y.relabel(y.path() + " (" + ax.name + ")");
  for (const std::string &p : ax.params)
    if (!nodeAt(YAML::Clone(base), p))
      where.error(fmt::format("the base target has no field '{}' (an axis replaces a field the "
                              "base description has; lists are indexed by name: memory.l1.size)",
                              p));
  if (y.opt("values").has_value() == y.opt("range").has_value())
    where.error("an axis takes exactly one of values or range");
  if (auto r = y.opt("range")) {
    if (ax.params.size() != 1)
      r->error("a range sets one field (use values for a params group)");
    ax.values = rangeValues(*r);
    return ax;
  }
  YNode vals = y.req("values");
  for (size_t i = 0; i < vals.size(); ++i) {
    json v = valueJson(vals.at(i));
    if (ax.params.size() == 1) {
      ax.values.push_back({v});
      continue;
    }
    if (!v.is_array() || v.size() != ax.params.size())
      vals.at(i).error(fmt::format("a value of axis '{}' sets {} fields: give a list of {} "
                                   "values",
                                   ax.name, ax.params.size(), ax.params.size()));
    ax.values.push_back(std::vector<json>(v.begin(), v.end()));
  }
  if (ax.values.empty())
    vals.error(fmt::format("axis '{}' has no values", ax.name));
  std::set<std::string> seen;
  for (size_t i = 0; i < ax.values.size(); ++i)
    if (!seen.insert(json(ax.values[i]).dump()).second)
      vals.at(i).error(
          fmt::format("axis '{}' lists the value {} twice", ax.name, json(ax.values[i]).dump()));
  return ax;
}

ModelSpec parseModel(const YNode &y, const std::string &specPath) {
  ModelSpec m;
  if (y.isScalar()) {
    m.path = resolve(specPath, y.asString());
  } else {
    y.allowKeys({"path", "name", "input_shape", "weight"});
    m.path = resolve(specPath, y.req("path").asString());
    if (auto n = y.opt("name"))
      m.name = n->asString();
    m.weight = y.intOr("weight", 1, 1, 1000000);
    if (auto shapes = y.opt("input_shape"))
      for (const auto &[input, dims] : shapes->entries()) {
        Shape s;
        for (size_t i = 0; i < dims.size(); ++i)
          s.push_back(dims.at(i).asIntIn(1, int64_t(1) << 40));
        m.inputs.inputShapes[input] = s;
      }
    m.inputs.pinnedBy = y.path() + ".input_shape";
  }
  if (!std::filesystem::is_regular_file(m.path))
    y.error(fmt::format("model file '{}' does not exist", m.path));
  if (m.name.empty())
    m.name = std::filesystem::path(m.path).stem().string();
  return m;
}

void parseSearch(const YNode &y, SweepSpec &s) {
  y.allowKeys({"strategy", "samples", "seed", "population", "generations"});
  const std::string st = y.req("strategy").asString();
  if (st == "grid")
    s.strategy = Strategy::Grid;
  else if (st == "random")
    s.strategy = Strategy::Random;
  else if (st == "nsga2")
    s.strategy = Strategy::Nsga2;
  else
    y.req("strategy")
        .error(fmt::format("unknown strategy '{}' (expected grid, random or nsga2)", st));
  if (s.strategy == Strategy::Random)
    s.samples = y.req("samples").asIntIn(1, int64_t(1) << 40);
  else if (y.opt("samples"))
    y.req("samples").error("only the random strategy draws samples");
  if (s.strategy == Strategy::Nsga2) {
    s.population = int(y.req("population").asIntIn(2, 100000));
    s.generations = int(y.req("generations").asIntIn(1, 100000));
  } else {
    for (const char *k : {"population", "generations"})
      if (y.opt(k))
        y.req(k).error("only the nsga2 strategy breeds generations");
  }
  s.seed = uint64_t(y.intOr("seed", 0, 0, INT64_MAX));
}

} // namespace

/// What a record depends on: the base's text, the models (path, size and pinned shapes: reading a
/// large model just to digest it would cost a resumed sweep seconds), the axes (a point's index
/// is its position in their grid), the constraints, allow_cpu_groups and tune_trials.
/// Objectives and the search strategy are not in it: a grid may resume a random sample, and a
/// report may rank the same records by other objectives.
std::string sweepId(const SweepSpec &s) {
  json j = {{"base", s.baseText}, {"allow_cpu_groups", s.allowCpuGroups}};
  if (s.tuneTrials > 0) // absent when 0, so that the sweeps before tuning keep their ids
    j["tune_trials"] = s.tuneTrials;
  for (const ModelSpec &m : s.models) {
    json shapes = json::object();
    for (const auto &[name, shape] : m.inputs.inputShapes)
      shapes[name] = shape;
    json model = {m.name, m.path, std::filesystem::file_size(m.path), shapes};
    if (m.weight != 1) // absent when 1, so that the sweeps before weights keep their ids
      model.push_back(m.weight);
    j["models"].push_back(model);
  }
  for (const Axis &a : s.axes)
    j["axes"].push_back({a.name, a.params, a.optionalOps, a.values});
  for (const Constraint &c : s.constraints)
    j["constraints"].push_back(c.text);
  return fmt::format("{:016x}", fnv1a(j.dump()));
}

SweepSpec loadSweep(const std::string &path) {
  const std::string text = readFile(path);
  YAML::Node doc = loadYaml(text, path);
  isa::detail::rejectDuplicateKeys(doc, path);
  YNode root(doc, "", &path);
  if (!doc.IsMap())
    root.error("a sweep spec must be a YAML map");
  root.allowKeys({"base", "models", "axes", "constraints", "objectives", "search",
                  "allow_cpu_groups", "tune_trials"});
  SweepSpec s;
  s.path = path;
  s.basePath = resolve(path, root.req("base").asString());
  if (!std::filesystem::is_regular_file(s.basePath))
    root.req("base").error(fmt::format("target description '{}' does not exist", s.basePath));
  s.baseText = readFile(s.basePath);
  const YAML::Node base = loadYaml(s.baseText, s.basePath);
  YNode models = root.req("models");
  for (size_t i = 0; i < models.size(); ++i)
    s.models.push_back(parseModel(models.at(i), path));
  if (s.models.empty())
    models.error("lists no model");
  std::set<std::string> names;
  for (size_t i = 0; i < s.models.size(); ++i)
    if (!names.insert(s.models[i].name).second)
      models.at(i).error(
          fmt::format("two models are named '{}' (give one a name:)", s.models[i].name));
  YNode axes = root.req("axes");
  names.clear();
  for (size_t i = 0; i < axes.size(); ++i) {
    s.axes.push_back(parseAxis(axes.at(i), base));
    if (!names.insert(s.axes.back().name).second)
      axes.at(i).error(fmt::format("two axes are named '{}'", s.axes.back().name));
  }
  if (s.axes.empty())
    axes.error("lists no axis");
  YNode objectives = root.req("objectives");
  for (size_t i = 0; i < objectives.size(); ++i) {
    std::string name = objectives.at(i).asString();
    std::optional<Metric> m = metricFromName(name);
    if (!m)
      objectives.at(i).error(
          fmt::format("unknown objective '{}' (expected one of: {})", name, metricNameList()));
    s.objectives.push_back(*m);
  }
  if (s.objectives.empty())
    objectives.error("lists no objective");
  if (auto search = root.opt("search"))
    parseSearch(*search, s);
  if (auto a = root.opt("allow_cpu_groups"))
    s.allowCpuGroups = a->asBool();
  s.tuneTrials = int(root.intOr("tune_trials", 0, 0, 1000000));
  if (auto cs = root.opt("constraints"))
    for (size_t i = 0; i < cs->size(); ++i) {
      const std::string t = cs->at(i).asString();
      s.constraints.push_back({Expr::parse(t, fmt::format("{}: constraints[{}]", path, i)), t});
    }
  s.id = sweepId(s);
  // A constraint naming nothing is a spec error, found now rather than on every point.
  if (!s.constraints.empty())
    (void)violatedConstraint(s, Point{0, std::vector<int>(s.axes.size(), 0)});
  return s;
}

int64_t gridSize(const SweepSpec &s) {
  int64_t n = 1;
  for (const Axis &a : s.axes)
    if (__builtin_mul_overflow(n, int64_t(a.values.size()), &n))
      return INT64_MAX;
  return n;
}

Point pointAt(const SweepSpec &s, int64_t index) {
  Point p{index, std::vector<int>(s.axes.size(), 0)};
  for (size_t a = s.axes.size(); a-- > 0;) {
    const int64_t n = int64_t(s.axes[a].values.size());
    p.choice[a] = int(index % n);
    index /= n;
  }
  return p;
}

std::vector<Point> pointsToVisit(const SweepSpec &s) {
  NPUC_ASSERT(s.strategy != Strategy::Nsga2, "NSGA-II chooses its points as it goes");
  const int64_t n = gridSize(s);
  std::vector<Point> pts;
  if (s.strategy == Strategy::Grid) {
    if (n > 1000000)
      fail("{}: the grid has {} points; use the random strategy (search: {{strategy: random, "
           "samples: N}})",
           s.path, n == INT64_MAX ? std::string("over 9e18") : std::to_string(n));
    for (int64_t i = 0; i < n; ++i)
      pts.push_back(pointAt(s, i));
    return pts;
  }
  std::mt19937_64 rng(s.seed);
  std::set<int64_t> seen;
  const int64_t want = std::min(s.samples, n);
  while (int64_t(pts.size()) < want) {
    // One uniform draw per axis, so that grids larger than 2^64 are sampled uniformly too.
    Point p{0, std::vector<int>(s.axes.size(), 0)};
    int64_t index = 0;
    for (size_t a = 0; a < s.axes.size(); ++a) {
      const int64_t k = int64_t(s.axes[a].values.size());
      p.choice[a] = int(std::uniform_int_distribution<int64_t>(0, k - 1)(rng));
      index = index * k + p.choice[a];
    }
    p.index = index;
    if (seen.insert(index).second)
      pts.push_back(p);
  }
  return pts;
}

json pointJson(const SweepSpec &s, const Point &p) {
  json j = json::object();
  for (size_t a = 0; a < s.axes.size(); ++a) {
    const std::vector<json> &v = s.axes[a].values[size_t(p.choice[a])];
    j[s.axes[a].name] = v.size() == 1 ? v[0] : json(v);
  }
  return j;
}

std::string pointTargetText(const SweepSpec &s, const Point &p) {
  YAML::Node root = loadYaml(s.baseText, s.basePath);
  applyPoint(root, s, p);
  if (root["name"] && root["name"].IsScalar())
    root["name"] = root["name"].Scalar() + "-p" + std::to_string(p.index);
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

namespace {

nlohmann::ordered_json nodeJson(const YAML::Node &n) {
  using oj = nlohmann::ordered_json;
  if (n.IsScalar()) {
    const json v = scalarJson(n);
    return v.is_string() ? oj(v.get<std::string>()) : oj::parse(v.dump());
  }
  if (n.IsSequence()) {
    oj a = oj::array();
    for (const YAML::Node &e : n)
      a.push_back(nodeJson(e));
    return a;
  }
  if (n.IsMap()) {
    oj o = oj::object();
    for (const auto &kv : n)
      o[kv.first.Scalar()] = nodeJson(kv.second);
    return o;
  }
  return nullptr;
}

} // namespace

nlohmann::ordered_json yamlAsJson(const std::string &text, const std::string &origin) {
  return nodeJson(loadYaml(text, origin));
}

std::string violatedConstraint(const SweepSpec &s, const Point &p) {
  if (s.constraints.empty())
    return "";
  YAML::Node root = loadYaml(s.baseText, s.basePath);
  applyPoint(root, s, p);
  auto lookup = [&](const std::string &name) -> std::optional<double> {
    for (size_t a = 0; a < s.axes.size(); ++a)
      if (s.axes[a].name == name) {
        const std::vector<json> &v = s.axes[a].values[size_t(p.choice[a])];
        if (v.size() != 1)
          fail("{}: constraint '{}' names axis '{}', which sets several fields: name one of them",
               s.path, name, name);
        if (v[0].is_boolean())
          return v[0].get<bool>() ? 1.0 : 0.0;
        if (v[0].is_number())
          return v[0].get<double>();
        return v[0].is_string() ? parseQuantity(v[0].get<std::string>()) : std::nullopt;
      }
    std::optional<YAML::Node> n = nodeAt(root, name);
    if (!n || !n->IsScalar())
      return std::nullopt;
    return parseQuantity(n->Scalar());
  };
  for (const Constraint &c : s.constraints)
    if (c.expr.eval(lookup) == 0)
      return c.text;
  return "";
}

} // namespace npuc::explore
