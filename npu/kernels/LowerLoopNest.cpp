// LowerLoopNest.cpp - the loop-nest kernel: a fused group no hand-written kernel handles, compiled
// through instruction emission from loop analysis (npu/isel/EmitNpu.h).
//
// The group's compute definition is its reference loop nest (tir::lowerGroup: fp32 over logical
// row-major/NCHW buffers). Every input is loaded whole from DRAM into L1 in its logical layout, as
// fp16 (the DRAM format; a 4-D NHWC tensor by one strided 3-D DMA per image), and the vector unit
// converts it on load; constants are staged as fp32 so that they keep the CPU's precision. The
// nest, with its buffers moved to L1 (intermediates and temporaries fp32), goes through the
// normalisation pipeline, pre-process and emit-npu for the target. emit-npu names each operand
// symbolically (buffer + first element); here every buffer gets an address from the Builder and
// the operands become *_space/*_addr/*_dtype fields. The outputs are stored back to DRAM in the
// NPU layout, and the token pass orders the engines as for every kernel.
//
// This file is the whole-tensor path: taken when nothing stays scalar and all buffers fit their
// levels at once (and the staging DMAs fit the token queue). When they do not, the tiled path
// (LoopNestTile.cpp) runs the group's outer loop in chunks; when no chunk fits either, the reject
// reason says which, and placement keeps the group on the CPU.
#include "npu/isel/Emit.h"
#include "npu/kernels/Kernels.h"
#include "npu/kernels/LoopNest.h"

#include "lowering/LowerOps.h"
#include "npu/isel/EmitNpu.h"
#include "npu/isel/PreProcess.h"
#include "support/Error.h"
#include "tir/IRMutator.h"
#include "tir/IRVisitor.h"
#include "tir/PassManager.h"
#include "tir/Printer.h"
#include "tir/Schedule.h"

#include <cstring>
#include <fmt/format.h>
#include <map>
#include <set>

namespace npuc::npu {

using namespace tir;
using loopnest::Staged;

namespace {

const DataType kF16 = DataType::Float(16), kF32 = DataType::Float(32);

// Loads whether the body reads each buffer (an output read back needs an fp32 working copy:
// accumulating in fp16 would round every partial sum).
class ReadBuffers : public IRVisitor {
public:
  std::set<const BufferNode *> read;
  void visitLoad(const LoadNode *op) override {
    read.insert(op->buffer.get());
    IRVisitor::visitLoad(op);
  }
};

// Moves the nest onto the chip: parameters to their staged buffers (fp16 reads converted to fp32,
// fp32 values rounded to fp16 on store), every other buffer to `scope`.
class ToOnChip : public IRMutator {
public:
  ToOnChip(std::map<const BufferNode *, const Staged *> params, std::string scope)
      : params_(std::move(params)), scope_(std::move(scope)) {}

  Buffer mutateBuffer(const Buffer &b) override {
    auto it = moved_.find(b.get());
    if (it == moved_.end())
      it = moved_.emplace(b.get(), Buffer::make(b->name, b->dtype, b->shape, scope_)).first;
    return it->second;
  }

protected:
  Expr mutateLoad(const LoadNode *op, const Expr &self) override {
    auto it = params_.find(op->buffer.get());
    if (it == params_.end())
      return IRMutator::mutateLoad(op, self);
    const Staged &s = *it->second;
    Expr idx = mutate(op->index);
    Expr l = load(s.work.defined() ? s.work : s.onChip, idx);
    return l.type() == op->type ? l : cast(op->type, l);
  }
  Stmt mutateStore(const StoreNode *op, const Stmt &self) override {
    auto it = params_.find(op->buffer.get());
    if (it == params_.end())
      return IRMutator::mutateStore(op, self);
    const Staged &s = *it->second;
    NPUC_ASSERT(s.role == Staged::Role::Output, "lowerGroup writes only its outputs' parameters");
    Expr v = mutate(op->value), idx = mutate(op->index);
    if (s.work.defined())
      return store(s.work, v, idx);
    return store(s.onChip, v.type() == s.onChip->dtype ? v : cast(s.onChip->dtype, v), idx);
  }

private:
  std::map<const BufferNode *, const Staged *> params_;
  std::string scope_;
  std::map<const BufferNode *, Buffer> moved_;
};

// What emission left: allocations to place, and anything that is not an instruction.
class Leftovers : public IRVisitor {
public:
  std::vector<Buffer> allocs;
  std::vector<std::string> problems; // statements the NPU cannot run, described
  // Emission evaluates every field, loop bound and condition as integer arithmetic at compile
  // time (tir::evalInt): an index computed in floating point (a nearest Resize's source pixel,
  // floor((i + 0.5) / scale - 0.5)) has no instruction field (difftest finding F4). A float
  // constant field is an immediate, which Resolve encodes as its fp32 bits.
  void visit(const Expr &e) override {
    if (e.defined() && !e.type().isIntegral()) {
      problems.push_back("an index computed in floating point: " + toText(e));
      return;
    }
    IRVisitor::visit(e);
  }
  using IRVisitor::visit;
  void visitAllocate(const AllocateNode *op) override {
    allocs.push_back(op->buffer);
    IRVisitor::visitAllocate(op);
  }
  void visitStore(const StoreNode *op) override {
    problems.push_back("scalar store to " + op->buffer->name);
  }
  void visitEvaluate(const EvaluateNode *) override { problems.push_back("an evaluation"); }
  void visitLoad(const LoadNode *op) override {
    problems.push_back("a loop bound or condition reads " + op->buffer->name);
  }
  void visitNpuOp(const NpuOpNode *op) override {
    for (const auto &[name, e] : op->fields) {
      const auto *l = e.as<LoadNode>();
      if (!l) {
        if (!e.as<FloatImmNode>())
          visit(e);
        continue;
      }
      // The operand itself is resolved later; its element must be known at compile time.
      ReadBuffers r;
      r.visit(l->index);
      for (const BufferNode *b : r.read)
        problems.push_back(op->mnemonic + " operand " + name + " is addressed by the values of " +
                           b->name + " (data-dependent indexing)");
      if (r.read.empty())
        visit(l->index);
    }
  }
};

// emit-npu's symbolic operands (`dst=B[i * 16]`) -> level, byte address and dtype fields; the
// buffers' Allocate statements go (the Builder's allocations replace them).
class Resolve : public IRMutator {
public:
  Resolve(const isa::Target &t, std::map<const BufferNode *, std::pair<int, int64_t>> at)
      : t_(t), at_(std::move(at)) {}

protected:
  Stmt mutateAllocate(const AllocateNode *op, const Stmt &) override { return mutate(op->body); }
  Stmt mutateNpuOp(const NpuOpNode *op, const Stmt &self) override {
    const isa::InstrDesc *d = t_.findInstr(op->mnemonic);
    NPUC_ASSERT(d, "emit-npu only writes the target's mnemonics: " + op->mnemonic);
    std::vector<std::pair<std::string, Expr>> f;
    bool changed = false;
    for (const auto &[name, e] : op->fields) {
      if (const auto *fl = e.as<FloatImmNode>()) { // imm0/imm1: fp32 bit patterns
        f.emplace_back(name, imm(floatBits(static_cast<float>(fl->value))));
        changed = true;
        continue;
      }
      const auto *l = e.as<LoadNode>();
      if (!l) {
        f.emplace_back(name, e);
        continue;
      }
      changed = true;
      auto it = at_.find(l->buffer.get());
      NPUC_ASSERT(it != at_.end(), "every operand buffer was placed: " + l->buffer->name);
      const auto [level, base] = it->second;
      if (d->hasField(name + "_space"))
        f.emplace_back(name + "_space", imm(level));
      else if (auto fx = d->fixed.find(name + "_space"); fx != d->fixed.end())
        NPUC_ASSERT(fx->second == level, "emit-npu checked the operand's level: " + name);
      f.emplace_back(name + "_addr", imm(base) + l->index * imm(l->buffer->dtype.bytes()));
      if (d->hasField(name + "_dtype")) {
        std::optional<int> code = dtypeCode(l->buffer->dtype);
        NPUC_ASSERT(code.has_value(), "emit-npu checked the operand's dtype: " + name);
        f.emplace_back(name + "_dtype", imm(*code));
      }
    }
    // emit-npu leaves the extents of dimensions it does not use unwritten (meaning 1); an
    // instruction's absent field reads as 0, an empty box.
    for (const char *n : {"n0", "n1", "n2"})
      if (d->hasField(n) && !op->field(n).defined()) {
        f.emplace_back(n, imm(1));
        changed = true;
      }
    return changed ? NpuOpNode::make(op->mnemonic, std::move(f)) : self;
  }

private:
  const isa::Target &t_;
  std::map<const BufferNode *, std::pair<int, int64_t>> at_;
};

// Loops longer than an instruction's size fields (loop-collapse merges contiguous loops into
// one) split at a divisor, so that emit-npu can map them onto two dimensions.
class SplitLong : public IRMutator {
public:
  explicit SplitLong(int64_t maxDim) : maxDim_(maxDim) {}

protected:
  Stmt mutateFor(const ForNode *op, const Stmt &self) override {
    Stmt s = IRMutator::mutateFor(op, self);
    const auto *f = s.as<ForNode>();
    const auto *ext = f->extent.as<IntImmNode>();
    if (!ext || ext->value <= maxDim_)
      return s;
    for (int64_t d = maxDim_; d > 1; --d) // the largest divisor that fits
      if (ext->value % d == 0)
        return ext->value / d <= maxDim_ ? schedule::splitLoop(f, d) : s;
    return s;
  }

private:
  int64_t maxDim_;
};

} // namespace

namespace loopnest {

std::set<const BufferNode *> readBuffers(const Stmt &s) {
  ReadBuffers r;
  r.visit(s);
  return r.read;
}

Stmt compileOnChip(const Stmt &body, const std::vector<Staged> &staged,
                   const std::map<const BufferNode *, const Staged *> &byParam, const Hw &hw,
                   std::vector<Buffer> &allocs, std::string &why) {
  const isa::Target &t = *hw.t;
  const std::string l1 = t.levels.at(static_cast<size_t>(hw.l1)).name;
  PrimFunc f;
  f.name = "loop_nest";
  f.body = ToOnChip(byParam, l1).mutate(body);
  std::vector<Stmt> seqBody = {f.body};
  for (const Staged &s : staged) {
    f.params.push_back(s.onChip);
    if (!s.work.defined())
      continue;
    Var i = Var::make("i");
    seqBody.push_back(forLoop(i, imm(0), imm(s.onChip->numElements()),
                              store(s.onChip, cast(kF16, load(s.work, i)), i)));
  }
  f.body = seq(seqBody);
  for (const Staged &s : staged)
    if (s.work.defined())
      f.body = AllocateNode::make(s.work, f.body);

  // Normalise, split into unit operations, emit. The pipeline decides conditions without Z3, so
  // a context of its own per nest costs nothing and keeps kernels independent.
  PassRegistry passes;
  registerCorePasses(passes);
  PassContext ctx;
  PassManager pm(parsePipeline(passes, kNormalisationPipeline), ctx);
  std::vector<std::string> scalar;
  f = pm.run(f);
  f.body = SplitLong(hw.maxDim()).mutate(f.body);
  f = emitNpu(preProcess(f, t), t, &scalar);
  if (!scalar.empty()) {
    why = fmt::format("{} nest(s) stay scalar: {}{}", scalar.size(), scalar.front(),
                      scalar.size() > 1 ? "; ..." : "");
    return {};
  }
  Leftovers left;
  left.visit(f.body);
  if (!left.problems.empty()) {
    why = fmt::format("not all instructions: {}", left.problems.front());
    return {};
  }
  allocs = left.allocs;
  return f.body;
}

Stmt resolveOperands(const isa::Target &t, const Stmt &body,
                     std::map<const BufferNode *, std::pair<int, int64_t>> at) {
  return Resolve(t, std::move(at)).mutate(body);
}

// A contiguous copy of `units` 2-byte elements between a tensor's home (DRAM, or L1 when it is
// resident between groups) and the kernel's L1 buffer, in boxes the size fields hold.
void flatCopy(const Builder &b, bool toChip, int homeLevel, int64_t dramAddr, int64_t chipAddr,
              int64_t units, std::vector<Stmt> &out) {
  const Hw &hw = b.hw();
  const int64_t maxDim = hw.maxDim();
  int64_t done = 0;
  while (done < units) {
    int64_t row = std::min(units - done, maxDim);
    int64_t rows = std::min((units - done) / row, maxDim);
    View dram{homeLevel, imm(dramAddr + done * 2)}, chip{hw.l1, imm(chipAddr + done * 2)};
    dram.s1 = chip.s1 = imm(row);
    Dims dims{imm(row), imm(rows), imm(1)};
    out.push_back(toChip ? b.load(dram, chip, dims) : b.store(chip, dram, dims));
    done += row * rows;
  }
}

ConstBytes fp32Const(const graph::Value &v) {
  const size_t n = static_cast<size_t>(numElements(v.shape));
  return ConstBytes(n * 4, [&v, n] {
    std::vector<uint8_t> raw(n * 4);
    for (size_t j = 0; j < n; ++j) {
      const float f = v.f32 ? (*v.f32)[j] : static_cast<float>((*v.i64)[j]);
      std::memcpy(raw.data() + 4 * j, &f, 4);
    }
    return raw;
  });
}

std::string bytesText(int64_t b) {
  return b >= (1 << 20)   ? fmt::format("{:.1f} MiB", b / 1048576.0)
         : b >= (1 << 10) ? fmt::format("{:.1f} KiB", b / 1024.0)
                          : fmt::format("{} bytes", b);
}

std::string finishKernel(const isa::Target &t, const graph::FusedGroup &grp, int64_t staging,
                         const std::string &tiling, Kernel &k) {
  Expected<isa::Program, Reject> emitted = emitInstructions(t, k.body, grp.name);
  if (!emitted)
    return emitted.error().message;
  const isa::Program &probe = *emitted;
  int64_t vec = 0, dma = 0, mm = 0;
  for (const isa::Instr &in : probe.instrs) {
    auto dim = [&](const char *name) { return in.find(name).value_or(1); };
    switch (in.desc->semantics) {
    case isa::Semantics::Vector:
      ++vec;
      k.vectorElems += dim("n0") * dim("n1") * dim("n2");
      break;
    case isa::Semantics::Dma:
      ++dma;
      break;
    case isa::Semantics::Matmul:
      ++mm;
      k.macs += dim("m") * dim("k") * dim("n");
      break;
    case isa::Semantics::Finish:
      break;
    }
  }
  k.tiling = fmt::format("loop-nest kernel (emit-npu): {} vector, {} dma ({} staging), {} matmul "
                         "instructions; 0 scalar; {}",
                         vec, dma, staging, mm, tiling);
  return "";
}

} // namespace loopnest

namespace {

// A 4-D tensor between its NHWC DRAM image and logical NCHW in L1: per image, dims (W, H, C).
void nhwcCopy(const Builder &b, bool toChip, int homeLevel, int64_t dramAddr, int64_t chipAddr,
              const Shape &s, std::vector<Stmt> &out) {
  const Hw &hw = b.hw();
  const int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  for (int64_t n = 0; n < N; ++n) {
    View dram{homeLevel, imm(dramAddr + n * H * W * C * 2)};
    dram.s0 = imm(C);
    dram.s1 = imm(W * C);
    dram.s2 = imm(1);
    View chip{hw.l1, imm(chipAddr + n * C * H * W * 2)};
    chip.s0 = imm(1);
    chip.s1 = imm(W);
    chip.s2 = imm(H * W);
    Dims dims{imm(W), imm(H), imm(C)};
    out.push_back(toChip ? b.load(dram, chip, dims) : b.store(chip, dram, dims));
  }
}

} // namespace

namespace loopnest {

namespace {

// The group's reference loop nest (fp32, logical layouts); "" or why there is none. lowerGroup
// reports an op it has no loops for as npuc::Error; for this kernel that is a decision (the
// group stays on the CPU with the reason), so this is the one place that catches it, to become
// a Reject result once lowerGroup returns one.
std::string referenceNest(const graph::Graph &g, const graph::FusedGroup &grp, PrimFunc &ref,
                          std::vector<graph::ValueId> &pv) {
  try {
    // The vector unit has no fp64: normalisation statistics are fp32 here; and it covers many
    // rows per instruction when each stage is one nest over all rows.
    ref = lowerGroup(g, grp, &pv, LowerOptions{.fp64Statistics = false, .statisticsPerRow = true});
  } catch (const npuc::Error &e) {
    return e.what();
  }
  return "";
}

// 3-D convolutions and pools (5-D tensors) are left to the CPU: this kernel would emit their
// windows tap by tap as vector instructions (minutes of compile time for a 32^3 volume), where the
// CPU code loops over them.
std::string volumetricWindow(const graph::Graph &g, const graph::FusedGroup &grp) {
  using graph::OpKind;
  for (graph::NodeId id : grp.nodes) {
    const graph::Node &n = g.node(id);
    bool window = n.kind == OpKind::Conv || n.kind == OpKind::ConvTranspose ||
                  n.kind == OpKind::MaxPool || n.kind == OpKind::AveragePool ||
                  n.kind == OpKind::LpPool;
    if (window && !n.inputs.empty() && g.value(n.inputs[0]).shape.size() == 5)
      return fmt::format("{} ({}): 3-D convolutions and pools run on the CPU", n.name, n.kind);
  }
  return "";
}

} // namespace

std::string prepare(const graph::Graph &g, const graph::FusedGroup &grp, const Hw &hw,
                    Prepared &out) {
  if (!hw.vectorReaches(hw.l1))
    return "the target's vector unit cannot address L1";
  if (std::string why = volumetricWindow(g, grp); !why.empty())
    return why;
  if (std::string why = referenceNest(g, grp, out.ref, out.pv); !why.empty())
    return why;
  const PrimFunc &ref = out.ref;
  const std::vector<graph::ValueId> &pv = out.pv;
  NPUC_ASSERT(pv.size() == ref.params.size(), "lowerGroup names the value of every parameter");

  // Parameters -> staged on-chip buffers.
  const std::string l1 = hw.t->levels.at(static_cast<size_t>(hw.l1)).name;
  std::set<const BufferNode *> reads = readBuffers(ref.body);
  out.staged.assign(pv.size(), Staged{});
  for (size_t i = 0; i < pv.size(); ++i) {
    const graph::Value &v = g.value(pv[i]);
    Staged &s = out.staged[i];
    s.value = pv[i];
    bool isOut = std::find(grp.outputs.begin(), grp.outputs.end(), pv[i]) != grp.outputs.end();
    s.role = isOut            ? Staged::Role::Output
             : v.isConstant() ? Staged::Role::Const
                              : Staged::Role::Input;
    if (s.role != Staged::Role::Const && v.dtype != graph::DType::F32)
      return fmt::format("tensor '{}' is not float32 (the NPU keeps tensors as fp16)", v.name);
    const Buffer &p = ref.params[i];
    s.onChip = Buffer::make(p->name, s.role == Staged::Role::Const ? kF32 : kF16, p->shape, l1);
    if (isOut && reads.count(p.get()))
      s.work = Buffer::make(p->name + "_f32", kF32, p->shape, l1);
    out.byParam[p.get()] = &s;
  }
  return "";
}

int64_t wholeLeastBytes(const Prepared &prep, const Hw &hw) {
  int64_t least = 0;
  auto add = [&](int64_t elems, int64_t bytes) {
    least += alignUp(elems * bytes, hw.alignment(hw.l1));
  };
  for (const Staged &s : prep.staged) {
    add(s.onChip->numElements(), s.onChip->dtype.bytes());
    if (s.work.defined())
      add(s.work->numElements(), 4);
  }
  for (Stmt x = prep.ref.body; const auto *a = x.as<AllocateNode>(); x = a->body)
    add(a->buffer->numElements(), 4);
  return least;
}

namespace {

// The whole path's staging: inputs and constants in (`prologue`), outputs out (`epilogue`). With
// `at` empty a dry run (no addresses; constants are placed only by the real one, addConst has an
// effect) that counts the DMAs; with `at` the real one, which also counts the DRAM bytes in `k`.
void stageWhole(const graph::Graph &g, const Prepared &prep, const Builder &b, const DramCtx &d,
                const std::map<const BufferNode *, std::pair<int, int64_t>> *at,
                std::vector<Stmt> &prologue, std::vector<Stmt> &epilogue, Kernel &k) {
  const Hw &hw = b.hw();
  prologue.clear();
  epilogue.clear();
  if (at) // each tensor moves whole here; recorded as the chunked path records its regions
    k.tensorBytes.emplace();
  for (const Staged &s : prep.staged) {
    const graph::Value &v = g.value(s.value);
    const int64_t chip = at ? at->at(s.onChip.get()).second : 0, n = numElements(v.shape);
    if (s.role == Staged::Role::Const) {
      int64_t from = 0;
      if (at) {
        from = d.addConst(fp32Const(v));
        k.dramBytes += 4 * n;
      }
      flatCopy(b, true, hw.dram, from, chip, 2 * n, prologue);
      continue;
    }
    const bool in = s.role == Staged::Role::Input;
    const int64_t dram = at ? d.addrOf(s.value) : 0;
    const int home = d.level(s.value, hw);
    if (isNhwc(v))
      nhwcCopy(b, in, home, dram, chip, v.shape, in ? prologue : epilogue);
    else
      flatCopy(b, in, home, dram, chip, n, in ? prologue : epilogue);
    if (at) {
      k.dramBytes += 2 * n;
      (*k.tensorBytes)[s.value] += 2 * n;
    }
  }
}

} // namespace

int64_t wholeStagingDmas(const graph::Graph &g, const Prepared &prep, const Hw &hw,
                         const DramCtx &d) {
  const Builder b(hw); // statements only: nothing is reserved
  std::vector<Stmt> prologue, epilogue;
  Kernel none;
  stageWhole(g, prep, b, d, nullptr, prologue, epilogue, none);
  return static_cast<int64_t>(std::max(prologue.size(), epilogue.size()));
}

namespace {

// How the whole path ended: a kernel (or its final reject) in `k`, or whole tensors do not fit
// (`why`), which is the tiled path's cue.
enum class Whole { Done, DoesNotFit };

Whole lowerWhole(const graph::Graph &g, const graph::FusedGroup &grp, Builder &b,
                 const DramCtx &d, const Prepared &prep, Kernel &k, std::string &why) {
  const Hw &hw = b.hw();
  const isa::Target &t = *hw.t;
  const std::string l1 = t.levels.at(static_cast<size_t>(hw.l1)).name;
  // What whole tensors need at least: beyond the level, the tiled path takes over before
  // compiling the whole nest (whose longer loops may not even fit the instructions' fields).
  if (const int64_t least = wholeLeastBytes(prep, hw); least > b.freeBytes(hw.l1)) {
    why = fmt::format("whole tensors need at least {} of {}, has {} free", bytesText(least), l1,
                      bytesText(b.freeBytes(hw.l1)));
    return Whole::DoesNotFit;
  }
  std::vector<Buffer> allocs;
  Stmt emitted = compileOnChip(prep.ref.body, prep.staged, prep.byParam, hw, allocs, why);
  if (!why.empty()) { // what emit-npu cannot express
    k.reject = kernelReject(RejectKind::Unsupported, "loop-nest kernel: " + why);
    return Whole::Done;
  }
  // Place every buffer at once when they fit; the fp32 working copies are allocated in the body,
  // so `allocs` has them already.
  std::vector<Buffer> all = allocs;
  for (const Staged &s : prep.staged)
    all.push_back(s.onChip);
  std::map<int, int64_t> need;
  std::vector<int> levelOf;
  for (const Buffer &x : all) {
    std::optional<int> lv = scopeLevel(t, x->scope);
    NPUC_ASSERT(lv && *lv != hw.dram, "the kernel's buffers are on chip: " + x->name);
    levelOf.push_back(*lv);
    need[*lv] += alignUp(x->numElements() * x->dtype.bytes(), hw.alignment(*lv));
  }
  for (const auto &[lv, bytes] : need)
    if (bytes > b.freeBytes(lv)) {
      why = fmt::format("whole tensors need {} of {} for {} buffers, has {} free", bytesText(bytes),
                        t.levels.at(static_cast<size_t>(lv)).name, all.size(),
                        bytesText(b.freeBytes(lv)));
      return Whole::DoesNotFit;
    }
  // Every staging DMA comes before (loads) or after (stores) the whole computation in program
  // order, and each pushes (or pops) a token for the computation of its part. More of them on a
  // side than a token queue holds would block the engine on its pushes before the program's
  // dispatch reaches the instructions that pop them: a deadlock. One DMA per image stages a 4-D
  // tensor, so a large batch hits this; the tiled path then stages a few images per chunk.
  std::vector<Stmt> prologue, epilogue;
  stageWhole(g, prep, b, d, nullptr, prologue, epilogue, k);
  const int64_t depth = t.tokenQueueDepth;
  for (const auto *side : {&prologue, &epilogue})
    if (static_cast<int64_t>(side->size()) > depth) {
      why = fmt::format("{} staging DMAs on one side of whole tensors exceed the token queue "
                        "depth {} (one per image of a 4-D tensor)",
                        side->size(), depth);
      return Whole::DoesNotFit;
    }

  std::map<const BufferNode *, std::pair<int, int64_t>> at;
  for (size_t i = 0; i < all.size(); ++i) {
    OnChip oc{all[i]->name, levelOf[i], all[i]->numElements() * all[i]->dtype.bytes(), 1};
    bool ok = b.reserve(oc);
    NPUC_ASSERT(ok, "the level's free bytes were checked for all buffers");
    at[all[i].get()] = {levelOf[i], oc.base};
  }
  Stmt compute = resolveOperands(t, emitted, at);
  stageWhole(g, prep, b, d, &at, prologue, epilogue, k);
  const int64_t staging = static_cast<int64_t>(prologue.size() + epilogue.size());
  std::vector<Stmt> all3 = prologue;
  all3.push_back(compute);
  all3.insert(all3.end(), epilogue.begin(), epilogue.end());
  k.body = b.wrapAllocations(seq(all3));
  // Emit once here: field limits the staging needs are checked, and the counts are reported.
  why = finishKernel(
      t, grp, staging, fmt::format("{} of on-chip buffers, staged whole", bytesText(need[hw.l1])),
      k);
  if (!why.empty())
    k.reject = kernelReject(RejectKind::Encoding, "loop-nest kernel: " + why);
  return Whole::Done;
}

} // namespace

Kernel lowerLoopNestPoint(const graph::Graph &g, const graph::FusedGroup &grp, Builder &b,
                          const DramCtx &d, const KernelOptions &o,
                          const std::optional<LoopNestPoint> &forced, LoopNestPoint *chosen) {
  Kernel k;
  Prepared prep;
  if (std::string why = prepare(g, grp, b.hw(), prep); !why.empty()) {
    k.reject = kernelReject(RejectKind::Unsupported, "loop-nest kernel: " + why);
    return k;
  }
  if (forced && forced->chunked) {
    if (chosen)
      *chosen = *forced;
    return lowerTiled(g, grp, b, d, o.doubleBuffer, prep, "the schedule chunks it",
                      forced->chunking);
  }
  std::string why;
  if (chosen)
    *chosen = LoopNestPoint{};
  if (lowerWhole(g, grp, b, d, prep, k, why) == Whole::Done)
    return k;
  if (forced) { // whole tensors, as the schedule says
    k.reject = kernelReject(RejectKind::Capacity, "loop-nest kernel: " + why);
    return k;
  }
  LoopNestPoint tiled{true, {}};
  k = lowerTiled(g, grp, b, d, o.doubleBuffer, prep, why, std::nullopt, &tiled.chunking);
  if (chosen)
    *chosen = tiled;
  return k;
}

} // namespace loopnest

Kernel lowerLoopNestKernel(const graph::Graph &g, const graph::FusedGroup &grp, Builder &b,
                           const DramCtx &d, const KernelOptions &o) {
  return loopnest::lowerLoopNestPoint(g, grp, b, d, o, std::nullopt);
}

} // namespace npuc::npu
