// VectorOps.cpp - the vector unit's functional model.
//
// Semantics are sequential over i2, i1, i0: each element reads its sources from memory after all
// earlier elements were written, which is what makes a destination stride of 0 a reduction
// (e.g. add with src2 == dst). That exact order is kept by an element-at-a-time path whenever the
// destination overlaps a source; otherwise (the common elementwise case, or a perfectly in-place
// op) rows are converted to float, computed by a per-op loop, and rounded back, which is
// equivalent and several times faster. `mac` also reads its destination (dst = dst + a * b): the
// row path reads the destination row before overwriting it, which is the same as sequential order
// as long as every destination element has its own address (a stride-0 destination, a dot
// product, takes the sequential path).
#include "simulator/Functional.h"

#include "simulator/HalfTable.h"
#include "simulator/Simulator.h"
#include "support/Half.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace npuc::sim {

namespace {

/// Integer results: round to nearest (ties to even), then saturate to the type's range; NaN
/// becomes 0. This is the quantised targets' requantisation (docs/ISA.md).
template <typename I> inline I saturate(float v) {
  if (std::isnan(v))
    return 0;
  double r = std::nearbyint(double(v));
  double lo = double(std::numeric_limits<I>::min()), hi = double(std::numeric_limits<I>::max());
  return static_cast<I>(std::min(hi, std::max(lo, r)));
}

inline float load(const uint8_t *p, isa::ElemType t) {
  if (t == isa::ElemType::F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  if (t == isa::ElemType::I8)
    return float(static_cast<int8_t>(*p));
  if (t == isa::ElemType::I32) {
    int32_t i;
    std::memcpy(&i, p, 4);
    return float(i); // exact for |i| < 2^24
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fastHalfToFloat(h);
}

inline void store(uint8_t *p, isa::ElemType t, float v) {
  if (t == isa::ElemType::F32) {
    std::memcpy(p, &v, 4);
  } else if (t == isa::ElemType::I8) {
    *p = static_cast<uint8_t>(saturate<int8_t>(v));
  } else if (t == isa::ElemType::I32) {
    int32_t i = saturate<int32_t>(v);
    std::memcpy(p, &i, 4);
  } else {
    uint16_t h = floatToHalf(v);
    std::memcpy(p, &h, 2);
  }
}

struct Box {
  int level;
  int64_t lo, hi;
};

Box boxOf(const Operand &o, const int64_t *n) {
  int64_t lo = 0, hi = 0;
  for (int d = 0; d < 3; ++d) {
    int64_t span = (n[d] - 1) * o.stride[d];
    lo += std::min<int64_t>(0, span);
    hi += std::max<int64_t>(0, span);
  }
  return {o.level, o.addr + lo * o.elemBytes, o.addr + (hi + 1) * o.elemBytes};
}

bool overlaps(const Box &a, const Box &b) {
  return a.level == b.level && a.lo < b.hi && b.lo < a.hi;
}

/// Whether every element of the box has its own address (row-major-like nesting), so that an
/// element-for-element in-place op has no cross-element dependence.
bool distinctElements(const Operand &x, const int64_t *n) {
  int64_t inner = 1; // extent, in elements, of one step of the next dimension
  for (int d = 0; d < 3; ++d) {
    if (n[d] > 1 && x.stride[d] < inner)
      return false;
    if (n[d] > 1)
      inner = x.stride[d] * n[d];
  }
  return true;
}

bool sameAccess(const Operand &a, const Operand &b, const int64_t *n) {
  return distinctElements(a, n) && a.level == b.level && a.addr == b.addr && a.type == b.type &&
         a.stride[0] == b.stride[0] && a.stride[1] == b.stride[1] && a.stride[2] == b.stride[2];
}

/// One instruction of OP; each element's value is the op's row in isa/VectorOps.def.
template <isa::VecOp OP> void runVector(const VectorOp &o, Memory &mem, bool sequential) {
  constexpr bool two = isa::vecOpReadsSrc2(OP);
  constexpr bool readsDst = isa::vecOpReadsDst(OP);
  uint8_t *d = mem.level(o.dst.level).data();
  const uint8_t *s1 = mem.level(o.src1.level).data();
  const uint8_t *s2 = two ? mem.level(o.src2.level).data() : nullptr;
  const int64_t n0 = o.n[0];
  const float i0v = o.imm0, i1v = o.imm1;
  auto addr = [](const Operand &x, int64_t i0, int64_t i1, int64_t i2) {
    return x.addr + x.elemBytes * (i0 * x.stride[0] + i1 * x.stride[1] + i2 * x.stride[2]);
  };
  if (sequential) {
    for (int64_t i2 = 0; i2 < o.n[2]; ++i2)
      for (int64_t i1 = 0; i1 < o.n[1]; ++i1)
        for (int64_t i0 = 0; i0 < n0; ++i0) {
          float a = load(s1 + addr(o.src1, i0, i1, i2), o.src1.type);
          float b = two ? load(s2 + addr(o.src2, i0, i1, i2), o.src2.type) : 0.0f;
          uint8_t *at = d + addr(o.dst, i0, i1, i2);
          float c = readsDst ? load(at, o.dst.type) : 0.0f;
          store(at, o.dst.type, isa::vecOpApply<OP>(a, b, c, i0v, i1v));
        }
    return;
  }
  thread_local std::vector<float> ra, rb, rc;
  ra.resize(static_cast<size_t>(n0));
  rb.resize(static_cast<size_t>(n0));
  rc.resize(static_cast<size_t>(n0));
  auto loadRow = [&](const uint8_t *base, const Operand &x, int64_t i1, int64_t i2, float *out) {
    const uint8_t *p = base + addr(x, 0, i1, i2);
    int64_t step = x.elemBytes * x.stride[0];
    if (x.type == isa::ElemType::F32 && x.stride[0] == 1) {
      std::memcpy(out, p, static_cast<size_t>(n0) * 4);
      return;
    }
    for (int64_t i0 = 0; i0 < n0; ++i0)
      out[i0] = load(p + i0 * step, x.type);
  };
  for (int64_t i2 = 0; i2 < o.n[2]; ++i2)
    for (int64_t i1 = 0; i1 < o.n[1]; ++i1) {
      float *a = ra.data(), *b = rb.data(), *c = rc.data();
      loadRow(s1, o.src1, i1, i2, a);
      if constexpr (two)
        loadRow(s2, o.src2, i1, i2, b);
      if constexpr (readsDst)
        loadRow(d, o.dst, i1, i2, c);
      for (int64_t i0 = 0; i0 < n0; ++i0)
        a[i0] = isa::vecOpApply<OP>(a[i0], two ? b[i0] : 0.0f, readsDst ? c[i0] : 0.0f, i0v, i1v);
      uint8_t *p = d + addr(o.dst, 0, i1, i2);
      int64_t step = o.dst.elemBytes * o.dst.stride[0];
      if (o.dst.type == isa::ElemType::F32 && o.dst.stride[0] == 1)
        std::memcpy(p, a, static_cast<size_t>(n0) * 4);
      else
        for (int64_t i0 = 0; i0 < n0; ++i0)
          store(p + i0 * step, o.dst.type, a[i0]);
    }
}

} // namespace

void executeVector(const VectorOp &o, Memory &mem) {
  if (o.n[0] == 0 || o.n[1] == 0 || o.n[2] == 0)
    return;
  // Row-at-a-time is equivalent to sequential order unless the destination aliases a source in
  // any way other than element-for-element (same address, dtype and strides).
  Box dst = boxOf(o.dst, o.n);
  bool sequential = overlaps(dst, boxOf(o.src1, o.n)) && !sameAccess(o.dst, o.src1, o.n);
  if (isa::vecOpReadsSrc2(o.op))
    sequential =
        sequential || (overlaps(dst, boxOf(o.src2, o.n)) && !sameAccess(o.dst, o.src2, o.n));
  // An accumulating op whose destination elements share addresses reduces into them.
  if (isa::vecOpReadsDst(o.op))
    sequential = sequential || !distinctElements(o.dst, o.n);
  switch (o.op) {
#define NPUC_VEC_OP(E, NAME, SRCS, IMMS, READS_DST, RTL, RESULT)                                   \
  case isa::VecOp::E:                                                                              \
    return runVector<isa::VecOp::E>(o, mem, sequential);
#include "isa/VectorOps.def"
  }
}

} // namespace npuc::sim
