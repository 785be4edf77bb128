// IR.h - the loop IR (TIR): immutable expression and statement nodes, buffers, functions.
//
// TIR is a Halide/TVM-style imperative IR: loop nests (For) over flat buffers (Load/Store with a
// flattened element index), with NpuOp leaves for NPU instructions. Nodes are immutable and
// shared through the Expr/Stmt handles (std::shared_ptr<const Node>), so passes rebuild only the
// path to a change and reuse every unchanged subtree (see IRMutator.h). Every node kind is listed
// once in IRNodes.def; node structs are named <Kind>Node and aliased as <Kind> (except Var, which
// is the handle of VarNode), so both `For::make(...)` and `ForNode::make(...)` work.
// A Var's identity is its node pointer: two vars named "i" are different variables.
#pragma once

#include "tir/Type.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace npuc::tir {

enum class NodeKind {
#define TIR_EXPR(Name) Name,
#define TIR_STMT(Name) Name,
#include "tir/IRNodes.def"
};
const char *kindName(NodeKind k);

struct IRNode {
  const NodeKind kind;
  explicit IRNode(NodeKind k) : kind(k) {}
  virtual ~IRNode() = default;
  IRNode(const IRNode &) = delete;
  IRNode &operator=(const IRNode &) = delete;
};

struct ExprNode : IRNode {
  DataType type;
  ExprNode(NodeKind k, DataType t) : IRNode(k), type(t) {}
};

struct StmtNode : IRNode {
  explicit StmtNode(NodeKind k) : IRNode(k) {}
};

/// Shared handle of an expression node; null when default-constructed.
class Expr {
public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}
  const ExprNode *get() const { return node_.get(); }
  const ExprNode *operator->() const { return node_.get(); }
  bool defined() const { return node_ != nullptr; }
  DataType type() const;
  NodeKind kind() const;
  /// The node as T (a <Kind>Node struct), or nullptr when it is another kind.
  template <typename T> const T *as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T *>(node_.get()) : nullptr;
  }
  /// Same node (pointer identity), not structural equality (see Equal.h).
  bool same(const Expr &o) const { return node_ == o.node_; }

protected:
  std::shared_ptr<const ExprNode> node_;
};

/// Shared handle of a statement node; null when default-constructed.
class Stmt {
public:
  Stmt() = default;
  explicit Stmt(std::shared_ptr<const StmtNode> n) : node_(std::move(n)) {}
  const StmtNode *get() const { return node_.get(); }
  const StmtNode *operator->() const { return node_.get(); }
  bool defined() const { return node_ != nullptr; }
  NodeKind kind() const;
  template <typename T> const T *as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T *>(node_.get()) : nullptr;
  }
  bool same(const Stmt &o) const { return node_ == o.node_; }

private:
  std::shared_ptr<const StmtNode> node_;
};

// ---------------------------------------------------------------- buffers

struct BufferNode {
  std::string name;
  DataType dtype;
  std::vector<int64_t> shape;
  std::string scope; // "global", "l1", "l0a", "acc", ...
  int64_t numElements() const;
};

/// The product of a shape's extents in `count`; false when it does not fit in int64 (a shape
/// with an extent 0 has 0 elements whatever the others are). Every Buffer's count fits.
bool elementCount(const std::vector<int64_t> &shape, int64_t &count);

/// Shared handle of a buffer; identity is the node pointer, like Var.
class Buffer {
public:
  Buffer() = default;
  static Buffer make(std::string name, DataType dtype, std::vector<int64_t> shape,
                     std::string scope = "global");
  const BufferNode *get() const { return node_.get(); }
  const BufferNode *operator->() const { return node_.get(); }
  bool defined() const { return node_ != nullptr; }
  bool same(const Buffer &o) const { return node_ == o.node_; }

private:
  std::shared_ptr<const BufferNode> node_;
};

// ---------------------------------------------------------------- expressions

struct IntImmNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::IntImm;
  int64_t value = 0;
  explicit IntImmNode(DataType t) : ExprNode(kKind, t) {}
  static Expr make(int64_t value, DataType t = DataType::Int(64));
};

struct FloatImmNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::FloatImm;
  double value = 0;
  explicit FloatImmNode(DataType t) : ExprNode(kKind, t) {}
  static Expr make(double value, DataType t = DataType::Float(32));
};

struct VarNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Var;
  std::string name;
  explicit VarNode(DataType t) : ExprNode(kKind, t) {}
};

/// Handle of a VarNode; converts to Expr by derivation.
class Var : public Expr {
public:
  Var() = default;
  static Var make(std::string name, DataType t = DataType::Int(64));
  const VarNode *node() const { return static_cast<const VarNode *>(node_.get()); }
  const std::string &name() const { return node()->name; }
};

/// Layout shared by all two-operand kinds (arithmetic, comparisons, logic).
struct BinaryNode : ExprNode {
  Expr a, b;
  BinaryNode(NodeKind k, DataType t) : ExprNode(k, t) {}
};

#define TIR_BINARY(Name, Symbol)                                                                   \
  struct Name##Node : BinaryNode {                                                                 \
    static constexpr NodeKind kKind = NodeKind::Name;                                              \
    explicit Name##Node(DataType t) : BinaryNode(kKind, t) {}                                      \
    static Expr make(Expr a, Expr b);                                                              \
  };
#include "tir/IRNodes.def"

/// True for the kinds that share BinaryNode's layout.
bool isBinary(NodeKind k);
/// The operator symbol or function name of a binary kind ("+", "floordiv", ...).
const char *binarySymbol(NodeKind k);
/// Builds the binary node of kind k (k must satisfy isBinary).
Expr makeBinary(NodeKind k, Expr a, Expr b);

struct NotNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Not;
  Expr a;
  NotNode() : ExprNode(kKind, DataType::Bool()) {}
  static Expr make(Expr a);
};

struct SelectNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Select;
  Expr cond, trueValue, falseValue;
  explicit SelectNode(DataType t) : ExprNode(kKind, t) {}
  static Expr make(Expr cond, Expr t, Expr f);
};

struct CastNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Cast;
  Expr value;
  explicit CastNode(DataType t) : ExprNode(kKind, t) {}
  static Expr make(DataType t, Expr value);
};

struct LoadNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Load;
  Buffer buffer;
  Expr index; // flattened element index, Int(64)
  explicit LoadNode(DataType t) : ExprNode(kKind, t) {}
  static Expr make(Buffer buffer, Expr index);
};

/// A pure intrinsic ("exp", "tanh", "sqrt", "fmax", "log", "pow", "floor", "fabs", "erf", ...).
struct CallNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Call;
  std::string name;
  std::vector<Expr> args;
  explicit CallNode(DataType t) : ExprNode(kKind, t) {}
  static Expr make(DataType t, std::string name, std::vector<Expr> args);
};

// ---------------------------------------------------------------- statements

enum class ForKind { Serial, Unrolled, Parallel, Pipelined };
const char *forKindName(ForKind k);

struct ForNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::For;
  Var var;
  Expr min, extent;
  ForKind forKind = ForKind::Serial;
  Stmt body;
  ForNode() : StmtNode(kKind) {}
  static Stmt make(Var var, Expr min, Expr extent, ForKind kind, Stmt body);
};

struct IfThenElseNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::IfThenElse;
  Expr cond;
  Stmt thenCase, elseCase; // elseCase may be null
  IfThenElseNode() : StmtNode(kKind) {}
  static Stmt make(Expr cond, Stmt thenCase, Stmt elseCase = Stmt());
};

struct StoreNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Store;
  Buffer buffer;
  Expr value, index;
  StoreNode() : StmtNode(kKind) {}
  static Stmt make(Buffer buffer, Expr value, Expr index);
};

/// Declares a buffer local to `body` (an intermediate, or an on-chip scratch tile).
struct AllocateNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Allocate;
  Buffer buffer;
  Stmt body;
  AllocateNode() : StmtNode(kKind) {}
  static Stmt make(Buffer buffer, Stmt body);
};

/// Statements in order; an empty Seq is the no-op statement.
struct SeqNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Seq;
  std::vector<Stmt> stmts;
  SeqNode() : StmtNode(kKind) {}
  static Stmt make(std::vector<Stmt> stmts);
};

struct EvaluateNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Evaluate;
  Expr value;
  EvaluateNode() : StmtNode(kKind) {}
  static Stmt make(Expr value);
};

/// An annotation (e.g. "double_buffer", "pipeline_stage") on the statements of `body`.
struct AttrStmtNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::AttrStmt;
  std::string key;
  Expr value;
  Stmt body;
  AttrStmtNode() : StmtNode(kKind) {}
  static Stmt make(std::string key, Expr value, Stmt body);
};

/// One NPU instruction whose fields are expressions of the enclosing loop variables.
struct NpuOpNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::NpuOp;
  std::string mnemonic;
  std::vector<std::pair<std::string, Expr>> fields;
  NpuOpNode() : StmtNode(kKind) {}
  static Stmt make(std::string mnemonic, std::vector<std::pair<std::string, Expr>> fields);
  /// The field's expression, or a null Expr when absent.
  Expr field(const std::string &name) const;
};

// Short names: For::make(...), IntImm::make(...), ... (Var is the handle class above).
using IntImm = IntImmNode;
using FloatImm = FloatImmNode;
#define TIR_BINARY(Name, Symbol) using Name = Name##Node;
#include "tir/IRNodes.def"
using Not = NotNode;
using Select = SelectNode;
using Cast = CastNode;
using Load = LoadNode;
using Call = CallNode;
using For = ForNode;
using IfThenElse = IfThenElseNode;
using Store = StoreNode;
using Allocate = AllocateNode;
using Seq = SeqNode;
using Evaluate = EvaluateNode;
using AttrStmt = AttrStmtNode;
using NpuOp = NpuOpNode;

struct PrimFunc {
  std::string name;
  std::vector<Buffer> params;
  Stmt body;
};

// ---------------------------------------------------------------- builders

inline Expr imm(int64_t v) {
  return IntImmNode::make(v);
}
inline Expr fimm(double v, DataType t = DataType::Float(32)) {
  return FloatImmNode::make(v, t);
}
/// A constant of e's type with value v (IntImm for integral, FloatImm for float types).
Expr constLike(const Expr &e, double v);

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b); // Div: C truncation for integers
Expr operator%(Expr a, Expr b); // Mod: C remainder for integers
Expr operator+(Expr a, int64_t b);
Expr operator-(Expr a, int64_t b);
Expr operator*(Expr a, int64_t b);
Expr operator/(Expr a, int64_t b);
Expr operator%(Expr a, int64_t b);
Expr operator+(int64_t a, Expr b);
Expr operator-(int64_t a, Expr b);
Expr operator*(int64_t a, Expr b);
Expr operator-(Expr a);
Expr floordiv(Expr a, Expr b);
Expr floordiv(Expr a, int64_t b);
Expr floormod(Expr a, Expr b);
Expr floormod(Expr a, int64_t b);
Expr min(Expr a, Expr b);
Expr min(Expr a, int64_t b);
Expr max(Expr a, Expr b);
Expr max(Expr a, int64_t b);
Expr eq(Expr a, Expr b);
Expr ne(Expr a, Expr b);
Expr lt(Expr a, Expr b);
Expr le(Expr a, Expr b);
Expr gt(Expr a, Expr b);
Expr ge(Expr a, Expr b);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator==(Expr a, int64_t b);
Expr operator!=(Expr a, int64_t b);
Expr operator<(Expr a, int64_t b);
Expr operator<=(Expr a, int64_t b);
Expr operator>(Expr a, int64_t b);
Expr operator>=(Expr a, int64_t b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);
Expr select(Expr cond, Expr t, Expr f);
Expr cast(DataType t, Expr v);
Expr load(Buffer b, Expr index);
Expr call(DataType t, std::string name, std::vector<Expr> args);
Stmt store(Buffer b, Expr value, Expr index);
Stmt seq(std::vector<Stmt> stmts);
Stmt forLoop(Var v, Expr min, Expr extent, Stmt body, ForKind kind = ForKind::Serial);

} // namespace npuc::tir
