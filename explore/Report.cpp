// Report.cpp - tables, the Pareto front and plots of a sweep's results (contract in Report.h).
#include "explore/Report.h"

#include "explore/Evaluate.h"
#include "explore/Pareto.h"
#include "support/Error.h"
#include "support/File.h"
#include "support/Plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace npuc::explore {

using nlohmann::json;

namespace {

std::vector<Metric> objectivesOf(const Results &r, const ReportOptions &o) {
  if (!o.objectives.empty())
    return o.objectives;
  std::vector<Metric> ms;
  for (const json &name : r.header.value("objectives", json::array())) {
    std::optional<Metric> m = metricFromName(name.get<std::string>());
    if (!m)
      fail("results header: unknown objective '{}' (expected one of: {})", name.get<std::string>(),
           metricNameList());
    ms.push_back(*m);
  }
  if (ms.empty())
    fail("results header names no objective; give --objectives");
  return ms;
}

std::vector<std::string> axesOf(const Results &r) {
  std::vector<std::string> axes;
  for (const json &a : r.header.value("axes", json::array()))
    axes.push_back(a.get<std::string>());
  return axes;
}

std::string csvField(const std::string &s) {
  if (s.find_first_of(",\"\n") == std::string::npos)
    return s;
  std::string q = "\"";
  for (char c : s)
    q += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  return q + "\"";
}

std::string valueText(const json &v) {
  if (v.is_string())
    return v.get<std::string>();
  if (v.is_array()) {
    std::string s;
    for (const json &e : v) {
      if (!s.empty())
        s += 'x';
      s += valueText(e);
    }
    return s;
  }
  return v.dump();
}

std::string csv(const Results &r, const std::vector<size_t> &order) {
  const std::vector<std::string> axes = axesOf(r);
  std::vector<std::string> models;
  for (const json &m : r.header.value("models", json::array()))
    models.push_back(m.get<std::string>());
  std::string out = "index,status";
  for (const std::string &a : axes) {
    out += ',';
    out += csvField(a);
  }
  for (Metric m : kAllMetrics) {
    out += ',';
    out += metricName(m);
  }
  for (const std::string &m : models) {
    out += ',';
    out += csvField(m + ".cycles");
  }
  out += ",reason\n";
  for (size_t i : order) {
    const json &rec = r.records[i];
    out +=
        fmt::format("{},{}", rec.at("index").get<int64_t>(), rec.at("status").get<std::string>());
    const json point = rec.value("point", json::object());
    for (const std::string &a : axes) {
      out += ',';
      out += csvField(point.contains(a) ? valueText(point.at(a)) : "");
    }
    for (Metric m : kAllMetrics) {
      std::optional<double> v = metricOf(rec, m);
      out += v ? fmt::format(",{:.10g}", *v) : ",";
    }
    for (const std::string &m : models) {
      const json *mr = rec.contains("models") && rec.at("models").contains(m)
                           ? &rec.at("models").at(m)
                           : nullptr;
      out += mr ? fmt::format(",{}", mr->at("cycles").get<int64_t>()) : ",";
    }
    out += ',';
    out += csvField(rec.value("reason", ""));
    out += '\n';
  }
  return out;
}

std::string axisLabel(Metric m) {
  switch (m) {
  case Metric::Cycles:
    return "NPU cycles (sum over models)";
  case Metric::LatencyUs:
    return "latency, us (sum over models)";
  case Metric::EnergyUj:
    return "energy, uJ (sum over models)";
  case Metric::AreaMm2:
    return "area, mm^2";
  case Metric::DramBytes:
    return "DRAM bytes (sum over models)";
  case Metric::MacUtilization:
    return "MAC utilisation";
  case Metric::Edp:
    return "energy-delay product, uJ*us";
  }
  return metricName(m);
}

bool wideRange(const std::vector<double> &v) {
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return *lo > 0 && *hi / *lo > 30;
}

void plotPareto(const Results &r, const std::vector<size_t> &ok, const std::vector<size_t> &front,
                const std::vector<Metric> &obj, const std::string &dir) {
  const Metric x = obj.size() >= 2 ? obj[0] : Metric::AreaMm2;
  const Metric y = obj.size() >= 2 ? obj[1] : obj[0];
  Metric c = Metric::EnergyUj;
  if (obj.size() >= 3)
    c = obj[2];
  else if (x == Metric::EnergyUj || y == Metric::EnergyUj)
    c = x == Metric::AreaMm2 || y == Metric::AreaMm2 ? Metric::Cycles : Metric::AreaMm2;
  ScatterPlot p;
  p.title = fmt::format("{} design points, {} Pareto-optimal ({})", ok.size(), front.size(),
                        r.header.value("spec", ""));
  p.xlabel = axisLabel(x);
  p.ylabel = axisLabel(y);
  p.colorLabel = axisLabel(c);
  // The front under every objective as rings; with more than two objectives, the front of the
  // two drawn ones as a staircase line too (joining a 3-D front in x order would zigzag).
  ScatterSeries all{"design points", {}, ScatterStyle::Palette},
      best{obj.size() > 2 ? "Pareto front (all objectives)" : "Pareto front",
           {},
           obj.size() > 2 ? ScatterStyle::Rings : ScatterStyle::RingsJoined},
      flat{"Pareto front of these two", {}, ScatterStyle::RingsJoined};
  std::vector<double> xs, ys;
  std::vector<std::vector<double>> xy;
  auto pointOf = [&](size_t i) {
    const json &rec = r.records[i];
    return ScatterPoint{*metricOf(rec, x), *metricOf(rec, y), *metricOf(rec, c)};
  };
  for (size_t i : ok) {
    all.points.push_back(pointOf(i));
    xs.push_back(all.points.back().x);
    ys.push_back(all.points.back().y);
    xy.push_back({maximised(x) ? -xs.back() : xs.back(), maximised(y) ? -ys.back() : ys.back()});
  }
  for (size_t i : front)
    best.points.push_back(pointOf(i));
  for (size_t k : paretoFront(xy))
    flat.points.push_back(pointOf(ok[k]));
  for (ScatterSeries *s : {&best, &flat})
    std::sort(s->points.begin(), s->points.end(),
              [](const ScatterPoint &a, const ScatterPoint &b) { return a.x < b.x; });
  p.logX = wideRange(xs);
  p.logY = wideRange(ys);
  p.series = {all, best};
  if (obj.size() > 2)
    p.series.push_back(flat);
  for (const char *ext : {".png", ".svg"})
    plotScatter(dir + "/pareto" + ext, p);
}

void plotSensitivity(const Results &r, const std::vector<size_t> &ok, Metric m,
                     const std::string &dir) {
  for (const std::string &axis : axesOf(r)) {
    // Values in order of first appearance by point index; x is the value when every value is a
    // number, else its position.
    std::vector<std::string> keys;
    std::map<std::string, std::vector<double>> by;
    std::map<std::string, std::optional<double>> numeric;
    for (size_t i : ok) {
      const json &v = r.records[i].at("point").at(axis);
      const std::string k = valueText(v);
      if (!by.count(k)) {
        keys.push_back(k);
        numeric[k] = v.is_number()    ? std::optional<double>(v.get<double>())
                     : v.is_boolean() ? std::optional<double>(v.get<bool>() ? 1 : 0)
                     : v.is_string()  ? parseQuantity(v.get<std::string>())
                                      : std::nullopt;
      }
      by[k].push_back(*metricOf(r.records[i], m));
    }
    if (keys.size() < 2)
      continue;
    bool allNumeric = true;
    for (const std::string &k : keys)
      allNumeric = allNumeric && numeric[k].has_value();
    std::vector<std::pair<double, std::string>> xs;
    for (size_t i = 0; i < keys.size(); ++i)
      xs.push_back({allNumeric ? *numeric[keys[i]] : double(i), keys[i]});
    std::sort(xs.begin(), xs.end());
    Series best{"best", {}}, median{"median", {}};
    for (const auto &[x, k] : xs) {
      std::vector<double> v = by[k];
      std::sort(v.begin(), v.end());
      best.xy.push_back({x, maximised(m) ? v.back() : v.front()});
      median.xy.push_back({x, v[v.size() / 2]});
    }
    std::string labels;
    if (!allNumeric)
      for (size_t i = 0; i < xs.size(); ++i)
        labels += fmt::format("{}{}={}", i ? ", " : " (", i, xs[i].second) +
                  (i + 1 == xs.size() ? ")" : "");
    for (const char *ext : {".png", ".svg"})
      plotLines(dir + "/sensitivity-" + sanitizeName(axis) + ext,
                fmt::format("{} against {}", metricName(m), axis), axis + labels, axisLabel(m),
                {best, median});
  }
}

} // namespace

std::vector<size_t> paretoRecords(const Results &r, const std::vector<Metric> &objectives) {
  std::vector<size_t> ok;
  std::vector<std::vector<double>> pts;
  for (size_t i = 0; i < r.records.size(); ++i) {
    if (r.records[i].value("status", "") != "ok")
      continue;
    std::vector<double> v;
    for (Metric m : objectives) {
      std::optional<double> x = metricOf(r.records[i], m);
      NPUC_ASSERT(x.has_value(), "an ok record carries every metric");
      v.push_back(maximised(m) ? -*x : *x);
    }
    ok.push_back(i);
    pts.push_back(v);
  }
  std::vector<size_t> front;
  for (size_t k : paretoFront(pts))
    front.push_back(ok[k]);
  std::sort(front.begin(), front.end(), [&](size_t a, size_t b) {
    const double x = *metricOf(r.records[a], objectives[0]),
                 y = *metricOf(r.records[b], objectives[0]);
    return x != y ? (maximised(objectives[0]) ? x > y : x < y)
                  : r.records[a].at("index") < r.records[b].at("index");
  });
  return front;
}

std::string writeReport(const Results &r, const std::string &dir, const ReportOptions &o) {
  const std::vector<Metric> obj = objectivesOf(r, o);
  std::vector<size_t> order(r.records.size()), ok;
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return r.records[a].at("index").get<int64_t>() < r.records[b].at("index").get<int64_t>();
  });
  std::map<std::string, int> count;
  for (size_t i : order) {
    ++count[r.records[i].at("status").get<std::string>()];
    if (r.records[i].at("status") == "ok")
      ok.push_back(i);
  }
  const std::vector<size_t> front = paretoRecords(r, obj);
  writeFileAtomic(dir + "/results.csv", csv(r, order));
  writeFileAtomic(dir + "/pareto.csv", csv(r, front));
  if (o.plots && !ok.empty()) {
    plotPareto(r, ok, front, obj, dir);
    plotSensitivity(r, ok, obj[0], dir);
  }
  std::string out = fmt::format("{} point(s):", r.records.size());
  for (const auto &[status, n] : count)
    out += fmt::format(" {} {}", n, status);
  out += fmt::format("\nPareto front under {}", metricName(obj[0]));
  for (size_t i = 1; i < obj.size(); ++i)
    out += std::string(", ") + metricName(obj[i]);
  out += fmt::format(": {} point(s)\n", front.size());
  if (ok.empty() && count.count("partial"))
    out += "  (no point is ok: every evaluated point ran some group on the CPU, so its NPU "
           "figures leave work out; the models' cpu_group_reasons say why; `allow_cpu_groups: "
           "true` ranks such points anyway)\n";
  for (size_t i : front) {
    const json &rec = r.records[i];
    std::string vals;
    for (const auto &[axis, v] : rec.at("point").items())
      vals += fmt::format("{}{}={}", vals.empty() ? "" : " ", axis, valueText(v));
    std::string ms;
    for (Metric m : obj)
      ms += fmt::format("  {} {:.6g}", metricName(m), *metricOf(rec, m));
    out += fmt::format("  #{:<6} {}{}\n", rec.at("index").get<int64_t>(), vals, ms);
  }
  return out;
}

} // namespace npuc::explore
