// Schedule.h - schedule primitives: functions PrimFunc -> PrimFunc that restructure loops and
// storage without changing what the function computes, each checking its legality first.
//
// Loops are named by their variable (names are unique in printed TIR); buffers by name. An
// illegal request is a user error (npuc::Error) that names the primitive, the loop or buffer
// and the reason, e.g. "reorder: loops i, j carry a dependence through buffer B (written at
// B[i * 4 + j], read at B[i * 4 + j - 1])". Every result still passes the verifier.
//
//   split(f, x, k)      x -> (x.o, x.i), x = x.o * k + x.i; floordiv(x, k) and floormod(x, k)
//                       become x.o and x.i; a remainder is guarded by `if (x < extent)`
//   tile(f, x, y, kx, ky)  split both, then order x.o, y.o, x.i, y.i
//   fuse(f, x, y)       perfectly nested x { y { } } -> one loop over extent(x) * extent(y)
//   reorder(f, {...})   permutes a perfect nest; refused when the body writes a buffer at an
//                       index another access of it does not share (a loop-carried dependence)
//                       or when it would reorder the loops of a reduction
//   unroll(f, x)        marks a constant-extent loop unrolled
//   pipeline(f, x, n)   marks a loop pipelined with n stages (attr pipeline_stages)
//   doubleBuffer(f, B)  marks buffer B, allocated inside a loop, for double buffering
//   cacheRead(f, B, scope, x)   copies B into a new buffer in `scope` in front of loop x and
//                               redirects x's reads to it (refused if x writes B)
//   cacheWrite(f, B, scope, x)  x writes a new buffer in `scope` that is copied to B after it
//                               (copied in first when x also reads B)
//   computeAt(f, producer, x)   moves the loop nest `producer` (the whole nest that writes a
//                               buffer) into the body of loop x, in front of x's statements,
//                               when it reads nothing x writes and x reads its buffer only
#pragma once

#include "tir/IR.h"

#include <string>
#include <vector>

namespace npuc::tir::schedule {

PrimFunc split(const PrimFunc &f, const std::string &loop, int64_t factor);
PrimFunc tile(const PrimFunc &f, const std::string &x, const std::string &y, int64_t fx,
              int64_t fy);
PrimFunc fuse(const PrimFunc &f, const std::string &outer, const std::string &inner);
PrimFunc reorder(const PrimFunc &f, const std::vector<std::string> &order);
PrimFunc unroll(const PrimFunc &f, const std::string &loop);
PrimFunc pipeline(const PrimFunc &f, const std::string &loop, int64_t stages);
PrimFunc doubleBuffer(const PrimFunc &f, const std::string &buffer);
PrimFunc cacheRead(const PrimFunc &f, const std::string &buffer, const std::string &scope,
                   const std::string &atLoop);
PrimFunc cacheWrite(const PrimFunc &f, const std::string &buffer, const std::string &scope,
                    const std::string &atLoop);
PrimFunc computeAt(const PrimFunc &f, const std::string &producerLoop, const std::string &atLoop);

/// split() of one For node (the primitive's core, shared with the normalisation pass
/// LoopSplitDiv): `factor` must divide nothing in particular; a remainder gets a guard.
Stmt splitLoop(const ForNode *loop, int64_t factor);

} // namespace npuc::tir::schedule
