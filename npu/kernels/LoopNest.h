// LoopNest.h - pieces the loop-nest kernel's two paths share (npu/LowerLoopNest.cpp stages
// whole tensors; npu/LoopNestTile.cpp stages chunks of the outer loop when they do not fit):
// moving a reference nest on chip, compiling it through emit-npu, resolving symbolic operands,
// the staging copies, and the kernel's report. Internal to the NPU backend.
#pragma once

#include "npu/kernels/Builder.h"
#include "npu/kernels/Kernels.h"
#include "tir/IR.h"

#include <map>
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

/// Emits the kernel once (checking field limits) and fills its counts; returns the reason when
/// emission fails, else "". `tiling` ends the report after "0 scalar; ".
std::string finishKernel(const isa::Target &t, const graph::FusedGroup &grp, int64_t staging,
                         const std::string &tiling, Kernel &k);

/// The tiled path: the group's outer loop in chunks that fit L1 (LoopNestTile.cpp). `whole` is
/// why staging whole tensors does not work; the result's reject names both when no chunk fits.
/// `doubleBuffer` false (the `--no-double-buffer` ablation) tries single-buffered chunks only.
Kernel lowerTiled(const graph::Graph &g, const graph::FusedGroup &grp, Builder &b, const DramCtx &d,
                  bool doubleBuffer, const tir::PrimFunc &ref,
                  const std::vector<graph::ValueId> &pv, const std::string &whole);

} // namespace npuc::npu::loopnest
