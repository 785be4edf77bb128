// Schedule.h - a kernel's schedule as data: the strategy and the named decisions of one point of
// its space (npu/schedule/Space.h), serialisable, and keyed by what the group and target are.
//
// Following TVM's MetaSchedule, a schedule is a value that replays: lowering a group with the
// same Schedule on the same target in the same context produces the same kernel. The default
// compile records the point each kernel's heuristic picked (`npuc compile --emit-schedule`);
// `npuc compile --schedule FILE` forces the points a file names, and the auto-tuner stores the
// points it measures in the same JSON form.
//
// JSON of one schedule (keys sorted, so the same schedule is the same bytes in every run):
//   {"decisions": {"buffers": 2, "tk": 64, "toc": 64, "toh": 7}, "strategy": "tensor-unit"}
//
// A schedule file:
//   {"schedules": [{"group": "conv1", "key": "<group hash>-<target hash>", "schedule": {...}}],
//    "version": 1}
// entries sorted by key; "group" names one group that had the key (informational only).
//
// Hashing contract (ScheduleKey):
// - groupHash(g, grp) covers the group's structure and nothing else: per node in the group's
//   order its op type and attributes; per node input where it comes from (a group input by its
//   position in grp.inputs, a node of the group by position and output index, or a constant) and
//   its shape and dtype; which values leave the group (grp.outputs, by position). It does NOT
//   cover names, constant values (weights, biases, clip bounds) or where tensors live (DRAM
//   layout, residency): two ResNet blocks with equal shapes share a key. Whatever is not in the
//   hash may still make a forced point illegal in one context and not another (a smaller L1
//   window beside a resident tensor); legal() is always checked against the actual context.
// - targetHash(t) covers every field of the parsed target that code generation reads: memory
//   levels (sizes, banks, alignment), engines, the tensor and vector units, DRAM, token queue
//   depth and every instruction description (opcodes, fields, fixed fields, timing). It does NOT
//   cover the target's name, path or YAML text (comments and formatting do not change the key).
// - Both are FNV-1a (support/Hash.h) over a canonical text; a change of that text is a change of
//   every key, so kKeyVersion is part of the file format and bumps with it.
#pragma once

#include "graph/Graph.h"
#include "isa/Target.h"
#include "support/Expected.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace npuc::npu {

/// The kernel family and strategy that runs a group: the first decision of every schedule (for a
/// depthwise conv, the "sketch" between the tensor unit and the vector unit).
enum class Strategy {
  TensorUnit,      // Conv/Gemm/MatMul as tiled implicit GEMM (LowerMatmul.cpp)
  DepthwiseVector, // depthwise conv on the vector unit (LowerDepthwise.cpp)
  BatchMatmul,     // MatMul of two activations (LowerBatchMatmul.cpp)
  Attention,       // scores, Softmax and the second product in one kernel (LowerAttention.cpp)
  Pool,            // window pooling (LowerVector.cpp)
  GlobalPool,      // global average pooling (LowerVector.cpp)
  Eltwise,         // elementwise chains (LowerVector.cpp)
  Concat,          // LowerConcat.cpp
  LoopNest,        // the group's reference loops through emit-npu (LowerLoopNest.cpp)
  View             // layout ops that cancel: no code
};
const char *strategyName(Strategy s);
std::optional<Strategy> strategyFromName(std::string_view name);

struct Schedule {
  Strategy strategy = Strategy::View;
  /// Named integer decisions (tile sizes, buffer counts, loop order as 0/1, ...). Sorted by
  /// name, which makes the JSON stable.
  std::map<std::string, int64_t> decisions;

  bool has(const std::string &name) const { return decisions.count(name) != 0; }
  /// The decision's value; asserts that the space set it.
  int64_t get(const std::string &name) const;
  Schedule &set(const std::string &name, int64_t v) {
    decisions[name] = v;
    return *this;
  }
  bool operator==(const Schedule &o) const = default;

  nlohmann::json toJson() const;
  /// Parses one schedule; the error says which field is wrong (the caller adds the file).
  static Expected<Schedule, std::string> fromJson(const nlohmann::json &j);
  /// "tensor-unit{buffers=2,tk=64,toc=64,toh=7}" for messages and `npuc inspect`.
  std::string str() const;
};

/// What a schedule applies to: the group's structure and the target (see the contract above).
struct ScheduleKey {
  uint64_t group = 0;
  uint64_t target = 0;
  bool operator==(const ScheduleKey &o) const = default;
  auto operator<=>(const ScheduleKey &o) const = default;
  /// 16 + 1 + 16 lowercase hex digits: "<group>-<target>".
  std::string str() const;
  static std::optional<ScheduleKey> parse(std::string_view s);
};

inline constexpr int kKeyVersion = 1;

uint64_t groupHash(const graph::Graph &g, const graph::FusedGroup &grp);
uint64_t targetHash(const isa::Target &t);
inline ScheduleKey scheduleKey(const graph::Graph &g, const graph::FusedGroup &grp,
                               const isa::Target &t) {
  return {groupHash(g, grp), targetHash(t)};
}

/// A forced schedule (`npuc compile --schedule`) that the group cannot take: bad input, which no
/// fallback may hide (the driver moves groups that fail with other errors to the CPU).
class ScheduleError : public Error {
public:
  explicit ScheduleError(const std::string &msg) : Error(msg) {}
};

/// Schedules by key: what `--emit-schedule` writes and `--schedule` reads.
class ScheduleFile {
public:
  struct Entry {
    Schedule schedule;
    std::string group; // a group that had this key (informational)
    /// Tuning records only (`npuc compile --tuning-log`): the next fastest points of the key,
    /// fastest first, which a group takes in order where `schedule` does not fit its context
    /// (a smaller L1 window beside resident tensors than the one-group measurement had). Not
    /// serialised: a schedule file names one point per key.
    std::vector<Schedule> alternatives;
  };
  /// Adds or replaces the key's schedule.
  void put(const ScheduleKey &k, Schedule s, std::string group);
  const Entry *find(const ScheduleKey &k) const;
  /// The alternatives of a key put before (asserts it is there).
  std::vector<Schedule> &alternativesOf(const ScheduleKey &k);
  const std::map<ScheduleKey, Entry> &entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

  nlohmann::json toJson() const;
  /// Throws npuc::Error naming `origin` and the entry and field at fault (bad input).
  static ScheduleFile fromJson(const nlohmann::json &j, const std::string &origin);
  static ScheduleFile load(const std::string &path);
  /// Writes toJson() indented, with a final newline (the same bytes for the same entries).
  void save(const std::string &path) const;

private:
  std::map<ScheduleKey, Entry> entries_;
};

} // namespace npuc::npu
