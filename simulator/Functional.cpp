// Functional.cpp - DMA and matmul data movement/arithmetic, plus the Memory image.
//
// The matmul is the simulator's hot spot (a ResNet-18 run is ~1.8 G MACs): A and B are converted
// to float once per instruction, then 4-row x 2-vector blocks of C accumulate in registers over
// the whole k loop (8-float AVX vectors where the CPU has them, else 4-float SSE ones), the edges
// in a plain i-k-j loop; every C element still receives its products in k order, multiply then
// add, each rounded to fp32 (the hardware's rounding order; no fused multiply-add).
#include "simulator/Functional.h"

#include "simulator/HalfTable.h"
#include "simulator/Simulator.h"
#include "support/Error.h"
#include "support/Half.h"

#include <algorithm>
#include <cstring>

namespace npuc::sim {

Memory::Memory(const isa::Target &t, int64_t dramBytes) {
  layout(t, dramBytes, true);
}

Memory Memory::sizesOnly(const isa::Target &t, int64_t dramBytes) {
  Memory m;
  m.layout(t, dramBytes, false);
  return m;
}

void Memory::growDram(int64_t bytes) {
  NPUC_ASSERT(sizesOnly_, "a Memory with data grows by resizing dram()");
  sizes_[size_t(dramIndex_)] = std::max(sizes_[size_t(dramIndex_)], bytes);
}

void Memory::layout(const isa::Target &t, int64_t dramBytes, bool allocate) {
  int maxIndex = -1;
  bool haveDram = false;
  for (const isa::MemoryLevel &l : t.levels) {
    if (l.index < 0)
      fail("target '{}': memory level '{}' has negative index {}", t.name, l.name, l.index);
    maxIndex = std::max(maxIndex, l.index);
  }
  if (dramBytes < 0)
    fail("simulator: DRAM size {} must not be negative", dramBytes);
  sizesOnly_ = !allocate;
  levels_.resize(static_cast<size_t>(maxIndex + 1));
  sizes_.assign(static_cast<size_t>(maxIndex + 1), 0);
  for (const isa::MemoryLevel &l : t.levels) {
    if (l.isDram) {
      if (haveDram)
        fail("target '{}': more than one DRAM level ('{}')", t.name, l.name);
      haveDram = true;
      dramIndex_ = l.index;
    }
    const int64_t bytes = l.isDram ? dramBytes : l.size;
    sizes_[static_cast<size_t>(l.index)] = bytes;
    if (allocate)
      levels_[static_cast<size_t>(l.index)].assign(static_cast<size_t>(bytes), 0);
  }
  if (!haveDram)
    fail("target '{}': no DRAM level", t.name);
}

void executeDma(const DmaOp &o, Memory &mem) {
  const int eb = o.src.elemBytes;
  uint8_t *src = mem.level(o.src.level).data();
  uint8_t *dst = mem.level(o.dst.level).data();
  uint8_t pad[8];
  std::memcpy(pad, &o.padValue, sizeof pad); // little-endian host: low bytes first
  const int64_t n0 = o.n[0];
  const int64_t lo0 = o.padLo[0], hi0 = n0 - o.padHi[0];
  const bool contiguous = o.src.stride[0] == 1 && o.dst.stride[0] == 1;
  for (int64_t i2 = 0; i2 < o.n[2]; ++i2) {
    bool pad2 = i2 < o.padLo[2] || i2 >= o.n[2] - o.padHi[2];
    for (int64_t i1 = 0; i1 < o.n[1]; ++i1) {
      bool padRow = pad2 || i1 < o.padLo[1] || i1 >= o.n[1] - o.padHi[1];
      int64_t dRow = o.dst.addr + eb * (i1 * o.dst.stride[1] + i2 * o.dst.stride[2]);
      auto padElem = [&](int64_t i0) {
        std::memcpy(dst + dRow + eb * i0 * o.dst.stride[0], pad, static_cast<size_t>(eb));
      };
      if (padRow) {
        for (int64_t i0 = 0; i0 < n0; ++i0)
          padElem(i0);
        continue;
      }
      int64_t sRow = o.src.addr + eb * ((i1 - o.padLo[1]) * o.src.stride[1] +
                                        (i2 - o.padLo[2]) * o.src.stride[2]);
      for (int64_t i0 = 0; i0 < lo0; ++i0)
        padElem(i0);
      if (contiguous && hi0 > lo0) {
        std::memmove(dst + dRow + eb * lo0, src + sRow, static_cast<size_t>(eb * (hi0 - lo0)));
      } else {
        for (int64_t i0 = lo0; i0 < hi0; ++i0)
          std::memmove(dst + dRow + eb * i0 * o.dst.stride[0],
                       src + sRow + eb * (i0 - lo0) * o.src.stride[0], static_cast<size_t>(eb));
      }
      for (int64_t i0 = std::max(hi0, lo0); i0 < n0; ++i0)
        padElem(i0);
    }
  }
}

namespace {

/// Reads `count` contiguous elements of type `t` at `p` into floats.
void loadFloats(const uint8_t *p, isa::ElemType t, int64_t count, float *out) {
  if (t == isa::ElemType::F32) {
    std::memcpy(out, p, static_cast<size_t>(count) * 4);
    return;
  }
  const float *table = halfTable();
  for (int64_t i = 0; i < count; ++i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    out[i] = table[h];
  }
}

} // namespace

/// int8 x int8 -> int32: exact products, int32 accumulation wrapping modulo 2^32 like the
/// hardware's adders (VTA's GEMM core does the same).
void executeMatmulInt8(const isa::TensorUnit &tu, const MatmulOp &o, Memory &mem) {
  const int64_t m = o.m, k = o.k, n = o.n;
  const int8_t *a = reinterpret_cast<const int8_t *>(mem.level(tu.aLevel).data() + o.aAddr);
  const int8_t *b = reinterpret_cast<const int8_t *>(mem.level(tu.bLevel).data() + o.bAddr);
  uint8_t *cp = mem.level(tu.accLevel).data() + o.cAddr;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      uint32_t acc = 0;
      if (o.accumulate)
        std::memcpy(&acc, cp + 4 * (i * n + j), 4);
      for (int64_t kk = 0; kk < k; ++kk)
        acc += static_cast<uint32_t>(int32_t(a[i * k + kk]) * int32_t(b[kk * n + j]));
      std::memcpy(cp + 4 * (i * n + j), &acc, 4);
    }
}

namespace {

/// The register-blocked part of C += A * B: rows [0, mMain) (a multiple of 4) in blocks of 4 rows
/// x 2 vectors of columns, each accumulator in a register across the whole k loop (GCC/Clang
/// vector extensions), starting at column j and for as many whole blocks as fit in n. Returns
/// the first column not done. Each C element still receives its products one at a time in k
/// order, each product and each sum rounded to fp32 (lane-wise IEEE multiply, then add; no
/// fused multiply-add: the targets used below have none), so the result is bit-identical to the
/// naive loop whatever the vector width.
template <typename V>
[[gnu::always_inline]] inline int64_t blocks(const float *ap, const float *bp, float *cr,
                                             int64_t mMain, int64_t k, int64_t n, int64_t j) {
  constexpr int64_t L = sizeof(V) / sizeof(float), RJ = 2 * L;
  auto load = [](V &v, const float *p) { std::memcpy(&v, p, sizeof v); };
  auto store = [](float *p, const V &v) { std::memcpy(p, &v, sizeof v); };
  const int64_t jEnd = j + (n - j) / RJ * RJ;
  for (int64_t i0 = 0; i0 < mMain; i0 += 4)
    for (int64_t j0 = j; j0 < jEnd; j0 += RJ) {
      float *c0 = cr + i0 * n + j0, *c1 = c0 + n, *c2 = c1 + n, *c3 = c2 + n;
      V x0, y0, x1, y1, x2, y2, x3, y3, bx, by; // row r: columns j0.. (x), j0 + L.. (y)
      load(x0, c0), load(y0, c0 + L), load(x1, c1), load(y1, c1 + L);
      load(x2, c2), load(y2, c2 + L), load(x3, c3), load(y3, c3 + L);
      const float *a0 = ap + i0 * k, *a1 = a0 + k, *a2 = a1 + k, *a3 = a2 + k;
      const float *brow = bp + j0;
      for (int64_t kk = 0; kk < k; ++kk, brow += n) {
        load(bx, brow);
        load(by, brow + L);
        x0 = x0 + a0[kk] * bx, y0 = y0 + a0[kk] * by;
        x1 = x1 + a1[kk] * bx, y1 = y1 + a1[kk] * by;
        x2 = x2 + a2[kk] * bx, y2 = y2 + a2[kk] * by;
        x3 = x3 + a3[kk] * bx, y3 = y3 + a3[kk] * by;
      }
      store(c0, x0), store(c0 + L, y0), store(c1, x1), store(c1 + L, y1);
      store(c2, x2), store(c2 + L, y2), store(c3, x3), store(c3 + L, y3);
    }
  return jEnd;
}

using V4 = float __attribute__((vector_size(16))); // one SSE register (baseline x86-64)

#if defined(__x86_64__) && defined(__GNUC__)
using V8 = float __attribute__((vector_size(32))); // one AVX register
/// 16-column blocks with AVX (no FMA: not enabled by target("avx")), then one 8-column block.
[[gnu::target("avx")]] int64_t blockedColumnsAvx(const float *ap, const float *bp, float *cr,
                                                 int64_t mMain, int64_t k, int64_t n) {
  return blocks<V4>(ap, bp, cr, mMain, k, n, blocks<V8>(ap, bp, cr, mMain, k, n, 0));
}
#endif

/// The blocked columns of C (see blocks()), with the widest vectors this CPU runs.
int64_t blockedColumns(const float *ap, const float *bp, float *cr, int64_t mMain, int64_t k,
                       int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx = __builtin_cpu_supports("avx");
  if (avx)
    return blockedColumnsAvx(ap, bp, cr, mMain, k, n);
#endif
  return blocks<V4>(ap, bp, cr, mMain, k, n, 0);
}

} // namespace

void executeMatmul(const isa::TensorUnit &tu, const MatmulOp &o, Memory &mem) {
  const int64_t m = o.m, k = o.k, n = o.n;
  if (m == 0 || n == 0)
    return;
  if (tu.operandType == isa::ElemType::I8) {
    executeMatmulInt8(tu, o, mem);
    return;
  }
  // Thread-local scratch: the buffers are reused across the millions of matmuls of a model run.
  thread_local std::vector<float> a, b, c;
  a.resize(static_cast<size_t>(m * k));
  b.resize(static_cast<size_t>(k * n));
  c.resize(static_cast<size_t>(m * n));
  loadFloats(mem.level(tu.aLevel).data() + o.aAddr, tu.operandType, m * k, a.data());
  loadFloats(mem.level(tu.bLevel).data() + o.bAddr, tu.operandType, k * n, b.data());
  uint8_t *cp = mem.level(tu.accLevel).data() + o.cAddr;
  if (o.accumulate)
    loadFloats(cp, tu.accType, m * n, c.data());
  else
    std::fill(c.begin(), c.end(), 0.0f);
  const float *ap = a.data();
  const float *bp = b.data();
  float *cr = c.data();
  constexpr int64_t RI = 4;
  const int64_t mMain = m / RI * RI;
  const int64_t nMain = blockedColumns(ap, bp, cr, mMain, k, n);
  auto naive = [&](int64_t iBegin, int64_t iEnd, int64_t jBegin, int64_t jEnd) {
    for (int64_t i = iBegin; i < iEnd; ++i) {
      float *row = cr + i * n;
      for (int64_t kk = 0; kk < k; ++kk) {
        const float av = ap[i * k + kk];
        const float *brow = bp + kk * n;
        for (int64_t j = jBegin; j < jEnd; ++j)
          row[j] = row[j] + av * brow[j];
      }
    }
  };
  naive(0, mMain, nMain, n); // right edge of the blocked rows
  naive(mMain, m, 0, n);     // bottom rows
  if (tu.accType == isa::ElemType::F32) {
    std::memcpy(cp, cr, static_cast<size_t>(m * n) * 4);
  } else {
    for (int64_t i = 0; i < m * n; ++i) {
      uint16_t h = floatToHalf(cr[i]);
      std::memcpy(cp + 2 * i, &h, 2);
    }
  }
}

} // namespace npuc::sim
