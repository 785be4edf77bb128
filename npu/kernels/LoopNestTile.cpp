// LoopNestTile.cpp - the loop-nest kernel's tiled path: a group whose tensors do not fit L1 whole
// runs its outer loop in chunks.
//
// Every top-level nest of the reference function (one per node, intermediates allocated around
// them) is taken down its leading extent-1 loops to its first real loop; the chunked "rows" are
// R = the gcd of those loops' extents, and a nest whose loop is longer (a Reshape's flat copy)
// splits it into R x extent/R. A chunk is a range of rows in every nest at once; when no chunk
// of the first loop fits, the loop inside it is chunked (depth 2, 3), the outer ones taking one
// value per chunk. Chunk sizes: the divisors of R and R halved repeatedly, largest first. For each
// chunk the region every buffer is accessed over comes from the affine index expressions: an index
// c0 + sum(c_l * v_l) maps each term onto the buffer dimension whose stride divides c_l, and when
// no digit carries (checked over the loop ranges) the accessed elements lie in a box of the
// buffer's dimensions, staged compactly (the index is rewritten onto the box). An index that is
// not affine falls back to its interval of flat elements. The chunk is independent of the others
// when every buffer it writes (outputs, intermediates) is written densely over its box, every read
// of such a buffer stays inside what the same chunk wrote and no two chunks write the same
// element (so a reduced loop is never the chunked one). Inputs and constants are staged per
// chunk (a constant whose region is the same for every chunk, once), double-buffered when two
// chunks fit, outputs stored per chunk; the compute of a chunk goes through the same emit-npu
// compilation as the whole path, compiled once per distinct chunk text (the full chunks share
// one, the last may differ). A chunk's staging DMAs per side stay within the token queue depth.
#include "npu/kernels/LoopNest.h"
#include "npu/kernels/LoopNestRegion.h"

#include "npu/isel/EmitNpu.h"
#include "npu/kernels/Plan.h"
#include "support/Error.h"
#include "tir/Bound.h"
#include "tir/IRMutator.h"
#include "tir/IRVisitor.h"
#include "tir/Linear.h"
#include "tir/Printer.h"
#include "tir/Simplify.h"
#include "tir/Substitute.h"

#include <cstring>
#include <fmt/format.h>
#include <functional>
#include <numeric>

namespace npuc::npu::loopnest {

using namespace tir;

namespace {

const DataType kF16 = DataType::Float(16), kF32 = DataType::Float(32);

constexpr size_t kMaxDepth = 3;
// A bound on the chunks of one group: each is unrolled into the program.
constexpr int64_t kMaxChunks = 4096;

struct Plan {
  int64_t T = 0, chunks = 0;
  std::vector<Stmt> stmts; // per chunk, in the reference buffers
  std::vector<Slot> slots;
};

} // namespace

Kernel lowerTiled(const graph::Graph &g, const graph::FusedGroup &grp, Builder &b, const DramCtx &d,
                  bool doubleBuffer, const PrimFunc &ref, const std::vector<graph::ValueId> &pv,
                  const std::string &whole) {
  Kernel k;
  const Hw &hw = b.hw();
  const isa::Target &t = *hw.t;
  auto reject = [&](const std::string &why) {
    k.reject = "loop-nest kernel: " + whole + "; " + why;
    return k;
  };
  // The nests and their rows.
  Stmt top = ref.body;
  std::vector<Buffer> inter;
  while (const auto *a = top.as<AllocateNode>()) {
    inter.push_back(a->buffer);
    top = a->body;
  }
  const std::vector<Stmt> tops = flatten(top);
  // Parameters and intermediates: what the kernel stages or allocates per chunk.
  const std::string l1 = t.levels.at(static_cast<size_t>(hw.l1)).name;
  const std::set<const BufferNode *> reads = readBuffers(ref.body);
  std::vector<Staged> staged(pv.size());
  std::vector<Slot> proto;
  for (size_t i = 0; i < pv.size(); ++i) {
    const graph::Value &v = g.value(pv[i]);
    bool out = std::find(grp.outputs.begin(), grp.outputs.end(), pv[i]) != grp.outputs.end();
    staged[i].value = pv[i];
    staged[i].role = out              ? Staged::Role::Output
                     : v.isConstant() ? Staged::Role::Const
                                      : Staged::Role::Input;
    Slot s;
    s.ref = ref.params[i];
    s.param = static_cast<int>(i);
    s.writes = out;
    proto.push_back(s);
  }
  for (const Buffer &x : inter) {
    Slot s;
    s.ref = x;
    s.writes = true;
    proto.push_back(s);
  }
  std::set<const BufferNode *> slotSet;
  for (const Slot &s : proto)
    slotSet.insert(s.ref.get());

  // The regions of every buffer per chunk for T rows a chunk; "" or why it cannot tile.
  auto analyse = [&](const Rows &rows, int64_t T, Plan &p) -> std::string {
    const int64_t R = rows.R, perPrefix = ceilDiv(R, T);
    p.T = T;
    p.chunks = perPrefix;
    for (int64_t e : rows.prefix)
      p.chunks *= e;
    p.slots = proto;
    std::vector<std::map<const BufferNode *, std::vector<Access>>> accs; // per chunk
    for (int64_t c = 0; c < p.chunks; ++c) {
      std::vector<int64_t> at(rows.prefix.size());
      for (int64_t pre = c / perPrefix, l = static_cast<int64_t>(at.size()); l-- > 0;) {
        at[static_cast<size_t>(l)] = pre % rows.prefix[static_cast<size_t>(l)];
        pre /= rows.prefix[static_cast<size_t>(l)];
      }
      const int64_t r0 = c % perPrefix * T;
      std::vector<Stmt> parts;
      for (const Nest &n : rows.nests)
        parts.push_back(chunkOf(n, at, r0, std::min(T, R - r0)));
      p.stmts.push_back(seq(parts));
      std::string loopWhy;
      accs.push_back(accessesOf(p.stmts.back(), slotSet, loopWhy));
      if (!loopWhy.empty())
        return loopWhy;
    }
    for (Slot &s : p.slots) {
      const std::string &nm = s.ref->name;
      const bool nhwc = s.param >= 0 && isNhwc(g.value(pv[static_cast<size_t>(s.param)])) &&
                        staged[static_cast<size_t>(s.param)].role != Staged::Role::Const;
      // The view: dimensions whose digits carry merge into their outer neighbour (a flat copy's
      // index over [rows, 12, 64] moves rows of 768); in an NHWC tensor only W into H, the one
      // pair contiguous in both layouts.
      s.view = s.ref->shape;
      for (bool merged = true; merged && s.view.size() > (nhwc ? 3 : 1);) {
        merged = false;
        for (auto &acc : accs)
          for (const Access &x : acc[s.ref.get()]) {
            Region w;
            bool dense = false;
            int carry = -1;
            if (!merged && !boxOf(x, s.view, w, dense, &carry) && carry > (nhwc ? 2 : 0)) {
              const auto c = static_cast<size_t>(carry);
              s.view[c - 1] *= s.view[c];
              s.view.erase(s.view.begin() + static_cast<std::ptrdiff_t>(c));
              merged = true;
            }
          }
      }
      for (auto &acc : accs) {
        const std::vector<Access> &xs = acc[s.ref.get()];
        Region r;
        r.lo.assign(s.view.size(), 0);
        r.hi.assign(s.view.size(), -1);
        bool first = true, box = true;
        for (const Access &x : xs) { // writes first: they define the region
          if (!x.write)
            continue;
          Region w;
          bool dense = false;
          if (!boxOf(x, s.view, w, dense) || !dense || (!first && !(w == r)))
            return fmt::format("a chunk's writes of {} are not one dense box", nm);
          r = w;
          first = false;
        }
        for (const Access &x : xs) {
          if (x.write)
            continue;
          Region w;
          bool dense = false;
          const bool isBox = boxOf(x, s.view, w, dense);
          if (s.writes) {
            if (!isBox || first || !r.contains(w))
              return fmt::format("a chunk reads {} outside what it writes", nm);
            continue;
          }
          if (!isBox)
            box = false;
          else
            r = first ? w : hull(r, w);
          first = false;
        }
        if (!box) { // a flat interval of the reads instead
          Region f{false, {Interval::kPosInf}, {Interval::kNegInf}};
          for (const Access &x : xs) {
            if (!x.flat.bounded())
              return fmt::format("cannot bound the elements of {} a chunk reads", nm);
            f.lo[0] = std::min(f.lo[0], x.flat.lo);
            f.hi[0] = std::max(f.hi[0], x.flat.hi);
          }
          r = f;
        }
        s.regions.push_back(r);
      }
    }
    for (Slot &s : p.slots) {
      s.box =
          std::all_of(s.regions.begin(), s.regions.end(), [](const Region &r) { return r.box; });
      if (!s.box) {
        if (s.param >= 0 && isNhwc(g.value(pv[static_cast<size_t>(s.param)])) &&
            staged[static_cast<size_t>(s.param)].role != Staged::Role::Const)
          return fmt::format("the reads of {} are not a box of its NHWC layout", s.ref->name);
        for (Region &r : s.regions) // a box region of another chunk as its flat interval
          if (r.box) {
            const std::vector<int64_t> st = rowMajor(s.view);
            int64_t lo = 0, hi = 0;
            for (size_t dd = 0; dd < st.size(); ++dd) {
              lo += r.lo[dd] * st[dd];
              hi += r.hi[dd] * st[dd];
            }
            r = Region{false, {lo}, {hi}};
          }
      }
      const size_t rank = s.box ? s.view.size() : 1;
      s.capShape.assign(rank, 0);
      for (const Region &r : s.regions)
        for (size_t dd = 0; dd < rank; ++dd)
          s.capShape[dd] = std::max(s.capShape[dd], r.hi[dd] - r.lo[dd] + 1);
      s.cap = 1;
      for (int64_t e : s.capShape)
        s.cap *= std::max<int64_t>(e, 1);
      s.once = s.param >= 0 && staged[static_cast<size_t>(s.param)].role == Staged::Role::Const &&
               std::all_of(s.regions.begin(), s.regions.end(),
                           [&](const Region &r) { return r == s.regions[0]; });
    }
    return "";
  };

  // A slot's staging copy of chunk c (inputs and constants in, outputs out), at home address
  // `home` (bytes; the constant's fp32 copy for constants) and chip address `chip`.
  auto stageCopy = [&](const Slot &s, size_t c, int64_t home, int64_t chip,
                       std::vector<Stmt> &out) -> int64_t {
    const Staged &st = staged[static_cast<size_t>(s.param)];
    const graph::Value &v = g.value(st.value);
    const Region &r = s.regions[c];
    if (r.volume() <= 0)
      return 0;
    const bool isConstant = st.role == Staged::Role::Const;
    const int u = isConstant ? 2 : 1; // 2-byte units per element
    std::vector<Dm> dims;
    int64_t off = 0; // elements
    if (s.box) {
      const std::vector<int64_t> cst = rowMajor(s.capShape);
      std::vector<int64_t> hst = rowMajor(s.view);
      if (!isConstant && isNhwc(v)) { // NHWC at home, logical NCHW (or N, C, H*W) on chip
        hst = {v.shape[2] * v.shape[3] * v.shape[1], 1, v.shape[3] * v.shape[1], v.shape[1]};
        if (s.view.size() == 3)
          hst = {hst[0], 1, v.shape[1]};
      }
      for (size_t dd = 0; dd < hst.size(); ++dd) {
        dims.push_back({r.hi[dd] - r.lo[dd] + 1, hst[dd] * u, cst[dd] * u});
        off += r.lo[dd] * hst[dd];
      }
      std::stable_sort(dims.begin(), dims.end(),
                       [](const Dm &a, const Dm &x) { return a.hs < x.hs; });
    } else {
      dims.push_back({r.hi[0] - r.lo[0] + 1, u, u});
      off = r.lo[0];
    }
    if (isConstant)
      dims.insert(dims.begin(), Dm{2, 1, 1});
    const int level = isConstant ? hw.dram : d.level(st.value, hw);
    boxCopy(b, st.role != Staged::Role::Output, level, home + off * 2 * u, chip, dims, out);
    return r.volume() * 2 * u;
  };
  const int64_t depth = t.tokenQueueDepth;
  auto al = [&](int64_t bytes) { return alignUp(bytes, hw.alignment(hw.l1)); };
  // L1 bytes of a plan: staged parameters (nb copies when per chunk), intermediates and working
  // copies (one each), and `extra` (what compilation allocates beyond those).
  auto need = [&](const Plan &p, int nb, const std::map<std::string, int64_t> &extra) {
    int64_t n = 0;
    std::map<std::string, int64_t> one = extra;
    for (const Slot &s : p.slots) {
      if (s.param < 0) {
        one[s.ref->name] = std::max(one[s.ref->name], al(s.cap * 4));
        continue;
      }
      const Staged &st = staged[static_cast<size_t>(s.param)];
      const bool isConstant = st.role == Staged::Role::Const;
      n += al(s.cap * (isConstant ? 4 : 2)) * (s.once || p.chunks == 1 ? 1 : nb);
      if (st.role == Staged::Role::Output && reads.count(s.ref.get()))
        one[s.ref->name + "_f32"] = std::max(one[s.ref->name + "_f32"], al(s.cap * 4));
    }
    for (const auto &[name, bytes] : one)
      n += bytes;
    return n;
  };
  // The most staging DMAs of a chunk on one side (a dry run without addresses).
  auto dmasPerSide = [&](const Plan &p) {
    size_t most = 0;
    std::vector<Stmt> once;
    for (size_t c = 0; c < static_cast<size_t>(p.chunks); ++c) {
      std::vector<Stmt> in, out;
      for (const Slot &s : p.slots)
        if (s.param >= 0) {
          const bool o = staged[static_cast<size_t>(s.param)].role == Staged::Role::Output;
          if (!s.once)
            stageCopy(s, c, 0, 0, o ? out : in);
          else if (c == 0)
            stageCopy(s, c, 0, 0, once);
        }
      most = std::max({most, in.size(), out.size(), once.size()});
    }
    return static_cast<int64_t>(most);
  };

  // Chunks of T rows, halving from R; double-buffered when more than one, single-buffered as a
  // last resort for chunks of one row.
  // Depth 1 first (the fewest, largest chunks), then deeper; chunks of T rows from R down,
  // double-buffered when more than one; single-buffered chunks of one row as the last resort.
  std::vector<Rows> depths;
  std::string last;
  for (size_t depth = 1; depth <= kMaxDepth; ++depth) {
    Rows rows;
    if (std::string why = rowsAt(tops, depth, rows); !why.empty()) {
      if (depths.empty())
        last = "cannot tile: " + why;
      break;
    }
    depths.push_back(std::move(rows));
  }
  struct Try {
    size_t depth;
    int64_t T;
    int nb;
  };
  std::vector<Try> tries;
  for (int nb : {2, 1})
    for (size_t dd = 0; dd < depths.size() && (nb == 1 || doubleBuffer); ++dd) {
      // The divisors of R (chunks that end on the rows' own boundaries: a channel plane of a
      // flat copy) and R halved repeatedly, largest first.
      const int64_t R = depths[dd].R;
      std::set<int64_t, std::greater<>> ts;
      for (int64_t T = R; T > 1; T = ceilDiv(T, 2))
        ts.insert(T);
      for (int64_t q = 1; q * q <= R; ++q)
        if (R % q == 0)
          ts.insert({q, R / q});
      for (int64_t T : ts)
        if (nb == 2 || T == 1)
          tries.push_back({dd, T, nb});
    }
  const int64_t free = b.freeBytes(hw.l1);
  // A region can be a box for small chunks only (an NHWC tensor read by a flat copy: one
  // channel plane at most), so a failed analysis goes on to smaller chunks, within a budget of
  // analysed chunks that bounds the compile time a group that cannot tile costs.
  int64_t budget = 4 * kMaxChunks;
  for (const auto &[dd, T, nb0] : tries) {
    const int64_t R = depths[dd].R;
    int64_t chunks = ceilDiv(R, T);
    for (int64_t e : depths[dd].prefix)
      chunks *= e;
    if (chunks > kMaxChunks || chunks > budget)
      continue;
    budget -= chunks;
    Plan p;
    if (std::string why = analyse(depths[dd], T, p); !why.empty()) {
      if (last.empty() || last.rfind("cannot tile: ", 0) == 0)
        last = "cannot tile: " + why;
      continue;
    }
    const int nb = p.chunks == 1 ? 1 : nb0;
    int64_t bytes = need(p, nb, {});
    const int64_t dmas = dmasPerSide(p);
    if (bytes > free || dmas * nb > depth) {
      last = bytes > free ? fmt::format("one chunk of {} of {} rows needs {} of {} ({} copies of "
                                        "the staged buffers), has {} free",
                                        T, R, bytesText(bytes), l1, nb, bytesText(free))
                          : fmt::format("one chunk of {} of {} rows stages {} DMAs on a side, "
                                        "more than the token queue depth {} allows ({} copies)",
                                        T, R, dmas, depth, nb);
      continue;
    }

    if (std::string why = overlap(p.slots); !why.empty()) {
      last = "cannot tile: " + why;
      continue;
    }

    // Compile each distinct chunk once.
    std::map<const BufferNode *, Slot *> bySlot;
    for (Slot &s : p.slots) {
      s.chunk = Buffer::make(s.ref->name, kF32, {s.cap});
      bySlot[s.ref.get()] = &s;
    }
    std::vector<Staged> st = staged;
    std::map<const BufferNode *, const Staged *> byParam;
    for (Slot &s : p.slots) {
      if (s.param < 0)
        continue;
      Staged &x = st[static_cast<size_t>(s.param)];
      x.onChip =
          Buffer::make(s.ref->name, x.role == Staged::Role::Const ? kF32 : kF16, {s.cap}, l1);
      if (x.role == Staged::Role::Output && reads.count(s.ref.get()))
        x.work = Buffer::make(s.ref->name + "_f32", kF32, {s.cap}, l1);
      byParam[s.chunk.get()] = &x;
    }
    struct Variant {
      Stmt body;
      std::vector<Buffer> allocs;
    };
    std::map<std::string, Variant> variants;
    std::vector<const Variant *> ofChunk;
    std::map<std::string, int64_t> extra;
    for (size_t c = 0; c < static_cast<size_t>(p.chunks); ++c) {
      Stmt body = rebase(p.stmts[c], bySlot, c);
      for (const Slot &s : p.slots)
        if (s.param < 0)
          body = AllocateNode::make(s.chunk, body);
      std::string key = toText(body);
      auto it = variants.find(key);
      if (it == variants.end()) {
        Variant v;
        std::string why;
        v.body = compileOnChip(body, st, byParam, hw, v.allocs, why);
        if (!why.empty()) { // what the nest cannot do in any chunk comes first
          k.reject = "loop-nest kernel: " + why + " (in chunks, since " + whole + ")";
          return k;
        }
        for (const Buffer &x : v.allocs)
          extra[x->name] = std::max(extra[x->name], al(x->numElements() * x->dtype.bytes()));
        it = variants.emplace(key, std::move(v)).first;
      }
      ofChunk.push_back(&it->second);
    }
    bytes = need(p, nb, extra);
    if (bytes > free) {
      last = fmt::format("one chunk of {} of {} rows needs {} of {}, has {} free", T, R,
                         bytesText(bytes), l1, bytesText(free));
      continue;
    }

    // Place: staged parameters (nb copies unless staged once), then the allocations by name.
    std::map<const BufferNode *, OnChip> paramAt;
    for (const Slot &s : p.slots)
      if (s.param >= 0) {
        const Staged &x = st[static_cast<size_t>(s.param)];
        OnChip oc{x.onChip->name, hw.l1, x.onChip->numElements() * x.onChip->dtype.bytes(),
                  s.once || p.chunks == 1 ? 1 : nb};
        const bool ok = b.reserve(oc);
        NPUC_ASSERT(ok, "the chunk's buffers were checked to fit");
        paramAt[x.onChip.get()] = oc;
      }
    std::map<std::string, OnChip> allocAt;
    for (const auto &[name, n] : extra) {
      OnChip oc{name, hw.l1, n, 1};
      const bool ok = b.reserve(oc);
      NPUC_ASSERT(ok, "the chunk's buffers were checked to fit");
      allocAt[name] = oc;
    }

    // Constants placed once in DRAM (fp32); staged once before the chunks or per chunk.
    std::map<int, int64_t> constAddr;
    std::vector<Stmt> body;
    int64_t staging = 0;
    for (const Slot &s : p.slots) {
      if (s.param < 0 || st[static_cast<size_t>(s.param)].role != Staged::Role::Const)
        continue;
      const Staged &x = st[static_cast<size_t>(s.param)];
      const graph::Value &v = g.value(x.value);
      std::vector<float> vals(static_cast<size_t>(numElements(v.shape)));
      for (size_t j = 0; j < vals.size(); ++j)
        vals[j] = v.f32 ? (*v.f32)[j] : static_cast<float>((*v.i64)[j]);
      std::vector<uint8_t> raw(vals.size() * 4);
      std::memcpy(raw.data(), vals.data(), raw.size());
      constAddr[s.param] = d.addConst(raw);
      if (s.once)
        k.dramBytes += stageCopy(s, 0, constAddr[s.param], paramAt.at(x.onChip.get()).base, body);
    }
    staging += static_cast<int64_t>(body.size());
    for (size_t c = 0; c < static_cast<size_t>(p.chunks); ++c) {
      const int64_t par = static_cast<int64_t>(c) % nb;
      auto chipOf = [&](const OnChip &oc) { return oc.base + (oc.count > 1 ? par * oc.bytes : 0); };
      std::vector<Stmt> in, out;
      std::map<const BufferNode *, std::pair<int, int64_t>> at;
      for (const Slot &s : p.slots) {
        if (s.param < 0)
          continue;
        const Staged &x = st[static_cast<size_t>(s.param)];
        const int64_t chip = chipOf(paramAt.at(x.onChip.get()));
        at[x.onChip.get()] = {hw.l1, chip};
        if (s.once)
          continue;
        const int64_t home =
            x.role == Staged::Role::Const ? constAddr.at(s.param) : d.addrOf(x.value);
        k.dramBytes += stageCopy(s, c, home, chip, x.role == Staged::Role::Output ? out : in);
      }
      for (const Buffer &x : ofChunk[c]->allocs)
        at[x.get()] = {hw.l1, allocAt.at(x->name).base};
      staging += static_cast<int64_t>(in.size() + out.size());
      body.insert(body.end(), in.begin(), in.end());
      body.push_back(resolveOperands(t, ofChunk[c]->body, at));
      body.insert(body.end(), out.begin(), out.end());
    }
    k.body = b.wrapAllocations(seq(body));
    std::string why = finishKernel(
        t, grp, staging,
        fmt::format("{} of on-chip buffers, tiled: {} chunk(s) of {} of {} rows ({} variant(s) "
                    "compiled), {}",
                    bytesText(bytes), p.chunks, T, R, variants.size(),
                    nb == 2 ? "double-buffered" : "single-buffered"),
        k);
    if (!why.empty())
      return reject("tiled: " + why);
    return k;
  }
  return reject(last.empty() ? "cannot tile" : last);
}

} // namespace npuc::npu::loopnest
