// Schedule.cpp - schedules as JSON, schedule files, and the structural keys they are filed by.
#include "npu/schedule/Schedule.h"

#include "isa/VectorOps.h"

#include "support/Error.h"
#include "support/File.h"
#include "support/Hash.h"

#include <algorithm>
#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace npuc::npu {

using nlohmann::json;

namespace {

struct StrategyName {
  Strategy s;
  const char *name;
};
constexpr StrategyName kStrategies[] = {{Strategy::TensorUnit, "tensor-unit"},
                                        {Strategy::DepthwiseVector, "depthwise-vector"},
                                        {Strategy::BatchMatmul, "batch-matmul"},
                                        {Strategy::Attention, "attention"},
                                        {Strategy::Pool, "pool"},
                                        {Strategy::GlobalPool, "global-pool"},
                                        {Strategy::Eltwise, "eltwise"},
                                        {Strategy::Concat, "concat"},
                                        {Strategy::LoopNest, "loop-nest"},
                                        {Strategy::View, "view"}};

// The canonical text of an attribute value (doubles in hex float: exact, locale-free).
std::string attrText(const graph::AttrValue &a) {
  struct V {
    std::string operator()(int64_t v) const { return fmt::format("i{}", v); }
    std::string operator()(double v) const { return fmt::format("f{:a}", v); }
    std::string operator()(const std::string &v) const {
      return fmt::format("s{}:{}", v.size(), v);
    }
    std::string operator()(const std::vector<int64_t> &v) const {
      return fmt::format("I[{}]", fmt::join(v, ","));
    }
    std::string operator()(const std::vector<double> &v) const {
      std::string s = "F[";
      for (double x : v)
        s += fmt::format("{:a},", x);
      return s + "]";
    }
  };
  return std::visit(V{}, a);
}

std::string valueText(const graph::Value &v) {
  return fmt::format("{}[{}]", graph::dtypeName(v.dtype), fmt::join(v.shape, ","));
}

std::string fieldText(const isa::Field &f) {
  return fmt::format("{}@{}:{}{}", f.name, f.lsb, f.width, f.isSigned ? "s" : "u");
}

} // namespace

const char *strategyName(Strategy s) {
  for (const StrategyName &n : kStrategies)
    if (n.s == s)
      return n.name;
  return "?";
}

std::optional<Strategy> strategyFromName(std::string_view name) {
  for (const StrategyName &n : kStrategies)
    if (name == n.name)
      return n.s;
  return std::nullopt;
}

int64_t Schedule::get(const std::string &name) const {
  auto it = decisions.find(name);
  NPUC_ASSERT(it != decisions.end(), "the space sets every decision it reads: " + name);
  return it->second;
}

json Schedule::toJson() const {
  json d = json::object();
  for (const auto &[name, v] : decisions)
    d[name] = v;
  return json{{"strategy", strategyName(strategy)}, {"decisions", d}};
}

Expected<Schedule, std::string> Schedule::fromJson(const json &j) {
  if (!j.is_object())
    return unexpected(std::string("a schedule must be an object"));
  if (!j.contains("strategy") || !j["strategy"].is_string())
    return unexpected(std::string("'strategy' must be a string"));
  Schedule s;
  const std::string name = j["strategy"].get<std::string>();
  std::optional<Strategy> st = strategyFromName(name);
  if (!st) {
    std::string known;
    for (const StrategyName &n : kStrategies)
      known += std::string(known.empty() ? "" : ", ") + n.name;
    return unexpected(fmt::format("unknown strategy '{}' (known: {})", name, known));
  }
  s.strategy = *st;
  if (j.contains("decisions")) {
    if (!j["decisions"].is_object())
      return unexpected(std::string("'decisions' must be an object of integers"));
    for (const auto &[k, v] : j["decisions"].items()) {
      if (!v.is_number_integer())
        return unexpected(fmt::format("decision '{}' must be an integer", k));
      s.decisions[k] = v.get<int64_t>();
    }
  }
  for (const auto &[k, v] : j.items())
    if (k != "strategy" && k != "decisions")
      return unexpected(fmt::format("unknown field '{}' (a schedule has 'strategy' and "
                                    "'decisions')",
                                    k));
  return s;
}

std::string Schedule::str() const {
  std::string s = strategyName(strategy);
  s += "{";
  bool first = true;
  for (const auto &[name, v] : decisions) {
    s += fmt::format("{}{}={}", first ? "" : ",", name, v);
    first = false;
  }
  return s + "}";
}

std::string ScheduleKey::str() const {
  return fmt::format("{:016x}-{:016x}", group, target);
}

std::optional<ScheduleKey> ScheduleKey::parse(std::string_view s) {
  if (s.size() != 33 || s[16] != '-')
    return std::nullopt;
  auto hex = [](std::string_view h, uint64_t &out) {
    out = 0;
    for (char c : h) {
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0)
        return false;
      out = out << 4 | static_cast<uint64_t>(d);
    }
    return true;
  };
  ScheduleKey k;
  if (!hex(s.substr(0, 16), k.group) || !hex(s.substr(17), k.target))
    return std::nullopt;
  return k;
}

uint64_t groupHash(const graph::Graph &g, const graph::FusedGroup &grp) {
  // Positions, not ids or names: the same structure elsewhere in the graph (or in another
  // model) gets the same text.
  std::map<graph::ValueId, std::string> where;
  for (size_t i = 0; i < grp.inputs.size(); ++i)
    where[grp.inputs[i]] = fmt::format("in{}", i);
  std::string text = fmt::format("v{};", kKeyVersion);
  for (size_t ni = 0; ni < grp.nodes.size(); ++ni) {
    const graph::Node &n = g.node(grp.nodes[ni]);
    text += fmt::format("node {} {};", graph::opName(n.kind), n.inputs.size());
    for (const auto &[k, a] : n.attrs) // std::map: sorted by name
      text += fmt::format("attr {}={};", k, attrText(a));
    for (graph::ValueId v : n.inputs) {
      if (v == graph::kNoValue) {
        text += "arg none;";
        continue;
      }
      const graph::Value &val = g.value(v);
      auto it = where.find(v);
      std::string from = it != where.end()  ? it->second
                         : val.isConstant() ? std::string("const")
                                            : std::string("outside");
      text += fmt::format("arg {} {};", from, valueText(val));
    }
    for (size_t oi = 0; oi < n.outputs.size(); ++oi) {
      where[n.outputs[oi]] = fmt::format("n{}.{}", ni, oi);
      text += fmt::format("out {};", valueText(g.value(n.outputs[oi])));
    }
  }
  for (graph::ValueId v : grp.outputs) {
    auto it = where.find(v);
    text += fmt::format("result {};", it != where.end() ? it->second : std::string("?"));
  }
  return fnv1a(text);
}

uint64_t targetHash(const isa::Target &t) {
  std::string text =
      fmt::format("v{};bits {};op {};clock {:a};tokens {};", kKeyVersion, t.instructionBits,
                  fieldText(t.opcodeField), t.clockGhz, t.tokenQueueDepth);
  for (const isa::MemoryLevel &m : t.levels)
    text += fmt::format("level {} {} {} {} {} {} {} {};", m.name, m.index, m.isDram, m.size,
                        m.banks, m.bankWidth, m.alignment, m.ports);
  for (const isa::Engine &e : t.engines)
    text += fmt::format("engine {} {} {} {:a};", e.name, e.index, e.queueDepth, e.bytesPerCycle);
  const isa::TensorUnit &tu = t.tensor;
  text += fmt::format("tensor {} {} {} {} {} {} {} {} {};", tu.rows, tu.cols,
                      static_cast<int>(tu.operandType), static_cast<int>(tu.accType), tu.dataflow,
                      tu.aLevel, tu.bLevel, tu.accLevel, tu.fillLatency);
  std::vector<std::string> vecOps;
  for (isa::VecOp op : t.vector.ops)
    vecOps.push_back(isa::vecOpName(op));
  text += fmt::format("vector {} {} [{}] [{}];", t.vector.lanes, t.vector.maxDims,
                      fmt::join(vecOps, ","), fmt::join(t.vector.levels, ","));
  // Only when given, so that the keys of targets without op latencies stay what they were.
  if (std::any_of(t.vector.opLatency.begin(), t.vector.opLatency.end(), [](int l) { return l; }))
    text += fmt::format("oplat [{}];", fmt::join(t.vector.opLatency, ","));
  text += fmt::format("dram {:a} {} {} {};", t.dram.bytesPerCycle, t.dram.latency, t.dram.channels,
                      t.dram.burstBytes);
  for (const isa::InstrDesc &d : t.instrs) {
    text += fmt::format("instr {} {} {} {} {} {:a};", d.mnemonic, d.opcode, d.engine,
                        static_cast<int>(d.semantics), d.timing.latency, d.timing.perElement);
    for (const isa::Field &f : d.fields)
      text += fieldText(f) + ";";
    for (const auto &[name, v] : d.fixed)
      text += fmt::format("fixed {}={};", name, v);
  }
  return fnv1a(text);
}

void ScheduleFile::put(const ScheduleKey &k, Schedule s, std::string group) {
  entries_[k] = Entry{std::move(s), std::move(group), {}};
}

const ScheduleFile::Entry *ScheduleFile::find(const ScheduleKey &k) const {
  auto it = entries_.find(k);
  return it == entries_.end() ? nullptr : &it->second;
}

std::vector<Schedule> &ScheduleFile::alternativesOf(const ScheduleKey &k) {
  auto it = entries_.find(k);
  NPUC_ASSERT(it != entries_.end(), "alternatives follow the key's best point (put first)");
  return it->second.alternatives;
}

json ScheduleFile::toJson() const {
  json list = json::array();
  for (const auto &[k, e] : entries_)
    list.push_back(json{{"key", k.str()}, {"group", e.group}, {"schedule", e.schedule.toJson()}});
  return json{{"version", kKeyVersion}, {"schedules", list}};
}

ScheduleFile ScheduleFile::fromJson(const json &j, const std::string &origin) {
  if (!j.is_object() || !j.contains("schedules") || !j["schedules"].is_array())
    fail("{}: a schedule file is an object with a 'schedules' array", origin);
  if (!j.contains("version") || j["version"] != kKeyVersion)
    fail("{}: 'version' must be {} (keys of other versions hash differently)", origin, kKeyVersion);
  ScheduleFile f;
  size_t i = 0;
  for (const json &e : j["schedules"]) {
    std::string at = fmt::format("{}: schedules[{}]", origin, i++);
    if (!e.is_object() || !e.contains("key") || !e["key"].is_string() || !e.contains("schedule"))
      fail("{}: an entry needs a string 'key' and a 'schedule'", at);
    std::optional<ScheduleKey> k = ScheduleKey::parse(e["key"].get<std::string>());
    if (!k)
      fail("{}: key '{}' is not <16 hex digits>-<16 hex digits>", at, e["key"].get<std::string>());
    Expected<Schedule, std::string> s = Schedule::fromJson(e["schedule"]);
    if (!s)
      fail("{}.schedule: {}", at, s.error());
    if (f.find(*k))
      fail("{}: key {} appears twice", at, k->str());
    std::string group =
        e.contains("group") && e["group"].is_string() ? e["group"].get<std::string>() : "";
    f.put(*k, std::move(*s), std::move(group));
  }
  return f;
}

ScheduleFile ScheduleFile::load(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    fail("{}: cannot open the schedule file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, false);
  if (j.is_discarded())
    fail("{}: not valid JSON", path);
  return fromJson(j, path);
}

void ScheduleFile::save(const std::string &path) const {
  writeFileAtomic(path, toJson().dump(2) + "\n");
}

} // namespace npuc::npu
