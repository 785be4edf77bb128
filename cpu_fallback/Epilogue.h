// Epilogue.h - fusing a group's pointwise tail into the register tile of its anchor's CPU
// schedule.
//
// tir::lowerGroup lowers a fused group (e.g. Conv + Add + Relu) as one loop nest per node: the
// anchor writes its whole output, then each elementwise node reads it back and writes its own.
// On the CPU those extra passes over memory cost as much as a fast anchor kernel saves, so the
// schedule computes the tail per element while the anchor's value is still in a register:
// EpilogueFusion looks at the statements after the anchor's nest and absorbs the leading ones
// that are pointwise over the anchor's output shape (a perfect loop nest of one Store at the
// row-major index of its loop variables) and that read the anchor's or an earlier absorbed
// step's value only at that same element. at() then gives, for one element, the stores that
// remain necessary: a value is stored only when it is a kernel parameter (a group output) or a
// statement that was not absorbed still reads it.
#pragma once

#include "tir/IR.h"

#include <vector>

namespace npuc::cpu {

class EpilogueFusion {
public:
  /// `anchorOut` is the anchor's output buffer, `rest` the group's statements after the anchor's
  /// nest, `params` the kernel's parameters.
  EpilogueFusion(const tir::Buffer &anchorOut, const std::vector<tir::Stmt> &rest,
                 const std::vector<tir::Buffer> &params);

  /// How many leading statements of `rest` at() computes (the caller drops them).
  size_t fused() const { return steps_.size(); }

  /// The stores of one element at row-major coordinates `coords` of the anchor's output, given
  /// the anchor's value there.
  tir::Stmt at(const std::vector<tir::Expr> &coords, const tir::Expr &anchorValue) const;

private:
  struct Step {
    std::vector<tir::Var> vars; // loop variables of the nest
    std::vector<size_t> dims;   // the anchor dimension each variable runs over
    tir::Buffer out;
    tir::Expr value;
    bool store = false;
  };
  tir::Buffer anchor_;
  bool storeAnchor_ = true;
  std::vector<Step> steps_;
};

} // namespace npuc::cpu
