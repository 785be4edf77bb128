// LoopNest.h - pieces the loop-nest kernel's two paths share (npu/kernels/LowerLoopNest.cpp stages
// whole tensors; npu/kernels/LoopNestTile.cpp stages chunks of the outer loop when they do not
// fit): moving a reference nest on chip, compiling it through emit-npu, resolving symbolic
// operands, the staging copies, and the kernel's report. Internal to the NPU backend.
#pragma once

#include "npu/kernels/Builder.h"
#include "npu/kernels/Kernels.h"
#include "tir/IR.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace npuc::npu::loopnest {

/// One parameter of the reference nest and where the kernel keeps it.
struct Staged {
  enum class Role { Input, Const, Output } role = Role::Input;
  graph::ValueId value = graph::kNoValue;
  tir::Buffer onChip; // what the DMA moves: fp16 activations, fp32 constants
  tir::Buffer work;   // an output the nest also reads is computed in fp32 here, then rounded
};

/// The buffers a statement loads from.
std::set<const tir::BufferNode *> readBuffers(const tir::Stmt &s);

/// The nest `body` over parameters `byParam` (reference buffer -> its staging) as an on-chip
/// function: parameters read/written through their staged buffers (fp16 converted on load,
/// rounded on store), outputs the nest reads computed in their fp32 working copy and rounded by
/// a final copy, every other buffer moved to L1. Then normalised, long loops split for the size
/// fields, pre-processed and emitted. Returns the emitted body; `allocs` receives the buffers it
/// allocates itself (intermediates, working copies, scratch). Non-empty `why`: it cannot run.
tir::Stmt compileOnChip(const tir::Stmt &body, const std::vector<Staged> &staged,
                        const std::map<const tir::BufferNode *, const Staged *> &byParam,
                        const Hw &hw, std::vector<tir::Buffer> &allocs, std::string &why);

/// emit-npu's symbolic operands -> level, byte address and dtype fields (`at`: buffer -> level
/// and base address); the body's Allocate statements go.
tir::Stmt resolveOperands(const isa::Target &t, const tir::Stmt &body,
                          std::map<const tir::BufferNode *, std::pair<int, int64_t>> at);

/// A contiguous copy of `units` 2-byte elements between a tensor's home and an L1 buffer.
void flatCopy(const Builder &b, bool toChip, int homeLevel, int64_t homeAddr, int64_t chipAddr,
              int64_t units, std::vector<tir::Stmt> &out);

std::string bytesText(int64_t b);

/// A staged constant as DRAM bytes: its values as fp32 (int64 constants converted), which the
/// kernels move as raw 2-byte units (a DMA does not convert); packed only where it is placed.
ConstBytes fp32Const(const graph::Value &v);

/// Emits the kernel once (checking field limits) and fills its counts; returns the reason when
/// emission fails, else "". `tiling` ends the report after "0 scalar; ".
std::string finishKernel(const isa::Target &t, const graph::FusedGroup &grp, int64_t staging,
                         const std::string &tiling, Kernel &k);

/// One chunking of the tiled path: the loop depth chunked (1: the nests' first real loop, 2: the
/// loop inside it, ...), the rows of that loop per chunk, and the copies of the per-chunk staging
/// buffers (2: the next chunk's loads overlap this one's computation; a single chunk has one).
struct Chunking {
  size_t depth = 1;
  int64_t T = 1;
  int buffers = 2;
  bool operator==(const Chunking &) const = default;
};

/// The group's reference nest and its parameters' staging (the whole path's buffers; the tiled
/// path re-stages per chunk). `byParam` points into `staged`, so a Prepared is not copied.
struct Prepared {
  tir::PrimFunc ref;
  std::vector<graph::ValueId> pv;
  std::vector<Staged> staged;
  std::map<const tir::BufferNode *, const Staged *> byParam;
  Prepared() = default;
  Prepared(const Prepared &) = delete;
  Prepared &operator=(const Prepared &) = delete;
};

/// Fills `out` for the group; returns why the loop-nest kernel cannot take it ("" when it can).
std::string prepare(const graph::Graph &g, const graph::FusedGroup &grp, const Hw &hw,
                    Prepared &out);

/// L1 bytes whole tensors need at least (staged parameters, working copies, the intermediates
/// allocated around the body), before compilation allocates anything.
int64_t wholeLeastBytes(const Prepared &prep, const Hw &hw);

/// The most staging DMAs whole tensors put on one side of the computation (one per image of a
/// 4-D tensor); more than the token queue holds would deadlock.
int64_t wholeStagingDmas(const graph::Graph &g, const Prepared &prep, const Hw &hw,
                         const DramCtx &d);

class Tiler; // LoopNestTile.cpp

/// The tiled path's decisions for one group, for the loop-nest kernel's space: the chunkings it
/// tries, whether one can run (before compilation), and its estimated cycles. `prep` outlives it.
class ChunkedPath {
public:
  ChunkedPath(const graph::Graph &g, const graph::FusedGroup &grp, const Hw &hw,
              const Prepared &prep);
  ~ChunkedPath();
  /// In the order the search tries them (double-buffered only when `doubleBuffer`).
  std::vector<Chunking> candidates(bool doubleBuffer) const;
  /// The candidate chunk rows at a depth (1-based); empty when the nests do not chunk there.
  std::vector<int64_t> rowsAt(size_t depth) const;
  size_t depths() const;
  /// "" when the chunking can run in `free` bytes of L1 (compilation may still allocate more),
  /// else why not; `d` gives the tensors' levels.
  std::string check(const Chunking &c, int64_t free, const DramCtx &d) const;
  /// Estimated cycles of a chunking that check() accepts (streamCost over its staged bytes).
  double cost(const Chunking &c, int64_t free, const DramCtx &d) const;
  /// Element operations of the reference nest (the vector work of every path).
  int64_t work() const;

private:
  std::unique_ptr<Tiler> t_;
};

/// The tiled path: the group's outer loop in chunks that fit L1 (LoopNestTile.cpp). `whole` is
/// why staging whole tensors does not work; the result's reject names both when no chunk fits.
/// `doubleBuffer` false (the `--no-double-buffer` ablation) tries single-buffered chunks only.
/// `forced`: that chunking only (a schedule's point), else the search's first that lowers.
Kernel lowerTiled(const graph::Graph &g, const graph::FusedGroup &grp, Builder &b, const DramCtx &d,
                  bool doubleBuffer, const Prepared &prep, const std::string &whole,
                  const std::optional<Chunking> &forced, Chunking *chosen = nullptr);

/// The loop-nest kernel's point: whole tensors, or `chunking`; the default (empty) is the
/// search: whole tensors when they fit, else the first chunking that lowers.
struct LoopNestPoint {
  bool chunked = false;
  Chunking chunking;
};
/// The schedule of a point (strategy LoopNest; decisions chunked, depth, rows, buffers).
Schedule loopNestSchedule(const LoopNestPoint &x);
Kernel lowerLoopNestPoint(const graph::Graph &g, const graph::FusedGroup &grp, Builder &b,
                          const DramCtx &d, const KernelOptions &o,
                          const std::optional<LoopNestPoint> &forced,
                          LoopNestPoint *chosen = nullptr);

} // namespace npuc::npu::loopnest
