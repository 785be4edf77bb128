// Results.h - a sweep's results.jsonl: a header line naming the sweep, then one record per
// visited point (explore/Evaluate.h), appended and flushed as each point finishes, so that a
// killed sweep loses only the points in flight and a rerun resumes (docs/EXPLORE.md).
#pragma once

#include "explore/Sweep.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace npuc::explore {

struct Results {
  nlohmann::json header; // {"npuc_explore": 1, "sweep": id, "axes", "objectives", ...}
  std::vector<nlohmann::json> records; // in file order
};

/// The header a sweep's results file starts with.
nlohmann::json resultsHeader(const SweepSpec &s);

/// Reads a results file. A last line cut short (a sweep killed mid-write) is dropped, and
/// `*dropped` says so; any other bad line is an npuc::Error naming the file and line.
Results readResults(const std::string &path, bool *dropped = nullptr);

/// Appends records to a sweep's results file, creating it with the header, or, when it exists,
/// checking that its header is this sweep's (another sweep's results are never appended to) and
/// dropping a cut-short last line. Thread-safe.
class ResultsWriter {
public:
  /// Opens `path` for `s`; the records already there are in existing().
  ResultsWriter(const std::string &path, const SweepSpec &s);
  ~ResultsWriter();
  ResultsWriter(const ResultsWriter &) = delete;
  ResultsWriter &operator=(const ResultsWriter &) = delete;
  const std::vector<nlohmann::json> &existing() const { return existing_; }
  bool droppedCutLine() const { return dropped_; }
  void append(const nlohmann::json &record);

private:
  std::string path_;
  std::FILE *f_ = nullptr;
  std::mutex mu_;
  std::vector<nlohmann::json> existing_;
  bool dropped_ = false;
};

} // namespace npuc::explore
