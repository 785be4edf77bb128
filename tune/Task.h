// Task.h - tuning tasks: a model's NPU groups, deduplicated by schedule key.
//
// The auto-tuner (docs/TUNING.md) searches each distinct kernel once: groups with the same
// structure on the same target share a key (npu::scheduleKey: the group's structural hash and
// the target's hash), hence a schedule space and a best point, so they form one task whose weight
// is the number of groups that have the key. A task is measured on its representative group (the
// first of its groups in execution order). Its sketches are the strategies that may run it: the
// plan's own (npu::strategiesFor: a depthwise conv on the tensor unit or on the vector unit), and
// on fp16 targets the loop-nest kernel, which runs any group a hand-written kernel runs (as a
// forced point may choose: KernelSelect.cpp). A group with nothing to decide (a view: one point
// without decisions) is recorded as untunable and not searched.
#pragma once

#include "npu/hw/Hw.h"
#include "npu/kernels/Plan.h"
#include "npu/schedule/Schedule.h"
#include "npu/schedule/Space.h"
#include "tools/driver/Compiler.h"

#include <string>
#include <vector>

namespace npuc::tune {

struct Task {
  npu::ScheduleKey key;
  std::string name;        // the representative group's name
  int group = -1;          // the representative group's id in the model's graph
  std::vector<int> groups; // every NPU group with the key, in execution order
  std::vector<npu::Strategy> sketches;
  int weight() const { return static_cast<int>(groups.size()); }
};

/// NPU groups that are not searched, and why (their cycles are what the default compile gives).
struct Untunable {
  npu::ScheduleKey key;
  std::string name;
  int weight = 0;
  std::string why;
};

struct TaskSet {
  std::vector<Task> tasks; // in the order their first group executes
  std::vector<Untunable> untunable;
};

/// The tasks of a compiled model's NPU groups (CPU groups are not the tuner's).
TaskSet extractTasks(const driver::CompiledModel &m);

/// The context a task is searched and measured in: its group alone in a one-group segment, the
/// whole on-chip window, every tensor in DRAM, double buffering allowed.
npu::SpaceContext measuringContext(const npu::Hw &hw);

/// The strategies that may run a group with plan `p` (the sketches), the plan's first.
std::vector<npu::Strategy> sketchesFor(const npu::GroupPlan &p, const npu::Hw &hw);

/// The plan a sketch's space is built on: `p` itself, or for the loop-nest sketch of a group a
/// hand-written kernel runs, the loop-nest plan of `grp` (as a forced loop-nest point makes it).
npu::GroupPlan planFor(npu::Strategy sketch, const npu::GroupPlan &p, const graph::FusedGroup &grp);

/// The target's hardware view; a target the backend cannot use is an npuc::Error.
npu::Hw deriveHw(const isa::Target &t);

} // namespace npuc::tune
