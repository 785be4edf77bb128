// IR.cpp - node constructors (with the type checks that catch malformed IR where it is built),
// operator builders and kind names.
#include "tir/IR.h"

#include "support/Error.h"
#include "tir/Eval.h"

namespace npuc::tir {

std::string toString(DataType t) {
  switch (t.code) {
  case DataType::Code::Int:
    return "int" + std::to_string(t.bits);
  case DataType::Code::UInt:
    return "uint" + std::to_string(t.bits);
  case DataType::Code::Float:
    return "float" + std::to_string(t.bits);
  case DataType::Code::Bool:
    return "bool";
  case DataType::Code::Handle:
    return "handle";
  }
  return "?";
}

const char *kindName(NodeKind k) {
  switch (k) {
#define TIR_EXPR(Name)                                                                             \
  case NodeKind::Name:                                                                             \
    return #Name;
#define TIR_STMT(Name) TIR_EXPR(Name)
#include "tir/IRNodes.def"
  }
  return "?";
}

bool isBinary(NodeKind k) {
  switch (k) {
#define TIR_BINARY(Name, Symbol) case NodeKind::Name:
#include "tir/IRNodes.def"
    return true;
  default:
    return false;
  }
}

const char *binarySymbol(NodeKind k) {
  switch (k) {
#define TIR_BINARY(Name, Symbol)                                                                   \
  case NodeKind::Name:                                                                             \
    return Symbol;
#include "tir/IRNodes.def"
  default:
    NPUC_ASSERT(false, std::string("binarySymbol of non-binary kind ") + kindName(k));
  }
}

DataType Expr::type() const {
  NPUC_ASSERT(node_, "type() of a null Expr");
  return node_->type;
}
NodeKind Expr::kind() const {
  NPUC_ASSERT(node_, "kind() of a null Expr");
  return node_->kind;
}
NodeKind Stmt::kind() const {
  NPUC_ASSERT(node_, "kind() of a null Stmt");
  return node_->kind;
}

bool elementCount(const std::vector<int64_t> &shape, int64_t &count) {
  count = 1;
  for (int64_t d : shape)
    if (d == 0) {
      count = 0;
      return true;
    }
  for (int64_t d : shape)
    if (__builtin_mul_overflow(count, d, &count))
      return false;
  return true;
}

int64_t BufferNode::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Buffer Buffer::make(std::string name, DataType dtype, std::vector<int64_t> shape,
                    std::string scope) {
  for (int64_t d : shape)
    NPUC_ASSERT(d >= 0, "buffer " + name + " has a negative extent");
  int64_t count = 0;
  // Callers check sizes that come from input (the parser does); numElements relies on this.
  NPUC_ASSERT(elementCount(shape, count),
              "buffer " + name + " has more elements than int64 counts");
  auto n = std::make_shared<BufferNode>();
  n->name = std::move(name);
  n->dtype = dtype;
  n->shape = std::move(shape);
  n->scope = std::move(scope);
  Buffer b;
  b.node_ = std::move(n);
  return b;
}

Expr IntImmNode::make(int64_t value, DataType t) {
  NPUC_ASSERT(t.isIntegral(), "IntImm of non-integral type " + toString(t));
  NPUC_ASSERT(wrapInt(value, t) == value,
              "IntImm value " + std::to_string(value) + " is outside the range of " + toString(t));
  auto n = std::make_shared<IntImmNode>(t);
  n->value = value;
  return Expr(std::move(n));
}

Expr FloatImmNode::make(double value, DataType t) {
  NPUC_ASSERT(t.isFloat(), "FloatImm of non-float type " + toString(t));
  auto n = std::make_shared<FloatImmNode>(t);
  // A float32 constant holds a float32 value: rounding here keeps the printed shortest form
  // (which is of the float) and the node's value the same number.
  n->value = t.bits == 32 ? static_cast<double>(static_cast<float>(value)) : value;
  return Expr(std::move(n));
}

Var Var::make(std::string name, DataType t) {
  auto n = std::make_shared<VarNode>(t);
  n->name = std::move(name);
  Var v;
  v.node_ = std::move(n);
  return v;
}

namespace {
bool isComparison(NodeKind k) {
  return k == NodeKind::EQ || k == NodeKind::NE || k == NodeKind::LT || k == NodeKind::LE ||
         k == NodeKind::GT || k == NodeKind::GE;
}

template <typename T> Expr makeBin(Expr a, Expr b) {
  NPUC_ASSERT(a.defined() && b.defined(), std::string("null operand of ") + kindName(T::kKind));
  NPUC_ASSERT(a.type() == b.type(), std::string("operand types of ") + kindName(T::kKind) +
                                        " differ: " + toString(a.type()) + " vs " +
                                        toString(b.type()));
  DataType t = a.type();
  if (isComparison(T::kKind))
    t = DataType::Bool();
  if (T::kKind == NodeKind::And || T::kKind == NodeKind::Or)
    NPUC_ASSERT(t.isBool(), "logical operator on non-bool operands");
  auto n = std::make_shared<T>(t);
  n->a = std::move(a);
  n->b = std::move(b);
  return Expr(std::move(n));
}
} // namespace

#define TIR_BINARY(Name, Symbol)                                                                   \
  Expr Name##Node::make(Expr a, Expr b) {                                                          \
    return makeBin<Name##Node>(std::move(a), std::move(b));                                        \
  }
#include "tir/IRNodes.def"

Expr makeBinary(NodeKind k, Expr a, Expr b) {
  switch (k) {
#define TIR_BINARY(Name, Symbol)                                                                   \
  case NodeKind::Name:                                                                             \
    return Name##Node::make(std::move(a), std::move(b));
#include "tir/IRNodes.def"
  default:
    NPUC_ASSERT(false, std::string("makeBinary of non-binary kind ") + kindName(k));
  }
}

Expr NotNode::make(Expr a) {
  NPUC_ASSERT(a.defined() && a.type().isBool(), "Not of a non-bool operand");
  auto n = std::make_shared<NotNode>();
  n->a = std::move(a);
  return Expr(std::move(n));
}

Expr SelectNode::make(Expr cond, Expr t, Expr f) {
  NPUC_ASSERT(cond.defined() && cond.type().isBool(), "Select condition is not bool");
  NPUC_ASSERT(t.defined() && f.defined() && t.type() == f.type(), "Select arms differ in type");
  auto n = std::make_shared<SelectNode>(t.type());
  n->cond = std::move(cond);
  n->trueValue = std::move(t);
  n->falseValue = std::move(f);
  return Expr(std::move(n));
}

Expr CastNode::make(DataType t, Expr value) {
  NPUC_ASSERT(value.defined(), "Cast of a null Expr");
  auto n = std::make_shared<CastNode>(t);
  n->value = std::move(value);
  return Expr(std::move(n));
}

Expr LoadNode::make(Buffer buffer, Expr index) {
  NPUC_ASSERT(buffer.defined(), "Load from a null buffer");
  NPUC_ASSERT(index.defined() && index.type().isInt(),
              "Load index of " + buffer->name + " is not an integer");
  auto n = std::make_shared<LoadNode>(buffer->dtype);
  n->buffer = std::move(buffer);
  n->index = std::move(index);
  return Expr(std::move(n));
}

Expr CallNode::make(DataType t, std::string name, std::vector<Expr> args) {
  for (const Expr &a : args)
    NPUC_ASSERT(a.defined(), "null argument of call " + name);
  auto n = std::make_shared<CallNode>(t);
  n->name = std::move(name);
  n->args = std::move(args);
  return Expr(std::move(n));
}

const char *forKindName(ForKind k) {
  switch (k) {
  case ForKind::Serial:
    return "serial";
  case ForKind::Unrolled:
    return "unrolled";
  case ForKind::Parallel:
    return "parallel";
  case ForKind::Pipelined:
    return "pipelined";
  }
  return "?";
}

Stmt ForNode::make(Var var, Expr min, Expr extent, ForKind kind, Stmt body) {
  NPUC_ASSERT(var.defined() && var.type().isInt(), "For variable must be an integer Var");
  NPUC_ASSERT(min.defined() && extent.defined() && min.type() == var.type() &&
                  extent.type() == var.type(),
              "For bounds of " + var.name() + " must have the variable's type");
  NPUC_ASSERT(body.defined(), "For " + var.name() + " has no body");
  auto n = std::make_shared<ForNode>();
  n->var = std::move(var);
  n->min = std::move(min);
  n->extent = std::move(extent);
  n->forKind = kind;
  n->body = std::move(body);
  return Stmt(std::move(n));
}

Stmt IfThenElseNode::make(Expr cond, Stmt thenCase, Stmt elseCase) {
  NPUC_ASSERT(cond.defined() && cond.type().isBool(), "IfThenElse condition is not bool");
  NPUC_ASSERT(thenCase.defined(), "IfThenElse without a then branch");
  auto n = std::make_shared<IfThenElseNode>();
  n->cond = std::move(cond);
  n->thenCase = std::move(thenCase);
  n->elseCase = std::move(elseCase);
  return Stmt(std::move(n));
}

Stmt StoreNode::make(Buffer buffer, Expr value, Expr index) {
  NPUC_ASSERT(buffer.defined(), "Store to a null buffer");
  NPUC_ASSERT(value.defined() && value.type() == buffer->dtype,
              "Store value type differs from buffer " + buffer->name);
  NPUC_ASSERT(index.defined() && index.type().isInt(),
              "Store index of " + buffer->name + " is not an integer");
  auto n = std::make_shared<StoreNode>();
  n->buffer = std::move(buffer);
  n->value = std::move(value);
  n->index = std::move(index);
  return Stmt(std::move(n));
}

Stmt AllocateNode::make(Buffer buffer, Stmt body) {
  NPUC_ASSERT(buffer.defined() && body.defined(), "Allocate needs a buffer and a body");
  auto n = std::make_shared<AllocateNode>();
  n->buffer = std::move(buffer);
  n->body = std::move(body);
  return Stmt(std::move(n));
}

Stmt SeqNode::make(std::vector<Stmt> stmts) {
  for (const Stmt &s : stmts)
    NPUC_ASSERT(s.defined(), "null statement in Seq");
  auto n = std::make_shared<SeqNode>();
  n->stmts = std::move(stmts);
  return Stmt(std::move(n));
}

Stmt EvaluateNode::make(Expr value) {
  NPUC_ASSERT(value.defined(), "Evaluate of a null Expr");
  auto n = std::make_shared<EvaluateNode>();
  n->value = std::move(value);
  return Stmt(std::move(n));
}

Stmt AttrStmtNode::make(std::string key, Expr value, Stmt body) {
  NPUC_ASSERT(value.defined() && body.defined(), "AttrStmt " + key + " needs a value and a body");
  auto n = std::make_shared<AttrStmtNode>();
  n->key = std::move(key);
  n->value = std::move(value);
  n->body = std::move(body);
  return Stmt(std::move(n));
}

Stmt NpuOpNode::make(std::string mnemonic, std::vector<std::pair<std::string, Expr>> fields) {
  for (const auto &[k, v] : fields)
    NPUC_ASSERT(v.defined(), "null field " + k + " of npu." + mnemonic);
  auto n = std::make_shared<NpuOpNode>();
  n->mnemonic = std::move(mnemonic);
  n->fields = std::move(fields);
  return Stmt(std::move(n));
}

Expr NpuOpNode::field(const std::string &name) const {
  for (const auto &[k, v] : fields)
    if (k == name)
      return v;
  return Expr();
}

// ---------------------------------------------------------------- builders

Expr constLike(const Expr &e, double v) {
  DataType t = e.type();
  if (t.isFloat())
    return FloatImmNode::make(v, t);
  return IntImmNode::make(static_cast<int64_t>(v), t);
}

namespace {
Expr intLike(const Expr &e, int64_t v) {
  DataType t = e.type();
  if (t.isFloat())
    return FloatImmNode::make(static_cast<double>(v), t);
  return IntImmNode::make(v, t);
}
} // namespace

Expr operator+(Expr a, Expr b) {
  return AddNode::make(std::move(a), std::move(b));
}
Expr operator-(Expr a, Expr b) {
  return SubNode::make(std::move(a), std::move(b));
}
Expr operator*(Expr a, Expr b) {
  return MulNode::make(std::move(a), std::move(b));
}
Expr operator/(Expr a, Expr b) {
  return DivNode::make(std::move(a), std::move(b));
}
Expr operator%(Expr a, Expr b) {
  return ModNode::make(std::move(a), std::move(b));
}
Expr operator+(Expr a, int64_t b) {
  return a + intLike(a, b);
}
Expr operator-(Expr a, int64_t b) {
  return a - intLike(a, b);
}
Expr operator*(Expr a, int64_t b) {
  return a * intLike(a, b);
}
Expr operator/(Expr a, int64_t b) {
  return a / intLike(a, b);
}
Expr operator%(Expr a, int64_t b) {
  return a % intLike(a, b);
}
Expr operator+(int64_t a, Expr b) {
  return intLike(b, a) + b;
}
Expr operator-(int64_t a, Expr b) {
  return intLike(b, a) - b;
}
Expr operator*(int64_t a, Expr b) {
  return intLike(b, a) * b;
}
Expr operator-(Expr a) {
  return intLike(a, 0) - a;
}
Expr floordiv(Expr a, Expr b) {
  return FloorDivNode::make(std::move(a), std::move(b));
}
Expr floordiv(Expr a, int64_t b) {
  return floordiv(a, intLike(a, b));
}
Expr floormod(Expr a, Expr b) {
  return FloorModNode::make(std::move(a), std::move(b));
}
Expr floormod(Expr a, int64_t b) {
  return floormod(a, intLike(a, b));
}
Expr min(Expr a, Expr b) {
  return MinNode::make(std::move(a), std::move(b));
}
Expr min(Expr a, int64_t b) {
  return min(a, intLike(a, b));
}
Expr max(Expr a, Expr b) {
  return MaxNode::make(std::move(a), std::move(b));
}
Expr max(Expr a, int64_t b) {
  return max(a, intLike(a, b));
}
Expr eq(Expr a, Expr b) {
  return EQNode::make(std::move(a), std::move(b));
}
Expr ne(Expr a, Expr b) {
  return NENode::make(std::move(a), std::move(b));
}
Expr lt(Expr a, Expr b) {
  return LTNode::make(std::move(a), std::move(b));
}
Expr le(Expr a, Expr b) {
  return LENode::make(std::move(a), std::move(b));
}
Expr gt(Expr a, Expr b) {
  return GTNode::make(std::move(a), std::move(b));
}
Expr ge(Expr a, Expr b) {
  return GENode::make(std::move(a), std::move(b));
}
Expr operator==(Expr a, Expr b) {
  return eq(std::move(a), std::move(b));
}
Expr operator!=(Expr a, Expr b) {
  return ne(std::move(a), std::move(b));
}
Expr operator<(Expr a, Expr b) {
  return lt(std::move(a), std::move(b));
}
Expr operator<=(Expr a, Expr b) {
  return le(std::move(a), std::move(b));
}
Expr operator>(Expr a, Expr b) {
  return gt(std::move(a), std::move(b));
}
Expr operator>=(Expr a, Expr b) {
  return ge(std::move(a), std::move(b));
}
Expr operator==(Expr a, int64_t b) {
  return eq(a, intLike(a, b));
}
Expr operator!=(Expr a, int64_t b) {
  return ne(a, intLike(a, b));
}
Expr operator<(Expr a, int64_t b) {
  return lt(a, intLike(a, b));
}
Expr operator<=(Expr a, int64_t b) {
  return le(a, intLike(a, b));
}
Expr operator>(Expr a, int64_t b) {
  return gt(a, intLike(a, b));
}
Expr operator>=(Expr a, int64_t b) {
  return ge(a, intLike(a, b));
}
Expr operator&&(Expr a, Expr b) {
  return AndNode::make(std::move(a), std::move(b));
}
Expr operator||(Expr a, Expr b) {
  return OrNode::make(std::move(a), std::move(b));
}
Expr operator!(Expr a) {
  return NotNode::make(std::move(a));
}
Expr select(Expr cond, Expr t, Expr f) {
  return SelectNode::make(std::move(cond), std::move(t), std::move(f));
}
Expr cast(DataType t, Expr v) {
  return CastNode::make(t, std::move(v));
}
Expr load(Buffer b, Expr index) {
  return LoadNode::make(std::move(b), std::move(index));
}
Expr call(DataType t, std::string name, std::vector<Expr> args) {
  return CallNode::make(t, std::move(name), std::move(args));
}
Stmt store(Buffer b, Expr value, Expr index) {
  return StoreNode::make(std::move(b), std::move(value), std::move(index));
}
Stmt seq(std::vector<Stmt> stmts) {
  return SeqNode::make(std::move(stmts));
}
Stmt forLoop(Var v, Expr min, Expr extent, Stmt body, ForKind kind) {
  return ForNode::make(std::move(v), std::move(min), std::move(extent), kind, std::move(body));
}

} // namespace npuc::tir
