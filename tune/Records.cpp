// Records.cpp - reading, appending and reducing tuning records (see Records.h).
#include "tune/Records.h"

#include "support/Error.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace npuc::tune {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Record::line() const {
  json j;
  j["version"] = kRecordVersion;
  j["key"] = key.str();
  j["target"] = fmt::format("{:016x}", key.target);
  j["group"] = group;
  j["schedule"] = schedule.toJson();
  j["default"] = isDefault;
  j["seconds"] = seconds;
  if (cycles && isDefault) {
    j["roofline"] = roofline;
    j["macs"] = macs;
  }
  if (cycles)
    j["cycles"] = *cycles;
  else
    j["error"] = error;
  return j.dump();
}

namespace {

Expected<Record, std::string> fromJson(const json &j) {
  if (!j.is_object())
    return unexpected(std::string("a record is a JSON object"));
  auto field = [&](const char *name, json::value_t a, json::value_t b) -> const json * {
    auto it = j.find(name);
    if (it == j.end() || (it->type() != a && it->type() != b))
      return nullptr;
    return &*it;
  };
  const json::value_t uns = json::value_t::number_unsigned, num = json::value_t::number_integer,
                      str = json::value_t::string;
  const json *v = field("version", uns, num);
  if (!v || v->get<int64_t>() != kRecordVersion)
    return unexpected(fmt::format("\"version\" must be {}", kRecordVersion));
  Record r;
  const json *key = field("key", str, str);
  std::optional<npu::ScheduleKey> k =
      key ? npu::ScheduleKey::parse(key->get<std::string>()) : std::nullopt;
  if (!k)
    return unexpected(std::string("\"key\" must be \"<16 hex digits>-<16 hex digits>\""));
  r.key = *k;
  const json *target = field("target", str, str);
  if (!target || target->get<std::string>() != fmt::format("{:016x}", k->target))
    return unexpected(std::string("\"target\" must be the key's target hash"));
  const json *group = field("group", str, str);
  const json *def = field("default", json::value_t::boolean, json::value_t::boolean);
  const json *secs = field("seconds", json::value_t::number_float, uns);
  if (!group || !def || (!secs && !field("seconds", num, num)))
    return unexpected(std::string("\"group\" (string), \"default\" (bool) and \"seconds\" "
                                  "(number) are required"));
  r.group = group->get<std::string>();
  r.isDefault = def->get<bool>();
  r.seconds = j.at("seconds").get<double>();
  if (!j.contains("schedule"))
    return unexpected(std::string("\"schedule\" is required"));
  Expected<npu::Schedule, std::string> s = npu::Schedule::fromJson(j.at("schedule"));
  if (!s)
    return unexpected("\"schedule\": " + s.error());
  r.schedule = std::move(*s);
  if (const json *c = field("cycles", uns, num); c && !j.contains("error")) {
    r.cycles = c->get<int64_t>();
    if (const json *roof = field("roofline", uns, num))
      r.roofline = roof->get<int64_t>();
    if (const json *macs = field("macs", uns, num))
      r.macs = macs->get<int64_t>();
  } else if (const json *e = field("error", str, str); e && !j.contains("cycles")) {
    r.error = e->get<std::string>();
  } else {
    return unexpected(std::string("exactly one of \"cycles\" (integer) and \"error\" (string)"));
  }
  return r;
}

} // namespace

Expected<Record, std::string> Record::parse(const std::string &line) {
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return unexpected(std::string("not valid JSON"));
  return fromJson(j);
}

RecordLog readRecords(const std::string &path) {
  RecordLog log;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    fail("{}: the tuning log is a directory", path);
  if (!fs::exists(path, ec))
    return log;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail("{}: cannot read the tuning log", path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  size_t at = 0;
  for (int lineNo = 1; at < text.size(); ++lineNo) {
    const size_t nl = text.find('\n', at);
    const bool complete = nl != std::string::npos;
    const std::string line = text.substr(at, complete ? nl - at : std::string::npos);
    Expected<Record, std::string> r = Record::parse(line);
    if (!r && !complete) { // a killed run's last line: what it measured there is lost
      log.warnings.push_back(
          fmt::format("{}:{}: dropping a truncated last line (a killed run?)", path, lineNo));
      break;
    }
    if (!r)
      fail("{}:{}: malformed tuning record: {}", path, lineNo, r.error());
    log.records.push_back(std::move(*r));
    at = complete ? nl + 1 : text.size();
    log.validBytes = complete ? at : text.size();
  }
  return log;
}

RecordWriter::RecordWriter(const std::string &path, uint64_t validBytes) : path_(path) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    fail("{}: the tuning log is a directory", path);
  if (fs::exists(path, ec) && fs::file_size(path, ec) != validBytes) {
    fs::resize_file(path, validBytes, ec);
    if (ec)
      fail("{}: cannot cut off the truncated last line: {}", path, ec.message());
  }
  out_.open(path, std::ios::binary | std::ios::app);
  if (!out_)
    fail("{}: cannot open the tuning log for appending", path);
}

void RecordWriter::append(const Record &r) {
  out_ << r.line() << '\n';
  out_.flush();
  if (!out_)
    fail("{}: cannot write the tuning log", path_);
}

npu::ScheduleFile bestSchedules(const std::vector<Record> &records, size_t alternatives) {
  std::map<npu::ScheduleKey, std::vector<const Record *>> byKey;
  for (const Record &r : records)
    if (r.ok())
      byKey[r.key].push_back(&r);
  npu::ScheduleFile f;
  for (auto &[key, rs] : byKey) {
    // Fastest first; among equals the one recorded first (merged logs keep their order).
    std::stable_sort(rs.begin(), rs.end(),
                     [](const Record *a, const Record *b) { return *a->cycles < *b->cycles; });
    f.put(key, rs.front()->schedule, rs.front()->group);
    std::vector<npu::Schedule> &alt = f.alternativesOf(key);
    for (size_t i = 1; i < rs.size() && alt.size() < alternatives; ++i)
      if (rs[i]->schedule != rs.front()->schedule &&
          std::find(alt.begin(), alt.end(), rs[i]->schedule) == alt.end())
        alt.push_back(rs[i]->schedule);
  }
  return f;
}

} // namespace npuc::tune
