// Decode.cpp - turns isa::Instr fields into validated Decoded structs (see Decode.h).
//
// Field values are read from each instruction's flat slots (isa::Instr), whose indices are
// resolved once per description, instead of by name: decoding is part of every simulator run
// and string-keyed field maps were its largest per-instruction cost.
// Everything the functional and timing models later assume is checked here once: memory spaces,
// dtypes, vector ops, engines, token bits, non-negative sizes and that the bounding box of every
// operand lies inside its level. The models then run without per-element checks.
#include "simulator/Decode.h"

#include "simulator/Hazards.h"
#include "simulator/Simulator.h"
#include "support/Error.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string_view>

namespace npuc::sim {

namespace {

int dtypeBytes(isa::ElemType t) {
  return isa::elemBytes(t);
}

/// The fields the decoder reads (every primitive's, isa::primitiveFields), by id.
// clang-format off
enum Fid : int {
  Pop, Push, ElemBytes, SrcSpace, DstSpace, SrcAddr, DstAddr, N0, N1, N2, SrcS0, SrcS1, SrcS2,
  DstS0, DstS1, DstS2, Pad0Lo, Pad1Lo, Pad2Lo, Pad0Hi, Pad1Hi, Pad2Hi, PadValue, AAddr, BAddr,
  CAddr, M, K, N, Accumulate, Op, Src1Space, Src1Addr, Src1Dtype, Src1S0, Src1S1, Src1S2,
  Src2Space, Src2Addr, Src2Dtype, Src2S0, Src2S1, Src2S2, DstDtype, Imm0, Imm1, kNumFids
};
// clang-format on
constexpr const char *kFidNames[kNumFids] = {
    "pop",     "push",       "elem_bytes", "src_space",  "dst_space",  "src_addr",   "dst_addr",
    "n0",      "n1",         "n2",         "src_s0",     "src_s1",     "src_s2",     "dst_s0",
    "dst_s1",  "dst_s2",     "pad0_lo",    "pad1_lo",    "pad2_lo",    "pad0_hi",    "pad1_hi",
    "pad2_hi", "pad_value",  "a_addr",     "b_addr",     "c_addr",     "m",          "k",
    "n",       "accumulate", "op",         "src1_space", "src1_addr",  "src1_dtype", "src1_s0",
    "src1_s1", "src1_s2",    "src2_space", "src2_addr",  "src2_dtype", "src2_s0",    "src2_s1",
    "src2_s2", "dst_dtype",  "imm0",       "imm1"};
// Operand field ids by prefix: {space, addr, dtype, s0}; the strides follow s0.
struct OperandFids {
  Fid space, addr, dtype, s0;
};
constexpr OperandFids kSrc1{Src1Space, Src1Addr, Src1Dtype, Src1S0};
constexpr OperandFids kSrc2{Src2Space, Src2Addr, Src2Dtype, Src2S0};
constexpr OperandFids kDst{DstSpace, DstAddr, DstDtype, DstS0};

/// What one instruction description contributes to every field: the field's slot in the
/// description (isa::Instr::slotOf, resolved once per description) and its value when an
/// instruction leaves it out: the fixed value, else 0 when the description encodes the field, else
/// "absent" (the field does not exist for this instruction).
struct DescPlan {
  int8_t slot[kNumFids]; // -1: no flat slot (the description lacks the field, or slot too high)
  int64_t value[kNumFids] = {};
  bool known[kNumFids] = {};
};

using SortedFields = std::vector<std::pair<std::string_view, Fid>>;

/// Each primitive's field names (isa::primitiveFields) with their ids, sorted as std::map orders
/// its keys; built once per process.
const SortedFields &sortedFields(isa::Semantics s) {
  static const std::array<SortedFields, 4> table = [] {
    std::array<SortedFields, 4> t;
    for (isa::Semantics sem : {isa::Semantics::Dma, isa::Semantics::Matmul, isa::Semantics::Vector,
                               isa::Semantics::Finish}) {
      SortedFields &f = t[static_cast<size_t>(sem)];
      for (const std::string &name : isa::primitiveFields(sem)) {
        auto it = std::find_if(std::begin(kFidNames), std::end(kFidNames),
                               [&](const char *n) { return name == n; });
        NPUC_ASSERT(it != std::end(kFidNames), "kFidNames lists every primitive field");
        f.emplace_back(*it, static_cast<Fid>(it - std::begin(kFidNames)));
      }
      std::sort(f.begin(), f.end());
    }
    return t;
  }();
  return table[static_cast<size_t>(s)];
}

/// The id of a primitive field name, or -1 when it is none (a name only tools or tests set).
int fidOf(isa::Semantics sem, std::string_view name) {
  const SortedFields &sorted = sortedFields(sem);
  auto it = std::lower_bound(sorted.begin(), sorted.end(), name,
                             [](const auto &x, std::string_view v) { return x.first < v; });
  return it != sorted.end() && it->first == name ? int(it->second) : -1;
}

DescPlan makePlan(const isa::InstrDesc &desc) {
  DescPlan plan;
  std::fill(std::begin(plan.slot), std::end(plan.slot), int8_t(-1));
  for (const isa::Field &f : desc.fields) // encoded: 0 unless fixed too
    if (int id = fidOf(desc.semantics, f.name); id >= 0)
      plan.known[id] = true;
  for (const auto &[name, value] : desc.fixed)
    if (int id = fidOf(desc.semantics, name); id >= 0) {
      plan.value[id] = value;
      plan.known[id] = true;
    }
  for (const auto &[name, id] : sortedFields(desc.semantics)) // only the primitive's fields
    if (int s = isa::Instr::slotOf(desc, name); s >= 0 && s < isa::Instr::kFlatSlots)
      plan.slot[id] = int8_t(s);
  return plan;
}

/// Reads one instruction's fields: the instruction's own value, else the description's (see
/// DescPlan), else `absent` (e.g. n2 of a 2-D DMA: such dimensions default to extent 1, offsets
/// to 0). Values come from the instruction's flat slots; the names it holds outside them (only
/// programs built by hand have any) are looked up once here.
class FieldReader {
public:
  FieldReader(const isa::Instr &in, const DescPlan &plan) : in_(in), plan_(plan) {
    for (const auto &[name, v] : in.others())
      if (int id = fidOf(in.desc->semantics, name); id >= 0) {
        other_[id] = v;
        set_ |= uint64_t(1) << id;
      }
  }
  int64_t get(Fid id, int64_t absent = 0) const {
    if (int s = plan_.slot[id]; s >= 0 && in_.given(s))
      return in_.at(s);
    if (set_ >> id & 1)
      return other_[id];
    return plan_.known[id] ? plan_.value[id] : absent;
  }

private:
  static_assert(kNumFids <= 64, "set_ has one bit per field");
  const isa::Instr &in_;
  const DescPlan &plan_;
  uint64_t set_ = 0;        // bit id: others() gives field id (in other_[id])
  int64_t other_[kNumFids]; // only the entries in set_ are written
};

class Decoder {
public:
  Decoder(const isa::Target &t, const isa::Program &p, const Memory &mem)
      : t_(t), p_(p), mem_(mem) {}

  /// Decodes instruction `index` into `d` (a fresh Decoded).
  void decode(int64_t index, Decoded &d) {
    const isa::Instr &in = p_.instrs[static_cast<size_t>(index)];
    index_ = index;
    if (!in.desc)
      fail("{}: instruction has no description (not decoded against a target)", where());
    NPUC_ASSERT(!in.layout() || in.layout() == in.desc,
                "an instruction's slots are laid out for its description (isa::Instr)");
    FieldReader f(in, plan(*in.desc));
    d.index = index;
    d.desc = in.desc;
    d.sem = in.desc->semantics;
    d.engine = in.desc->engine;
    int engines = static_cast<int>(t_.engines.size());
    if (d.engine < -1 || d.engine >= engines || (d.engine == -1 && d.sem != isa::Semantics::Finish))
      fail("{}: engine index {} is not one of the target's {} engines", where(), d.engine, engines);
    d.pop = tokenBits(f.get(Pop), "pop");
    d.push = tokenBits(f.get(Push), "push");
    if (d.engine == -1 && (d.pop || d.push))
      fail("{}: a finish not bound to an engine cannot pop or push tokens", where());
    switch (d.sem) {
    case isa::Semantics::Dma:
      decodeDma(f, d);
      break;
    case isa::Semantics::Matmul:
      decodeMatmul(f, d);
      break;
    case isa::Semantics::Vector:
      decodeVector(f, d);
      break;
    case isa::Semantics::Finish:
      break;
    }
  }

private:
  /// "instruction #I (mnemonic)" of the instruction being decoded; formatted only for errors.
  std::string where() const { return instrName(p_, index_); }

  /// The plan of `desc`, made once per description of the target (any other description, e.g.
  /// of a program decoded against a copy of the target, gets a plan of its own each time).
  const DescPlan &plan(const isa::InstrDesc &desc) {
    const isa::InstrDesc *first = t_.instrs.data();
    if (&desc >= first && &desc < first + t_.instrs.size()) {
      size_t i = static_cast<size_t>(&desc - first);
      if (!plans_[i])
        plans_[i] = std::make_unique<DescPlan>(makePlan(desc));
      return *plans_[i];
    }
    foreign_ = std::make_unique<DescPlan>(makePlan(desc));
    return *foreign_;
  }

  uint32_t tokenBits(int64_t v, const char *field) {
    int engines = static_cast<int>(t_.engines.size());
    if (v < 0 || (engines < 63 && v >= (int64_t(1) << engines)))
      fail("{}: {}={:#x} names an engine beyond the target's {} engines", where(), field, v,
           engines);
    return static_cast<uint32_t>(v);
  }

  int level(int64_t v, const char *field) {
    for (const isa::MemoryLevel &l : t_.levels)
      if (l.index == v)
        return l.index;
    fail("{}: {}={} is not a memory level of target '{}'", where(), field, v, t_.name);
  }

  const isa::MemoryLevel &levelDesc(int index) {
    for (const isa::MemoryLevel &l : t_.levels)
      if (l.index == index)
        return l;
    NPUC_ASSERT(false, "level() validated the index");
  }

  isa::ElemType dtype(int64_t v, const char *field) {
    if (v < 0 || v >= isa::kNumDtypes)
      fail("{}: {}={} is not a known dtype code (0 = fp16, 1 = fp32, 2 = int8, 3 = int32)", where(),
           field, v);
    return static_cast<isa::ElemType>(v);
  }

  int64_t nonNegative(int64_t v, const char *field) {
    if (v < 0)
      fail("{}: {}={} must not be negative", where(), field, v);
    return v;
  }

  /// Bounding box of an operand over an n[0..2] box; checks it against the level's storage.
  void addRange(Decoded &d, const Operand &o, const int64_t *n, const char *what) {
    int64_t count = n[0] * n[1] * n[2];
    if (count == 0)
      return;
    int64_t lo = 0, hi = 0;
    for (int dim = 0; dim < 3; ++dim) {
      int64_t span = (n[dim] - 1) * o.stride[dim];
      lo += std::min<int64_t>(0, span);
      hi += std::max<int64_t>(0, span);
    }
    AccessRange r{o.level, o.addr + lo * o.elemBytes, o.addr + (hi + 1) * o.elemBytes};
    checkRange(r, what);
    d.ranges.push_back(r);
  }

  void checkRange(const AccessRange &r, const char *what) {
    int64_t size = mem_.size(r.level);
    if (r.lo < 0 || r.hi > size)
      fail("{}: {} accesses bytes [{:#x}, {:#x}) of level '{}' outside its {} bytes", where(), what,
           r.lo, r.hi, levelDesc(r.level).name, size);
  }

  /// Field `id`, validated non-negative; errors name the field.
  int64_t nonNegative(const FieldReader &f, Fid id, int64_t absent = 0) {
    return nonNegative(f.get(id, absent), kFidNames[id]);
  }

  void decodeDma(const FieldReader &f, Decoded &d) {
    d.dma = DmaOp{}; // the union member this instruction uses
    DmaOp &o = d.dma;
    int eb = static_cast<int>(f.get(ElemBytes));
    if (eb < 1 || eb > 8)
      fail("{}: elem_bytes={} must be between 1 and 8", where(), eb);
    o.src.level = level(f.get(SrcSpace), "src_space");
    o.dst.level = level(f.get(DstSpace), "dst_space");
    o.src.addr = f.get(SrcAddr);
    o.dst.addr = f.get(DstAddr);
    o.src.elemBytes = o.dst.elemBytes = eb;
    int64_t inner[3];
    for (int i = 0; i < 3; ++i) {
      const Fid n = Fid(N0 + i), lo = Fid(Pad0Lo + i), hi = Fid(Pad0Hi + i);
      o.n[i] = nonNegative(f, n, 1);
      o.src.stride[i] = f.get(Fid(SrcS0 + i));
      o.dst.stride[i] = f.get(Fid(DstS0 + i));
      o.padLo[i] = nonNegative(f, lo);
      o.padHi[i] = nonNegative(f, hi);
      if (o.n[i] > 0 && o.padLo[i] + o.padHi[i] > o.n[i])
        fail("{}: {}+{} = {} exceeds {}={}", where(), kFidNames[lo], kFidNames[hi],
             o.padLo[i] + o.padHi[i], kFidNames[n], o.n[i]);
      inner[i] = std::max<int64_t>(0, o.n[i] - o.padLo[i] - o.padHi[i]);
    }
    o.padValue = static_cast<uint64_t>(f.get(PadValue));
    d.elements = o.n[0] * o.n[1] * o.n[2];
    o.readElems = inner[0] * inner[1] * inner[2];
    d.bytes = d.elements * eb;
    addRange(d, o.src, inner, "source");
    addRange(d, o.dst, o.n, "destination");
    int dram = mem_.dramIndex();
    if (o.src.level == dram)
      d.dramRead = o.readElems * eb;
    if (o.dst.level == dram)
      d.dramWritten = d.bytes;
  }

  void decodeMatmul(const FieldReader &f, Decoded &d) {
    d.mm = MatmulOp{}; // the union member this instruction uses
    MatmulOp &o = d.mm;
    const isa::TensorUnit &tu = t_.tensor;
    o.aAddr = f.get(AAddr);
    o.bAddr = f.get(BAddr);
    o.cAddr = f.get(CAddr);
    o.m = nonNegative(f, M);
    o.k = nonNegative(f, K);
    o.n = nonNegative(f, N);
    o.accumulate = f.get(Accumulate) != 0;
    int a = level(tu.aLevel, "tensor unit a level");
    int b = level(tu.bLevel, "tensor unit b level");
    int c = level(tu.accLevel, "tensor unit acc level");
    int ob = dtypeBytes(tu.operandType), cb = dtypeBytes(tu.accType);
    auto range = [&](int lvl, int64_t addr, int64_t elems, int eb, const char *what) {
      if (elems == 0)
        return;
      AccessRange r{lvl, addr, addr + elems * eb};
      checkRange(r, what);
      d.ranges.push_back(r);
    };
    range(a, o.aAddr, o.m * o.k, ob, "operand A");
    range(b, o.bAddr, o.k * o.n, ob, "operand B");
    range(c, o.cAddr, o.m * o.n, cb, "accumulator C");
    d.elements = o.m * o.n;
  }

  void decodeVector(const FieldReader &f, Decoded &d) {
    d.vec = VectorOp{}; // the union member this instruction uses
    VectorOp &o = d.vec;
    int64_t code = f.get(Op);
    std::optional<isa::VecOp> op = t_.vector.opOf(code);
    if (!op)
      fail("{}: op={} is not one of the vector unit's {} ops", where(), code, t_.vector.ops.size());
    o.op = *op; // the loader admits only ops of isa/VectorOps.def, all of which run here
    for (int i = 0; i < 3; ++i) {
      o.n[i] = nonNegative(f, Fid(N0 + i), 1);
      if (i >= t_.vector.maxDims && o.n[i] > 1)
        fail("{}: {}={} uses dimension {} but the vector unit has max_dims {}", where(),
             kFidNames[N0 + i], o.n[i], i + 1, t_.vector.maxDims);
    }
    auto operand = [&](Operand &x, const OperandFids &id, const char *prefix) {
      x.level = level(f.get(id.space), kFidNames[id.space]);
      if (!t_.vector.levels.empty() && std::find(t_.vector.levels.begin(), t_.vector.levels.end(),
                                                 x.level) == t_.vector.levels.end())
        fail("{}: {}_space names level '{}', which the vector unit cannot access", where(), prefix,
             levelDesc(x.level).name);
      x.addr = f.get(id.addr);
      x.type = dtype(f.get(id.dtype), kFidNames[id.dtype]);
      x.elemBytes = dtypeBytes(x.type);
      for (int i = 0; i < 3; ++i)
        x.stride[i] = f.get(Fid(id.s0 + i));
      addRange(d, x, o.n, prefix);
    };
    operand(o.src1, kSrc1, "src1");
    if (isa::vecOpReadsSrc2(o.op))
      operand(o.src2, kSrc2, "src2");
    operand(o.dst, kDst, "dst");
    auto imm = [&](Fid id) {
      uint32_t bits = static_cast<uint32_t>(f.get(id));
      float v;
      std::memcpy(&v, &bits, sizeof v);
      return v;
    };
    o.imm0 = imm(Imm0);
    o.imm1 = imm(Imm1);
    d.elements = o.n[0] * o.n[1] * o.n[2];
  }

  const isa::Target &t_;
  const isa::Program &p_;
  const Memory &mem_;
  int64_t index_ = 0; // the instruction being decoded
  std::vector<std::unique_ptr<DescPlan>> plans_ =
      std::vector<std::unique_ptr<DescPlan>>(t_.instrs.size()); // by description index in t_.instrs
  std::unique_ptr<DescPlan> foreign_;
};

} // namespace

std::string instrName(const isa::Program &p, int64_t index) {
  const isa::Instr &in = p.instrs.at(static_cast<size_t>(index));
  return fmt::format("instruction #{} ({})", index, in.desc ? in.desc->mnemonic : "?");
}

std::vector<Decoded> decodeProgram(const isa::Target &t, const isa::Program &p, const Memory &mem) {
  std::vector<Decoded> out;
  out.reserve(p.instrs.size());
  Decoder dec(t, p, mem);
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    try {
      dec.decode(static_cast<int64_t>(i), out.emplace_back());
    } catch (const Error &e) {
      // Illegal field values: name the program counter and the instruction's text too.
      fail("{}\n  {}\n  engines: none started (the program is checked before it runs)", e.what(),
           instrText(t, p, static_cast<int64_t>(i)));
    }
    if (out.back().sem == isa::Semantics::Finish && i + 1 < p.instrs.size())
      fail("{}: follows the program's finish ({}); nothing may come after it",
           instrName(p, static_cast<int64_t>(i + 1)), instrName(p, static_cast<int64_t>(i)));
  }
  return out;
}

} // namespace npuc::sim
