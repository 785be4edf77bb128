// Verify.cpp - scope checking of variables and buffers over a PrimFunc.
#include "tir/Verify.h"

#include "support/Error.h"
#include "tir/IRVisitor.h"
#include "tir/Printer.h"

#include <unordered_set>

namespace npuc::tir {
namespace {

class Verifier : public IRVisitor {
public:
  std::vector<std::string> errors;
  std::unordered_set<const void *> varsInScope, everBound;
  std::unordered_set<const void *> buffersInScope, everAllocated;
  std::string func;

  void visitVar(const VarNode *op) override {
    if (!varsInScope.count(op))
      errors.push_back(func + ": variable '" + op->name + "' is used outside any loop binding it");
  }

  void visitFor(const ForNode *op) override {
    visit(op->min);
    visit(op->extent);
    const void *v = op->var.node();
    if (everBound.count(v))
      errors.push_back(func + ": loop variable '" + op->var.name() + "' is bound by two loops");
    everBound.insert(v);
    varsInScope.insert(v);
    visit(op->body);
    varsInScope.erase(v);
  }

  void visitAllocate(const AllocateNode *op) override {
    const void *b = op->buffer.get();
    if (everAllocated.count(b) || buffersInScope.count(b))
      errors.push_back(func + ": buffer '" + op->buffer->name + "' is allocated twice");
    everAllocated.insert(b);
    buffersInScope.insert(b);
    visit(op->body);
    buffersInScope.erase(b);
  }

  void checkBuffer(const Buffer &b, const char *what) {
    if (!buffersInScope.count(b.get()))
      errors.push_back(func + ": " + what + " of buffer '" + b->name +
                       "', which is neither a parameter nor allocated here");
  }

  void visitLoad(const LoadNode *op) override {
    checkBuffer(op->buffer, "load");
    visit(op->index);
  }

  void visitStore(const StoreNode *op) override {
    checkBuffer(op->buffer, "store");
    visit(op->value);
    visit(op->index);
  }
};

} // namespace

std::vector<std::string> verifyErrors(const PrimFunc &f) {
  Verifier v;
  v.func = f.name;
  for (const Buffer &b : f.params) {
    if (!b.defined()) {
      v.errors.push_back(f.name + ": null parameter buffer");
      continue;
    }
    if (!v.buffersInScope.insert(b.get()).second)
      v.errors.push_back(f.name + ": parameter '" + b->name + "' appears twice");
  }
  if (!f.body.defined())
    v.errors.push_back(f.name + ": function has no body");
  v.visit(f.body);
  return v.errors;
}

void verify(const PrimFunc &f) {
  std::vector<std::string> errs = verifyErrors(f);
  if (errs.empty())
    return;
  std::string msg;
  for (const std::string &e : errs)
    msg += e + "\n";
  NPUC_ASSERT(false, "malformed TIR:\n" + msg + toText(f));
}

} // namespace npuc::tir
