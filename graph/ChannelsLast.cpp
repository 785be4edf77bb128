// ChannelsLast.cpp - channels-last 4-D regions as 3-D ones (see ChannelsLast.h).
#include "graph/ChannelsLast.h"

#include "graph/Ops.h"
#include "support/Error.h"

#include <algorithm>
#include <map>
#include <optional>

namespace npuc::graph {

namespace {

// The two dims a region merges: dims 1 and 2 of its values.
struct Spatial {
  int64_t h = 0, w = 0;
};

// `s` right-aligned to rank 4 (leading unit dims added), or nullopt above rank 4.
std::optional<Shape> aligned4(const Shape &s) {
  if (s.size() > 4)
    return std::nullopt;
  Shape a(4 - s.size(), 1);
  a.insert(a.end(), s.begin(), s.end());
  return a;
}

// A value of the region: rank 4 with the region's H and W.
bool isFull(const Shape &s, Spatial sp) {
  return s.size() == 4 && s[1] == sp.h && s[2] == sp.w;
}

// An operand that broadcasts against the region's values the same way once H and W merge: right-
// aligned to rank 4, it has both H and W or neither (unit dims there).
bool mergeable(const Shape &s, Spatial sp) {
  std::optional<Shape> a = aligned4(s);
  return a && (((*a)[1] == sp.h && (*a)[2] == sp.w) || ((*a)[1] == 1 && (*a)[2] == 1));
}

// A mergeable shape with its (right-aligned) dims 1 and 2 merged; rank <= 1 broadcasts as it is.
Shape merged(const Shape &s) {
  if (s.size() <= 1)
    return s;
  const Shape a = *aligned4(s);
  return {a[0], a[1] * a[2], a[3]};
}

bool isMap(OpKind k) {
  return isElementwiseOp(k) || isExtUnaryOp(k) || isExtBroadcastOp(k);
}

bool isLastAxis(int64_t axis) {
  return axis == 3 || axis == -1;
}

// An op over the last axis alone of its rank-4 input (the importer normalises Reduce* axes to a
// sorted non-negative list with keepdims explicit; Softmax's is the opset-13 single axis).
bool overLastAxis(const Node &n) {
  switch (n.kind) {
  case OpKind::Softmax:
  case OpKind::LogSoftmax:
  case OpKind::LayerNormalization:
    return isLastAxis(n.attrInt("axis", -1));
  default: // ArgMax/ArgMin name an `axis`, not `axes`: never a region of theirs
    return isReduceOp(n.kind) && n.attrInts("axes") == std::vector<int64_t>{3} &&
           n.attrInt("keepdims", 1) == 1;
  }
}

// The inputs of n with the region's shape (or broadcasting against it): every operand of a map,
// the data input of the others (a MatMul's matrix and LayerNorm's scale and bias stay).
std::vector<size_t> shapedInputs(const Node &n) {
  if (!isMap(n.kind))
    return {0};
  std::vector<size_t> all(n.inputs.size());
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = i;
  return all;
}

class Rewriter {
public:
  explicit Rewriter(Graph &g) : g_(g), region_(g.nodes.size(), -1), uses_(g.useLists()) {}

  int run() {
    const std::vector<NodeId> order = g_.topoOrder();
    std::vector<std::vector<NodeId>> regions;
    for (NodeId id : order)
      if (region_[static_cast<size_t>(id)] < 0 && isSeed(id))
        regions.push_back(grow(id, static_cast<int>(regions.size())));
    for (size_t r = 0; r < regions.size(); ++r) {
      std::vector<NodeId> nodes;
      for (NodeId id : order) // the region in topological order
        if (region_[static_cast<size_t>(id)] == static_cast<int>(r))
          nodes.push_back(id);
      rewrite(nodes, static_cast<int>(r));
    }
    return static_cast<int>(regions.size());
  }

private:
  Graph &g_;
  std::vector<int> region_; // by node: its region, or -1
  // The readers of each value before the rewrite (the new Reshapes and values are not in it).
  const std::vector<std::vector<NodeId>> uses_;

  const Shape &shapeOf(ValueId v) const { return g_.value(v).shape; }

  Spatial spatialOf(ValueId v) const { return {shapeOf(v)[1], shapeOf(v)[2]}; }

  bool admissible(NodeId id, Spatial sp) const {
    const Node &n = g_.node(id);
    if (n.dead || n.outputs.size() != 1 || n.inputs.empty() || !isFull(shapeOf(n.outputs[0]), sp))
      return false;
    if (n.kind == OpKind::MatMul)
      return n.inputs.size() == 2 && isFull(shapeOf(n.inputs[0]), sp) &&
             shapeOf(n.inputs[1]).size() == 2;
    if (isMap(n.kind))
      return std::all_of(n.inputs.begin(), n.inputs.end(),
                         [&](ValueId v) { return v != kNoValue && mergeable(shapeOf(v), sp); });
    return overLastAxis(n) && isFull(shapeOf(n.inputs[0]), sp);
  }

  // A MatMul of a 4-D tensor by a matrix, or an op over the channels of a Permute's result.
  bool isSeed(NodeId id) const {
    const Node &n = g_.node(id);
    if (n.dead || n.inputs.empty() || n.inputs[0] == kNoValue || shapeOf(n.inputs[0]).size() != 4)
      return false;
    const Spatial sp = spatialOf(n.inputs[0]);
    if (!admissible(id, sp))
      return false;
    if (n.kind == OpKind::MatMul)
      return true;
    if (!overLastAxis(n))
      return false;
    const NodeId p = g_.value(n.inputs[0]).producer;
    return p >= 0 && g_.node(p).kind == OpKind::Transpose &&
           g_.node(p).attrInts("perm") == std::vector<int64_t>{0, 2, 3, 1};
  }

  // The region `r` around `seed`: admissible producers of its full-shaped inputs and admissible
  // readers of its values, transitively.
  std::vector<NodeId> grow(NodeId seed, int r) {
    const Spatial sp = spatialOf(g_.node(seed).inputs[0]);
    std::vector<NodeId> members{seed}, work{seed};
    region_[static_cast<size_t>(seed)] = r;
    auto visit = [&](NodeId id) {
      if (id >= 0 && region_[static_cast<size_t>(id)] < 0 && admissible(id, sp)) {
        region_[static_cast<size_t>(id)] = r;
        members.push_back(id);
        work.push_back(id);
      }
    };
    while (!work.empty()) {
      const NodeId id = work.back();
      work.pop_back();
      for (ValueId v : g_.node(id).inputs)
        if (v != kNoValue && isFull(shapeOf(v), sp))
          visit(g_.value(v).producer);
      for (NodeId c : uses_[static_cast<size_t>(g_.node(id).outputs[0])])
        visit(c);
    }
    return members;
  }

  // A new value `name` of shape `to`: Reshape(x).
  ValueId reshape(ValueId x, const Shape &to, const std::string &name, ValueId out = kNoValue) {
    ValueId s = g_.addConstantI64(name + "/shape", {static_cast<int64_t>(to.size())}, to);
    if (out == kNoValue)
      out = g_.addValue(name, to, g_.value(x).dtype);
    g_.addNode(OpKind::Reshape, name + "/reshape", {x, s}, {out});
    return out;
  }

  // Operand x of a region node, as the region's 3-D values see it.
  ValueId operand(ValueId x, std::map<ValueId, ValueId> &to3d) {
    if (auto it = to3d.find(x); it != to3d.end())
      return it->second;
    if (shapeOf(x).size() <= 1)
      return x;
    const Shape to = merged(shapeOf(x));
    const std::string name = g_.value(x).name + ".3d";
    ValueId y;
    if (g_.value(x).isConstant()) { // the same data under the merged shape
      y = g_.addValue(name, to, g_.value(x).dtype);
      g_.value(y).f32 = g_.value(x).f32;
      g_.value(y).i64 = g_.value(x).i64;
    } else {
      y = reshape(x, to, name);
    }
    to3d[x] = y;
    return y;
  }

  // The attributes that name the last axis: it becomes axis 2.
  static void retargetAxis(Node &n) {
    if (n.kind == OpKind::Softmax || n.kind == OpKind::LogSoftmax ||
        n.kind == OpKind::LayerNormalization)
      n.attrs["axis"] = int64_t{2};
    else if (isReduceOp(n.kind))
      n.attrs["axes"] = std::vector<int64_t>{2};
  }

  void rewrite(const std::vector<NodeId> &nodes, int r) {
    std::map<ValueId, ValueId> to3d; // 4-D value -> its 3-D form
    std::vector<ValueId> made;       // the region's own 4-D values
    for (NodeId id : nodes) {
      for (size_t i : shapedInputs(g_.node(id))) {
        const ValueId x = operand(g_.node(id).inputs[i], to3d);
        g_.node(id).inputs[i] = x;
      }
      const ValueId y = g_.node(id).outputs[0];
      const ValueId y3 =
          g_.addValue(g_.value(y).name + ".3d", merged(shapeOf(y)), g_.value(y).dtype);
      g_.value(y).producer = -1;
      g_.value(y3).producer = id;
      g_.node(id).outputs[0] = y3;
      retargetAxis(g_.node(id));
      to3d[y] = y3;
      made.push_back(y);
    }
    // A value read outside the region (its readers there still name it) or a graph output is
    // the 3-D one Reshaped back.
    for (ValueId y : made) {
      const std::vector<NodeId> &readers = uses_[static_cast<size_t>(y)];
      const bool outside = std::any_of(readers.begin(), readers.end(), [&](NodeId c) {
        return region_[static_cast<size_t>(c)] != r;
      });
      if (outside || g_.isGraphOutput(y))
        reshape(to3d.at(y), shapeOf(y), g_.value(y).name + ".4d", y);
    }
  }
};

} // namespace

int channelsLastTo3d(Graph &g) {
  return Rewriter(g).run();
}

} // namespace npuc::graph
