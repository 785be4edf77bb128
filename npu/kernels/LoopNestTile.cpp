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

#include "npu/kernels/Plan.h"
#include "npu/isel/EmitNpu.h"
#include "npu/kernels/Vector.h"
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

// One chunking analysed: per chunk its statements (in the reference buffers), and every staged
// or allocated buffer's regions.
struct Plan {
  int64_t T = 0, chunks = 0;
  std::vector<Stmt> stmts;
  std::vector<Slot> slots;
};

// A chunk's compiled computation (the full chunks share one, the last may differ).
struct Variant {
  Stmt body;
  std::vector<Buffer> allocs;
};

} // namespace

// The tiled path of one group: its nests, the parameters it stages and the intermediates it
// allocates per chunk, and the analysis and lowering of one chunking.
class Tiler {
public:
  Tiler(const graph::Graph &g, const graph::FusedGroup &grp, const Hw &hw, const PrimFunc &ref,
        const std::vector<graph::ValueId> &pv);

  /// The chunkings the search tries, in order (ChunkedPath::candidates).
  std::vector<Chunking> candidates(bool doubleBuffer) const;
  int64_t chunksOf(const Chunking &c) const;
  /// "" when chunking `c` can run: its regions are boxes or intervals, its staged buffers and
  /// intermediates fit `free` bytes of L1 (before compilation, which may allocate more), its
  /// staging DMAs fit the token queue and no two chunks write the same element. Else why not.
  /// `weak`: the reason is the analysis's (a smaller chunk may have boxes), which does not
  /// replace a capacity reason found before it. `d` gives the tensors' levels.
  std::string check(const Chunking &c, int64_t free, const DramCtx &d, Plan *out,
                    bool *weak = nullptr) const;
  /// What lowering one chunking ends in: a kernel, a reason to try the next chunking, or a
  /// reason that no chunking can help (k.reject).
  enum class Outcome { Lowered, Next, Rejected };
  Outcome lower(const Chunking &c, Builder &b, const DramCtx &d, const std::string &whole,
                Kernel &k, std::string &why, bool &weak) const;
  /// Element operations of the reference nest (stores, times their loops' trip counts).
  int64_t work() const;
  /// DRAM bytes the chunks of a checked plan stage in and out.
  std::pair<int64_t, int64_t> stagedBytes(const Plan &p) const;
  const Hw *hw() const { return &hw_; }

  std::vector<Rows> depths; // the nests chunked at depth 1, 2, ... (as deep as they go)
  std::string rowsWhy;      // why they cannot be chunked at depth 1 ("" when they can)

private:
  std::string analyse(const Rows &rows, int64_t T, Plan &p) const;
  std::string regionsOf(Slot &s, const std::vector<std::map<const BufferNode *,
                                                           std::vector<Access>>> &accs) const;
  std::string finishSlot(Slot &s) const;
  int64_t stageCopy(const Slot &s, size_t c, int64_t home, int64_t chip, const Builder &b,
                    const DramCtx &d, std::vector<Stmt> &out) const;
  int64_t need(const Plan &p, int nb, const std::map<std::string, int64_t> &extra) const;
  int64_t dmasPerSide(const Plan &p, const DramCtx &d) const;
  bool isNhwcParam(const Slot &s) const;
  std::string compileVariants(Plan &p, std::vector<Staged> &st, std::map<std::string, Variant> &variants,
                              std::vector<const Variant *> &ofChunk,
                              std::map<std::string, int64_t> &extra) const;
  Stmt assemble(const Plan &p, int nb, const std::vector<Staged> &st,
                const std::vector<const Variant *> &ofChunk,
                const std::map<std::string, int64_t> &extra, Builder &b, const DramCtx &d,
                Kernel &k, int64_t &staging) const;

  const graph::Graph &g_;
  const graph::FusedGroup &grp_;
  const Hw &hw_;
  const PrimFunc &ref_;
  const std::vector<graph::ValueId> &pv_;
  std::string l1_;
  std::set<const BufferNode *> reads_;
  std::vector<Staged> staged_;
  std::vector<Slot> proto_;
  std::set<const BufferNode *> slotSet_;
};

Tiler::Tiler(const graph::Graph &g, const graph::FusedGroup &grp, const Hw &hw,
             const PrimFunc &ref, const std::vector<graph::ValueId> &pv)
    : g_(g), grp_(grp), hw_(hw), ref_(ref), pv_(pv) {
  // The nests and their rows.
  Stmt top = ref.body;
  std::vector<Buffer> inter;
  while (const auto *a = top.as<AllocateNode>()) {
    inter.push_back(a->buffer);
    top = a->body;
  }
  const std::vector<Stmt> tops = flatten(top);
  // Parameters and intermediates: what the kernel stages or allocates per chunk.
  l1_ = hw.t->levels.at(static_cast<size_t>(hw.l1)).name;
  reads_ = readBuffers(ref.body);
  staged_.resize(pv.size());
  for (size_t i = 0; i < pv.size(); ++i) {
    const graph::Value &v = g.value(pv[i]);
    bool out = std::find(grp.outputs.begin(), grp.outputs.end(), pv[i]) != grp.outputs.end();
    staged_[i].value = pv[i];
    staged_[i].role = out              ? Staged::Role::Output
                      : v.isConstant() ? Staged::Role::Const
                                       : Staged::Role::Input;
    Slot s;
    s.ref = ref.params[i];
    s.param = static_cast<int>(i);
    s.writes = out;
    proto_.push_back(s);
  }
  for (const Buffer &x : inter) {
    Slot s;
    s.ref = x;
    s.writes = true;
    proto_.push_back(s);
  }
  for (const Slot &s : proto_)
    slotSet_.insert(s.ref.get());
  for (size_t depth = 1; depth <= kMaxDepth; ++depth) {
    Rows rows;
    if (std::string why = rowsAt(tops, depth, rows); !why.empty()) {
      if (depths.empty())
        rowsWhy = why;
      break;
    }
    depths.push_back(std::move(rows));
  }
}

bool Tiler::isNhwcParam(const Slot &s) const {
  return s.param >= 0 && isNhwc(g_.value(pv_[static_cast<size_t>(s.param)])) &&
         staged_[static_cast<size_t>(s.param)].role != Staged::Role::Const;
}

// Chunks of T rows: depth 1 first (the fewest, largest chunks), then deeper; at each depth the
// divisors of R (chunks that end on the rows' own boundaries: a channel plane of a flat copy)
// and R halved repeatedly, largest first, double-buffered; single-buffered chunks of one row as
// the last resort (the only ones without double buffering).
std::vector<Chunking> Tiler::candidates(bool doubleBuffer) const {
  std::vector<Chunking> tries;
  for (int nb : {2, 1})
    for (size_t dd = 0; dd < depths.size() && (nb == 1 || doubleBuffer); ++dd) {
      const int64_t R = depths[dd].R;
      std::set<int64_t, std::greater<>> ts;
      for (int64_t T = R; T > 1; T = ceilDiv(T, 2))
        ts.insert(T);
      for (int64_t q = 1; q * q <= R; ++q)
        if (R % q == 0)
          ts.insert({q, R / q});
      for (int64_t T : ts)
        if (nb == 2 || T == 1)
          tries.push_back({dd + 1, T, nb});
    }
  return tries;
}

int64_t Tiler::chunksOf(const Chunking &c) const {
  const Rows &rows = depths[c.depth - 1];
  int64_t chunks = ceilDiv(rows.R, c.T);
  for (int64_t e : rows.prefix)
    chunks *= e;
  return chunks;
}

// The regions of every buffer per chunk for T rows a chunk; "" or why it cannot tile.
std::string Tiler::analyse(const Rows &rows, int64_t T, Plan &p) const {
  const int64_t R = rows.R, perPrefix = ceilDiv(R, T);
  p.T = T;
  p.chunks = perPrefix;
  for (int64_t e : rows.prefix)
    p.chunks *= e;
  p.slots = proto_;
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
    accs.push_back(accessesOf(p.stmts.back(), slotSet_, loopWhy));
    if (!loopWhy.empty())
      return loopWhy;
  }
  for (Slot &s : p.slots)
    if (std::string why = regionsOf(s, accs); !why.empty())
      return why;
  for (Slot &s : p.slots)
    if (std::string why = finishSlot(s); !why.empty())
      return why;
  return "";
}

// A slot's view and its region in every chunk: the box its writes define (dense, the same for
// every write) or that holds its reads, or the flat interval of its reads.
std::string
Tiler::regionsOf(Slot &s,
                 const std::vector<std::map<const BufferNode *, std::vector<Access>>> &accs) const {
  const std::string &nm = s.ref->name;
  const bool nhwc = isNhwcParam(s);
  // The view: dimensions whose digits carry merge into their outer neighbour (a flat copy's
  // index over [rows, 12, 64] moves rows of 768); in an NHWC tensor only W into H, the one
  // pair contiguous in both layouts.
  s.view = s.ref->shape;
  for (bool merged = true; merged && s.view.size() > (nhwc ? 3 : 1);) {
    merged = false;
    for (const auto &acc : accs) {
      auto xs = acc.find(s.ref.get());
      if (xs == acc.end())
        continue;
      for (const Access &x : xs->second) {
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
  }
  static const std::vector<Access> kNone;
  for (const auto &acc : accs) {
    auto found = acc.find(s.ref.get());
    const std::vector<Access> &xs = found == acc.end() ? kNone : found->second;
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
  return "";
}

// A slot's regions all boxes or all flat intervals, its capacity over the chunks, and whether it
// is a constant staged once (the same region in every chunk).
std::string Tiler::finishSlot(Slot &s) const {
  s.box = std::all_of(s.regions.begin(), s.regions.end(), [](const Region &r) { return r.box; });
  if (!s.box) {
    if (isNhwcParam(s))
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
  s.once = s.param >= 0 && staged_[static_cast<size_t>(s.param)].role == Staged::Role::Const &&
           std::all_of(s.regions.begin(), s.regions.end(),
                       [&](const Region &r) { return r == s.regions[0]; });
  return "";
}

// A slot's staging copy of chunk c (inputs and constants in, outputs out), at home address
// `home` (bytes; the constant's fp32 copy for constants) and chip address `chip`.
int64_t Tiler::stageCopy(const Slot &s, size_t c, int64_t home, int64_t chip, const Builder &b,
                         const DramCtx &d, std::vector<Stmt> &out) const {
  const Hw &hw = hw_;
  const Staged &st = staged_[static_cast<size_t>(s.param)];
  const graph::Value &v = g_.value(st.value);
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
}

// L1 bytes of a plan: staged parameters (nb copies when per chunk), intermediates and working
// copies (one each), and `extra` (what compilation allocates beyond those).
int64_t Tiler::need(const Plan &p, int nb, const std::map<std::string, int64_t> &extra) const {
  auto al = [&](int64_t bytes) { return alignUp(bytes, hw_.alignment(hw_.l1)); };
  int64_t n = 0;
  std::map<std::string, int64_t> one = extra;
  for (const Slot &s : p.slots) {
    if (s.param < 0) {
      one[s.ref->name] = std::max(one[s.ref->name], al(s.cap * 4));
      continue;
    }
    const Staged &st = staged_[static_cast<size_t>(s.param)];
    const bool isConstant = st.role == Staged::Role::Const;
    n += al(s.cap * (isConstant ? 4 : 2)) * (s.once || p.chunks == 1 ? 1 : nb);
    if (st.role == Staged::Role::Output && reads_.count(s.ref.get()))
      one[s.ref->name + "_f32"] = std::max(one[s.ref->name + "_f32"], al(s.cap * 4));
  }
  for (const auto &[name, bytes] : one)
    n += bytes;
  return n;
}

// The most staging DMAs of a chunk on one side (a dry run without addresses).
int64_t Tiler::dmasPerSide(const Plan &p, const DramCtx &d) const {
  const Builder b(hw_); // statements only: nothing is reserved
  size_t most = 0;
  std::vector<Stmt> once;
  for (size_t c = 0; c < static_cast<size_t>(p.chunks); ++c) {
    std::vector<Stmt> in, out;
    for (const Slot &s : p.slots)
      if (s.param >= 0) {
        const bool o = staged_[static_cast<size_t>(s.param)].role == Staged::Role::Output;
        if (!s.once)
          stageCopy(s, c, 0, 0, b, d, o ? out : in);
        else if (c == 0)
          stageCopy(s, c, 0, 0, b, d, once);
      }
    most = std::max({most, in.size(), out.size(), once.size()});
  }
  return static_cast<int64_t>(most);
}

std::string Tiler::check(const Chunking &c, int64_t free, const DramCtx &d, Plan *out,
                         bool *weak) const {
  Plan local;
  Plan &p = out ? *out : local;
  if (weak)
    *weak = false;
  if (c.depth < 1 || c.depth > depths.size())
    return "cannot tile: " + (rowsWhy.empty() ? fmt::format("no chunked loop at depth {}", c.depth)
                                              : rowsWhy);
  const Rows &rows = depths[c.depth - 1];
  const int64_t R = rows.R, T = c.T;
  if (std::string why = analyse(rows, T, p); !why.empty()) {
    if (weak)
      *weak = true;
    return "cannot tile: " + why;
  }
  const int nb = p.chunks == 1 ? 1 : c.buffers;
  const int64_t bytes = need(p, nb, {});
  const int64_t dmas = dmasPerSide(p, d);
  const int64_t depth = hw_.t->tokenQueueDepth;
  if (bytes > free)
    return fmt::format("one chunk of {} of {} rows needs {} of {} ({} copies of the staged "
                       "buffers), has {} free",
                       T, R, bytesText(bytes), l1_, nb, bytesText(free));
  if (dmas * nb > depth)
    return fmt::format("one chunk of {} of {} rows stages {} DMAs on a side, more than the token "
                       "queue depth {} allows ({} copies)",
                       T, R, dmas, depth, nb);
  if (std::string why = overlap(p.slots); !why.empty())
    return "cannot tile: " + why;
  return "";
}

// Compiles each distinct chunk once; `st` receives the staged parameters' chunk buffers, `extra`
// the L1 bytes of what compilation allocates. Returns why the nest cannot run, else "".
std::string Tiler::compileVariants(Plan &p, std::vector<Staged> &st,
                                   std::map<std::string, Variant> &variants,
                                   std::vector<const Variant *> &ofChunk,
                                   std::map<std::string, int64_t> &extra) const {
  std::map<const BufferNode *, Slot *> bySlot;
  for (Slot &s : p.slots) {
    s.chunk = Buffer::make(s.ref->name, kF32, {s.cap});
    bySlot[s.ref.get()] = &s;
  }
  st = staged_;
  std::map<const BufferNode *, const Staged *> byParam;
  for (Slot &s : p.slots) {
    if (s.param < 0)
      continue;
    Staged &x = st[static_cast<size_t>(s.param)];
    x.onChip = Buffer::make(s.ref->name, x.role == Staged::Role::Const ? kF32 : kF16, {s.cap}, l1_);
    if (x.role == Staged::Role::Output && reads_.count(s.ref.get()))
      x.work = Buffer::make(s.ref->name + "_f32", kF32, {s.cap}, l1_);
    byParam[s.chunk.get()] = &x;
  }
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
      v.body = compileOnChip(body, st, byParam, hw_, v.allocs, why);
      if (!why.empty())
        return why;
      for (const Buffer &x : v.allocs)
        extra[x->name] = std::max(extra[x->name], alignUp(x->numElements() * x->dtype.bytes(),
                                                          hw_.alignment(hw_.l1)));
      it = variants.emplace(key, std::move(v)).first;
    }
    ofChunk.push_back(&it->second);
  }
  return "";
}

// Places the chunks' buffers (staged parameters with nb copies unless staged once, then the
// compiled allocations by name) and returns the kernel's body: constants placed once in DRAM
// (fp32) and staged once or per chunk, then per chunk its loads, its computation, its stores.
Stmt Tiler::assemble(const Plan &p, int nb, const std::vector<Staged> &st,
                     const std::vector<const Variant *> &ofChunk,
                     const std::map<std::string, int64_t> &extra, Builder &b, const DramCtx &d,
                     Kernel &k, int64_t &staging) const {
  const Hw &hw = hw_;
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
  std::map<int, int64_t> constAddr;
  std::vector<Stmt> body;
  // A chunk reads only the region of a tensor it needs (a Slice: its window; overlapping
  // windows: some elements twice), so each tensor's share of the traffic is what its copies move.
  k.tensorBytes.emplace();
  for (const Slot &s : p.slots) {
    if (s.param < 0 || st[static_cast<size_t>(s.param)].role != Staged::Role::Const)
      continue;
    const Staged &x = st[static_cast<size_t>(s.param)];
    const graph::Value &v = g_.value(x.value);
    constAddr[s.param] = d.addConst(fp32Const(v));
    if (s.once)
      k.dramBytes +=
          stageCopy(s, 0, constAddr[s.param], paramAt.at(x.onChip.get()).base, b, d, body);
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
      const int64_t moved =
          stageCopy(s, c, home, chip, b, d, x.role == Staged::Role::Output ? out : in);
      k.dramBytes += moved;
      if (x.role != Staged::Role::Const)
        (*k.tensorBytes)[x.value] += moved;
    }
    for (const Buffer &x : ofChunk[c]->allocs)
      at[x.get()] = {hw.l1, allocAt.at(x->name).base};
    staging += static_cast<int64_t>(in.size() + out.size());
    body.insert(body.end(), in.begin(), in.end());
    body.push_back(resolveOperands(*hw.t, ofChunk[c]->body, at));
    body.insert(body.end(), out.begin(), out.end());
  }
  return seq(body);
}

Tiler::Outcome Tiler::lower(const Chunking &c, Builder &b, const DramCtx &d,
                            const std::string &whole, Kernel &k, std::string &why,
                            bool &weak) const {
  const int64_t free = b.freeBytes(hw_.l1);
  Plan p;
  if (why = check(c, free, d, &p, &weak); !why.empty())
    return Outcome::Next;
  const int nb = p.chunks == 1 ? 1 : c.buffers;
  std::vector<Staged> st;
  std::map<std::string, Variant> variants;
  std::vector<const Variant *> ofChunk;
  std::map<std::string, int64_t> extra;
  if (std::string bad = compileVariants(p, st, variants, ofChunk, extra); !bad.empty()) {
    // What the nest cannot do in any chunk comes first.
    k.reject = kernelReject(RejectKind::Unsupported,
                            "loop-nest kernel: " + bad + " (in chunks, since " + whole + ")");
    return Outcome::Rejected;
  }
  const int64_t bytes = need(p, nb, extra);
  if (bytes > free) {
    why = fmt::format("one chunk of {} of {} rows needs {} of {}, has {} free", c.T,
                      depths[c.depth - 1].R, bytesText(bytes), l1_, bytesText(free));
    return Outcome::Next;
  }
  int64_t staging = 0;
  k.body = b.wrapAllocations(assemble(p, nb, st, ofChunk, extra, b, d, k, staging));
  why = finishKernel(*hw_.t, grp_, staging,
                     fmt::format("{} of on-chip buffers, tiled: {} chunk(s) of {} of {} rows ({} "
                                 "variant(s) compiled), {}",
                                 bytesText(bytes), p.chunks, c.T, depths[c.depth - 1].R,
                                 variants.size(), nb == 2 ? "double-buffered" : "single-buffered"),
                     k);
  if (!why.empty()) {
    k.reject =
        kernelReject(RejectKind::Encoding, "loop-nest kernel: " + whole + "; tiled: " + why);
    return Outcome::Rejected;
  }
  return Outcome::Lowered;
}

int64_t Tiler::work() const {
  // Stores times the trip counts of their loops: the nest's element operations.
  class Count : public IRVisitor {
  public:
    int64_t trips = 1, total = 0;
    void visitFor(const ForNode *op) override {
      const auto *e = op->extent.as<IntImmNode>();
      const int64_t n = e ? e->value : 1;
      trips *= n;
      IRVisitor::visitFor(op);
      trips /= std::max<int64_t>(n, 1);
    }
    void visitStore(const StoreNode *op) override {
      total += trips;
      IRVisitor::visitStore(op);
    }
  } c;
  c.visit(ref_.body);
  return c.total;
}

std::pair<int64_t, int64_t> Tiler::stagedBytes(const Plan &p) const {
  int64_t in = 0, out = 0;
  for (const Slot &s : p.slots) {
    if (s.param < 0)
      continue;
    const Staged::Role role = staged_[static_cast<size_t>(s.param)].role;
    const int64_t unit = role == Staged::Role::Const ? 4 : 2;
    for (size_t c = 0; c < s.regions.size(); ++c)
      if (!s.once || c == 0)
        (role == Staged::Role::Output ? out : in) += s.regions[c].volume() * unit;
  }
  return {in, out};
}

ChunkedPath::ChunkedPath(const graph::Graph &g, const graph::FusedGroup &grp, const Hw &hw,
                         const Prepared &prep)
    : t_(std::make_unique<Tiler>(g, grp, hw, prep.ref, prep.pv)) {}

ChunkedPath::~ChunkedPath() = default;

std::vector<Chunking> ChunkedPath::candidates(bool doubleBuffer) const {
  std::vector<Chunking> v;
  for (const Chunking &c : t_->candidates(doubleBuffer))
    if (t_->chunksOf(c) <= kMaxChunks)
      v.push_back(c);
  return v;
}

std::vector<int64_t> ChunkedPath::rowsAt(size_t depth) const {
  std::vector<int64_t> v;
  for (const Chunking &c : candidates(true))
    if (c.depth == depth && c.buffers == 2)
      v.push_back(c.T);
  if (depth >= 1 && depth <= t_->depths.size() && (v.empty() || v.back() != 1))
    v.push_back(1); // one row: the single-buffered last resort
  return v;
}

size_t ChunkedPath::depths() const {
  return t_->depths.size();
}

std::string ChunkedPath::check(const Chunking &c, int64_t free, const DramCtx &d) const {
  if (c.depth >= 1 && c.depth <= t_->depths.size() && t_->chunksOf(c) > kMaxChunks)
    return fmt::format("{} chunks, more than the {} a kernel unrolls", t_->chunksOf(c),
                       kMaxChunks);
  return t_->check(c, free, d, nullptr);
}

double ChunkedPath::cost(const Chunking &c, int64_t free, const DramCtx &d) const {
  Plan p;
  if (!t_->check(c, free, d, &p).empty())
    return -1;
  const auto [in, out] = t_->stagedBytes(p);
  const int nb = p.chunks == 1 ? 1 : c.buffers;
  return streamCost(*t_->hw(), nb, p.chunks, double(in), double(out), double(t_->work()));
}

int64_t ChunkedPath::work() const {
  return t_->work();
}

Kernel lowerTiled(const graph::Graph &g, const graph::FusedGroup &grp, Builder &b, const DramCtx &d,
                  bool doubleBuffer, const Prepared &prep, const std::string &whole,
                  const std::optional<Chunking> &forced, Chunking *chosen) {
  Kernel k;
  // No chunk fits (capacity), or the accesses cannot be cut into chunks at all (unsupported).
  auto reject = [&](const std::string &why) {
    k.reject = kernelReject(why.rfind("cannot tile", 0) == 0 ? RejectKind::Unsupported
                                                             : RejectKind::Capacity,
                            "loop-nest kernel: " + whole + "; " + why);
    return k;
  };
  const Tiler tiler(g, grp, b.hw(), prep.ref, prep.pv);
  std::string last = tiler.rowsWhy.empty() ? "" : "cannot tile: " + tiler.rowsWhy;
  if (forced) {
    std::string why;
    bool weak = false;
    if (forced->depth >= 1 && forced->depth <= tiler.depths.size() &&
        tiler.chunksOf(*forced) > kMaxChunks)
      return reject(fmt::format("{} chunks, more than the {} a kernel unrolls",
                                tiler.chunksOf(*forced), kMaxChunks));
    Tiler::Outcome o = tiler.lower(*forced, b, d, whole, k, why, weak);
    if (chosen)
      *chosen = *forced;
    return o == Tiler::Outcome::Next ? reject(why) : k;
  }
  // A region can be a box for small chunks only (an NHWC tensor read by a flat copy: one
  // channel plane at most), so a failed analysis goes on to smaller chunks, within a budget of
  // analysed chunks that bounds the compile time a group that cannot tile costs.
  int64_t budget = 4 * kMaxChunks;
  for (const Chunking &c : tiler.candidates(doubleBuffer)) {
    const int64_t chunks = tiler.chunksOf(c);
    if (chunks > kMaxChunks || chunks > budget)
      continue;
    budget -= chunks;
    std::string why;
    bool weak = false;
    switch (tiler.lower(c, b, d, whole, k, why, weak)) {
    case Tiler::Outcome::Lowered:
    case Tiler::Outcome::Rejected:
      if (chosen)
        *chosen = c;
      return k;
    case Tiler::Outcome::Next:
      // An analysis that fails does not hide a capacity reason found before it.
      if (!weak || last.empty() || last.rfind("cannot tile: ", 0) == 0)
        last = why;
      break;
    }
  }
  return reject(last.empty() ? "cannot tile" : last);
}

} // namespace npuc::npu::loopnest
