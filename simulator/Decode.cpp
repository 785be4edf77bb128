// Decode.cpp - turns isa::Instr field maps into validated Decoded structs (see Decode.h).
//
// Everything the functional and timing models later assume is checked here once: memory spaces,
// dtypes, vector ops, engines, token bits, non-negative sizes and that the bounding box of every
// operand lies inside its level. The models then run without per-element checks.
#include "simulator/Decode.h"

#include "simulator/Hazards.h"
#include "simulator/Simulator.h"
#include "support/Error.h"

#include <algorithm>
#include <cstring>

namespace npuc::sim {

namespace {

struct OpName {
  const char *name;
  VecOp op;
};
constexpr OpName kVecOps[] = {
    {"copy", VecOp::Copy}, {"add", VecOp::Add},   {"sub", VecOp::Sub},
    {"mul", VecOp::Mul},   {"max", VecOp::Max},   {"min", VecOp::Min},
    {"relu", VecOp::Relu}, {"clip", VecOp::Clip}, {"muladd", VecOp::MulAdd},
    {"exp", VecOp::Exp},   {"tanh", VecOp::Tanh}, {"sigmoid", VecOp::Sigmoid},
    {"div", VecOp::Div},   {"sqrt", VecOp::Sqrt}, {"mac", VecOp::Mac},
};

int dtypeBytes(isa::ElemType t) {
  return isa::elemBytes(t);
}

/// Reads one field: the instruction's own value, else the description's fixed value, else 0 when
/// the description encodes the field, else `absent` (the field does not exist for this
/// instruction, e.g. n2 of a 2-D DMA: such dimensions default to extent 1, offsets to 0).
class FieldReader {
public:
  FieldReader(const isa::Instr &in) : in_(in) {}
  int64_t get(const char *name, int64_t absent = 0) const {
    if (auto it = in_.fields.find(name); it != in_.fields.end())
      return it->second;
    if (auto it = in_.desc->fixed.find(name); it != in_.desc->fixed.end())
      return it->second;
    for (const isa::Field &f : in_.desc->fields)
      if (f.name == name)
        return 0;
    return absent;
  }

private:
  const isa::Instr &in_;
};

class Decoder {
public:
  Decoder(const isa::Target &t, const isa::Program &p, const Memory &mem)
      : t_(t), p_(p), mem_(mem) {}

  Decoded decode(int64_t index) {
    const isa::Instr &in = p_.instrs[static_cast<size_t>(index)];
    where_ = instrName(p_, index);
    if (!in.desc)
      fail("{}: instruction has no description (not decoded against a target)", where_);
    FieldReader f(in);
    Decoded d;
    d.index = index;
    d.desc = in.desc;
    d.sem = in.desc->semantics;
    d.engine = in.desc->engine;
    int engines = static_cast<int>(t_.engines.size());
    if (d.engine < -1 || d.engine >= engines || (d.engine == -1 && d.sem != isa::Semantics::Finish))
      fail("{}: engine index {} is not one of the target's {} engines", where_, d.engine, engines);
    d.pop = tokenBits(f.get("pop"), "pop");
    d.push = tokenBits(f.get("push"), "push");
    if (d.engine == -1 && (d.pop || d.push))
      fail("{}: a finish not bound to an engine cannot pop or push tokens", where_);
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
    return d;
  }

private:
  uint32_t tokenBits(int64_t v, const char *field) {
    int engines = static_cast<int>(t_.engines.size());
    if (v < 0 || (engines < 63 && v >= (int64_t(1) << engines)))
      fail("{}: {}={:#x} names an engine beyond the target's {} engines", where_, field, v,
           engines);
    return static_cast<uint32_t>(v);
  }

  int level(int64_t v, const char *field) {
    for (const isa::MemoryLevel &l : t_.levels)
      if (l.index == v)
        return l.index;
    fail("{}: {}={} is not a memory level of target '{}'", where_, field, v, t_.name);
  }

  const isa::MemoryLevel &levelDesc(int index) {
    for (const isa::MemoryLevel &l : t_.levels)
      if (l.index == index)
        return l;
    NPUC_ASSERT(false, "level() validated the index");
  }

  isa::ElemType dtype(int64_t v, const char *field) {
    if (v < 0 || v >= isa::kNumDtypes)
      fail("{}: {}={} is not a known dtype code (0 = fp16, 1 = fp32, 2 = int8, 3 = int32)",
           where_, field, v);
    return static_cast<isa::ElemType>(v);
  }

  int64_t nonNegative(int64_t v, const char *field) {
    if (v < 0)
      fail("{}: {}={} must not be negative", where_, field, v);
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
    int64_t size = static_cast<int64_t>(mem_.level(r.level).size());
    if (r.lo < 0 || r.hi > size)
      fail("{}: {} accesses bytes [{:#x}, {:#x}) of level '{}' outside its {} bytes", where_, what,
           r.lo, r.hi, levelDesc(r.level).name, size);
  }

  void decodeDma(const FieldReader &f, Decoded &d) {
    DmaOp &o = d.dma;
    int eb = static_cast<int>(f.get("elem_bytes"));
    if (eb < 1 || eb > 8)
      fail("{}: elem_bytes={} must be between 1 and 8", where_, eb);
    o.src.level = level(f.get("src_space"), "src_space");
    o.dst.level = level(f.get("dst_space"), "dst_space");
    o.src.addr = f.get("src_addr");
    o.dst.addr = f.get("dst_addr");
    o.src.elemBytes = o.dst.elemBytes = eb;
    static const char *nNames[3] = {"n0", "n1", "n2"};
    static const char *sS[3] = {"src_s0", "src_s1", "src_s2"};
    static const char *dS[3] = {"dst_s0", "dst_s1", "dst_s2"};
    static const char *pl[3] = {"pad0_lo", "pad1_lo", "pad2_lo"};
    static const char *ph[3] = {"pad0_hi", "pad1_hi", "pad2_hi"};
    int64_t inner[3];
    for (int i = 0; i < 3; ++i) {
      o.n[i] = nonNegative(f.get(nNames[i], 1), nNames[i]);
      o.src.stride[i] = f.get(sS[i]);
      o.dst.stride[i] = f.get(dS[i]);
      o.padLo[i] = nonNegative(f.get(pl[i]), pl[i]);
      o.padHi[i] = nonNegative(f.get(ph[i]), ph[i]);
      if (o.n[i] > 0 && o.padLo[i] + o.padHi[i] > o.n[i])
        fail("{}: {}+{} = {} exceeds {}={}", where_, pl[i], ph[i], o.padLo[i] + o.padHi[i],
             nNames[i], o.n[i]);
      inner[i] = std::max<int64_t>(0, o.n[i] - o.padLo[i] - o.padHi[i]);
    }
    o.padValue = static_cast<uint64_t>(f.get("pad_value"));
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
    MatmulOp &o = d.mm;
    const isa::TensorUnit &tu = t_.tensor;
    o.aAddr = f.get("a_addr");
    o.bAddr = f.get("b_addr");
    o.cAddr = f.get("c_addr");
    o.m = nonNegative(f.get("m"), "m");
    o.k = nonNegative(f.get("k"), "k");
    o.n = nonNegative(f.get("n"), "n");
    o.accumulate = f.get("accumulate") != 0;
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
    VectorOp &o = d.vec;
    int64_t code = f.get("op");
    const auto &ops = t_.vector.ops;
    if (code < 0 || code >= static_cast<int64_t>(ops.size()))
      fail("{}: op={} is not one of the vector unit's {} ops", where_, code, ops.size());
    if (!vecOpFromName(ops[static_cast<size_t>(code)], o.op))
      fail("{}: vector op '{}' (op={}) is not implemented by the simulator", where_,
           ops[static_cast<size_t>(code)], code);
    static const char *nNames[3] = {"n0", "n1", "n2"};
    for (int i = 0; i < 3; ++i) {
      o.n[i] = nonNegative(f.get(nNames[i], 1), nNames[i]);
      if (i >= t_.vector.maxDims && o.n[i] > 1)
        fail("{}: {}={} uses dimension {} but the vector unit has max_dims {}", where_, nNames[i],
             o.n[i], i + 1, t_.vector.maxDims);
    }
    auto operand = [&](Operand &x, const char *prefix) {
      std::string p = prefix;
      x.level = level(f.get((p + "_space").c_str()), (p + "_space").c_str());
      if (!t_.vector.levels.empty() && std::find(t_.vector.levels.begin(), t_.vector.levels.end(),
                                                 x.level) == t_.vector.levels.end())
        fail("{}: {}_space names level '{}', which the vector unit cannot access", where_, p,
             levelDesc(x.level).name);
      x.addr = f.get((p + "_addr").c_str());
      x.type = dtype(f.get((p + "_dtype").c_str()), (p + "_dtype").c_str());
      x.elemBytes = dtypeBytes(x.type);
      for (int i = 0; i < 3; ++i)
        x.stride[i] = f.get((p + "_s" + std::to_string(i)).c_str());
      addRange(d, x, o.n, prefix);
    };
    operand(o.src1, "src1");
    if (vecOpReadsSrc2(o.op))
      operand(o.src2, "src2");
    operand(o.dst, "dst");
    auto imm = [&](const char *name) {
      uint32_t bits = static_cast<uint32_t>(f.get(name));
      float v;
      std::memcpy(&v, &bits, sizeof v);
      return v;
    };
    o.imm0 = imm("imm0");
    o.imm1 = imm("imm1");
    d.elements = o.n[0] * o.n[1] * o.n[2];
  }

  const isa::Target &t_;
  const isa::Program &p_;
  const Memory &mem_;
  std::string where_;
};

} // namespace

bool vecOpFromName(const std::string &name, VecOp &out) {
  for (const OpName &o : kVecOps)
    if (name == o.name) {
      out = o.op;
      return true;
    }
  return false;
}

bool vecOpReadsSrc2(VecOp op) {
  switch (op) {
  case VecOp::Add:
  case VecOp::Sub:
  case VecOp::Mul:
  case VecOp::Max:
  case VecOp::Min:
  case VecOp::Div:
  case VecOp::Mac:
    return true;
  default:
    return false;
  }
}

bool vecOpReadsDst(VecOp op) {
  return op == VecOp::Mac;
}

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
      out.push_back(dec.decode(static_cast<int64_t>(i)));
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
