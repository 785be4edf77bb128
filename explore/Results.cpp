// Results.cpp - reading and appending results.jsonl (contract in Results.h).
#include "explore/Results.h"

#include "support/Error.h"
#include "support/File.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace npuc::explore {

using nlohmann::json;

json resultsHeader(const SweepSpec &s) {
  json axes = json::array(), objectives = json::array(), models = json::array();
  for (const Axis &a : s.axes)
    axes.push_back(a.name);
  for (Metric m : s.objectives)
    objectives.push_back(metricName(m));
  for (const ModelSpec &m : s.models)
    models.push_back(m.name);
  // The spec's absolute path: `npuc explore report --roofline` loads it again from anywhere.
  const std::string spec = std::filesystem::absolute(s.path).lexically_normal().string();
  return {{"npuc_explore", 1},        {"sweep", s.id},   {"spec", spec}, {"axes", axes},
          {"objectives", objectives}, {"models", models}};
}

Results readResults(const std::string &path, bool *dropped) {
  const std::string text = readFile(path);
  Results r;
  if (dropped)
    *dropped = false;
  std::istringstream in(text);
  std::string line;
  size_t lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.empty())
      continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception &e) {
      // Only the last line can be cut short by a kill, and it then has no newline.
      const bool last = in.eof() && !text.empty() && text.back() != '\n';
      if (last && lineNo > 1) {
        if (dropped)
          *dropped = true;
        break;
      }
      fail("{}:{}: not a JSON record: {}", path, lineNo, e.what());
    }
    if (lineNo == 1) {
      if (!j.is_object() || !j.contains("npuc_explore") || !j.contains("sweep"))
        fail("{}:1: not an npuc explore results file (no header line)", path);
      r.header = j;
      continue;
    }
    if (!j.is_object() || !j.contains("index") || !j.contains("status"))
      fail("{}:{}: not a point record (no index or status)", path, lineNo);
    if (j.value("sweep", "") != r.header.at("sweep").get<std::string>())
      fail("{}:{}: a record of another sweep ({}) than the header's ({})", path, lineNo,
           j.value("sweep", ""), r.header.at("sweep").get<std::string>());
    r.records.push_back(std::move(j));
  }
  if (r.header.is_null())
    fail("{}: empty results file", path);
  return r;
}

ResultsWriter::ResultsWriter(const std::string &path, const SweepSpec &s) : path_(path) {
  const json header = resultsHeader(s);
  std::string content;
  if (std::filesystem::exists(path)) {
    Results old = readResults(path, &dropped_);
    if (old.header.value("sweep", "") != s.id)
      fail("{} holds the results of another sweep ({}, from {}); this sweep is {}. Choose another "
           "output directory or remove the file",
           path, old.header.value("sweep", ""), old.header.value("spec", ""), s.id);
    existing_ = std::move(old.records);
    if (dropped_) { // rewrite without the cut line, then append after it
      content = header.dump() + "\n";
      for (const json &j : existing_)
        content += j.dump() + "\n";
      writeFileAtomic(path, content);
    }
  } else {
    writeFileAtomic(path, header.dump() + "\n");
  }
  f_ = std::fopen(path.c_str(), "ab");
  if (!f_)
    fail("{}: cannot open for appending: {}", path, std::strerror(errno));
}

ResultsWriter::~ResultsWriter() {
  if (f_)
    std::fclose(f_);
}

void ResultsWriter::append(const json &record) {
  const std::string line = record.dump() + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  if (std::fwrite(line.data(), 1, line.size(), f_) != line.size() || std::fflush(f_) != 0)
    fail("{}: cannot append a record: {}", path_, std::strerror(errno));
}

} // namespace npuc::explore
