// Graph.h - the graph IR: an ONNX-like dataflow graph with static shapes.
//
// Values are tensors (graph inputs, constants/initializers, or node outputs); nodes are operators
// (an OpKind from the table in Ops.def, printed as its ONNX op type) with ONNX attribute semantics.
// Every value has a fully known static shape after import (dynamic dims are pinned by
// --input-shape). Node and value ids are indices into the graph's vectors; removed nodes are marked
// dead and skipped by every traversal, so ids stay stable while passes run. Graph algorithms
// (topological order, post-dominators) use Boost.Graph over a view of this structure
// (GraphAlgorithms.h).
#pragma once

#include "graph/Ops.h"
#include "support/Tensor.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace npuc::graph {

// Element types are support's (support/DType.h): graph code names them graph::DType.
using npuc::DType;
using npuc::dtypeName;

/// The DType of ONNX TensorProto data type `code` (FLOAT=1, UINT8=2, INT8=3, UINT16=4, INT16=5,
/// INT32=6, INT64=7, BOOL=9, FLOAT16=10, DOUBLE=11, UINT32=12, UINT64=13), nullopt for the rest
/// (string, complex, bfloat16). Here rather than in the frontend because node attributes keep
/// ONNX's codes (Cast's `to`, EyeLike's `dtype`) and shape inference reads them.
std::optional<DType> dtypeFromOnnx(int64_t code);
/// The ONNX TensorProto data type code of `t`.
int64_t onnxDTypeCode(DType t);

using ValueId = int;
using NodeId = int;
constexpr ValueId kNoValue = -1; // an omitted optional input

struct Value {
  ValueId id = kNoValue;
  std::string name;
  Shape shape;
  DType dtype = DType::F32;
  NodeId producer = -1; // -1 for graph inputs and constants
  // Constant contents, when the value is an initializer or was folded at compile time.
  std::shared_ptr<const std::vector<float>> f32;   // float dtypes (F32; F64/F16 held in fp32)
  std::shared_ptr<const std::vector<int64_t>> i64; // integer and bool dtypes (wrapped; bool 0/1)
  bool isConstant() const { return f32 || i64; }
};

using AttrValue =
    std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

enum class Placement { Unassigned, Npu, Cpu };
const char *placementName(Placement p);

struct Node {
  NodeId id = -1;
  OpKind kind = OpKind::Identity;
  std::string name; // the ONNX node name (or "<op>_<index>" when the model gives none)
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  std::map<std::string, AttrValue> attrs;
  bool dead = false;

  bool hasAttr(const std::string &k) const { return attrs.count(k) != 0; }
  int64_t attrInt(const std::string &k, int64_t dflt) const;
  double attrFloat(const std::string &k, double dflt) const;
  std::string attrString(const std::string &k, const std::string &dflt) const;
  std::vector<int64_t> attrInts(const std::string &k, std::vector<int64_t> dflt = {}) const;
};

/// A fused group: the unit of lowering. Nodes are in topological order; `anchor` is the node
/// that gives the group its loop structure (the conv/matmul for complex-out-fusable groups, the
/// single op otherwise). The group's inputs/outputs are values crossing its boundary.
struct FusedGroup {
  int id = -1;
  std::string name; // the anchor node's name
  std::vector<NodeId> nodes;
  NodeId anchor = -1;
  std::vector<ValueId> inputs;  // non-constant values read from outside the group
  std::vector<ValueId> outputs; // values used outside the group or graph outputs
  Placement placement = Placement::Unassigned;
  std::string cpuReason; // why the group runs on the CPU (empty when on the NPU)
  std::string note;      // how the group came to be when not by fusion alone (a retry's split)
};

class Graph {
public:
  std::string name;
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<ValueId> inputs;  // graph inputs (non-constant), in model order
  std::vector<ValueId> outputs; // graph outputs, in model order
  /// The name each graph output is declared under (the model's), parallel to `outputs`; empty
  /// when every output is named by its value (graphs built in code). An output keeps its name
  /// when a pass replaces its value by another (replaceAllUses): a folded BatchNormalization's
  /// output becomes its Conv's value, an Identity's its input (possibly a graph input), two
  /// outputs may become one value. Results are reported and written under these names.
  std::vector<std::string> outputNames;
  std::vector<FusedGroup> groups; // filled by fuseOps(); empty before

  ValueId addValue(std::string name, Shape shape, DType dtype);
  /// A float constant (F32, or F64/F16 held in fp32).
  ValueId addConstant(std::string name, Shape shape, std::vector<float> data,
                      DType dtype = DType::F32);
  /// An integer or bool constant; the values must be in the type's range.
  ValueId addConstantI64(std::string name, Shape shape, std::vector<int64_t> data,
                         DType dtype = DType::I64);
  NodeId addNode(OpKind kind, std::string name, std::vector<ValueId> inputs,
                 std::vector<ValueId> outputs);

  Value &value(ValueId v) { return values.at(static_cast<size_t>(v)); }
  const Value &value(ValueId v) const { return values.at(static_cast<size_t>(v)); }
  Node &node(NodeId n) { return nodes.at(static_cast<size_t>(n)); }
  const Node &node(NodeId n) const { return nodes.at(static_cast<size_t>(n)); }
  std::optional<ValueId> findValue(const std::string &name) const;

  /// Live nodes in a topological order (Boost.Graph topological_sort); ties keep model order.
  std::vector<NodeId> topoOrder() const;
  /// Live nodes reading value v, in id order. Scans every node: a pass asking about many values
  /// builds useLists() once instead.
  std::vector<NodeId> consumers(ValueId v) const;
  /// consumers() of every value at once, indexed by value id, in one pass over the nodes.
  std::vector<std::vector<NodeId>> useLists() const;
  bool isGraphOutput(ValueId v) const;
  /// The name graph output `i` is declared under: outputNames[i], or its value's name.
  const std::string &outputName(size_t i) const;
  /// Replaces every use of `from` (in live nodes and graph outputs) by `to`. A graph output
  /// whose value changes keeps its declared name (outputNames is filled first when empty).
  void replaceAllUses(ValueId from, ValueId to);
  /// Marks nodes whose outputs are unused dead (dead-code elimination).
  void removeDeadNodes();
};

} // namespace npuc::graph
