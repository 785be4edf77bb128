// Records.h - tuning records: one JSON line per measured candidate (docs/TUNING.md).
//
// A line (keys sorted, so the same record is the same bytes):
//   {"cycles": 1234, "default": false, "group": "/conv1/Conv", "key": "<group>-<target>",
//    "schedule": {"decisions": {...}, "strategy": "tensor-unit"}, "seconds": 0.012,
//    "target": "<target hash>", "version": 1}
// A failed candidate has "error": "<why>" instead of "cycles"; the default's lowered record adds
// "roofline" and "macs" (the group's, as GroupInfo reports them). The log is appended to and
// flushed as candidates are measured, so a killed run loses at most the line it was writing:
// reading drops a truncated last line (no final newline, not valid JSON) with a warning, and a
// run appending to the log first cuts it off. Any other malformed line is bad input (an
// npuc::Error naming file:line). Logs of several runs or machines merge by concatenation.
#pragma once

#include "npu/schedule/Schedule.h"

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace npuc::tune {

inline constexpr int kRecordVersion = 1;

struct Record {
  npu::ScheduleKey key;
  std::string group; // the representative group's name (informational)
  npu::Schedule schedule;
  std::optional<int64_t> cycles; // nullopt: the point did not lower
  std::string error;             // why not
  bool isDefault = false;        // the untuned default's point
  double seconds = 0;            // wall time of the measurement
  /// The untuned default's record also keeps the group's roofline and MACs (GroupInfo), which a
  /// resumed run needs without measuring the default again.
  int64_t roofline = 0, macs = 0;

  bool ok() const { return cycles.has_value(); }
  /// The line's JSON (without the newline).
  std::string line() const;
  /// Parses one line; the error names the field at fault.
  static Expected<Record, std::string> parse(const std::string &line);
};

struct RecordLog {
  std::vector<Record> records;
  std::vector<std::string> warnings; // the truncated last line, when dropped
  /// Bytes of the complete lines read: where a run appending to the log starts writing.
  uint64_t validBytes = 0;
};

/// Reads a log; a missing file is an empty log. Throws npuc::Error for a malformed line
/// ("FILE:LINE: ...") or a path that is a directory or cannot be read.
RecordLog readRecords(const std::string &path);

/// Appends records to a log, each flushed as written.
class RecordWriter {
public:
  /// Opens `path` for appending at `validBytes` (RecordLog::validBytes: a truncated last line is
  /// cut off first); creates the file when missing. Throws npuc::Error when it cannot.
  RecordWriter(const std::string &path, uint64_t validBytes);
  void append(const Record &r);

private:
  std::string path_;
  std::ofstream out_;
};

/// The fastest lowered record of each key (ties: the first in the log), with up to `alternatives`
/// next fastest distinct points of the key (ScheduleFile::Entry::alternatives): what
/// `npuc compile --tuning-log` applies, the best point where it fits its group's context and
/// otherwise the fastest alternative that does.
npu::ScheduleFile bestSchedules(const std::vector<Record> &records, size_t alternatives = 7);

} // namespace npuc::tune
