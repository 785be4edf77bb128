// Gpu.h - the NVPTX (NVIDIA GPU) target: fused groups -> thread-bound TIR -> LLVM NVPTX -> PTX.
//
// Each top-level statement of a group's loop nest (the anchor's nest, then each epilogue nest)
// becomes one kernel, because consecutive nests depend on each other through whole buffers and
// kernel boundaries are the grid-wide barrier between them. Thread binding: the first loop of the
// nest's perfect-nest prefix with extent > 1 is distributed over blocks (blockIdx.x, grid-stride),
// the next one over the threads of a block (threadIdx.x, block-stride); each bound loop variable
// is rebound by a one-iteration loop at `ctaid + it * grid` under an in-range guard, so the rest
// of the nest is unchanged and stays correct for any extent. Group-internal buffers (Allocate at
// the top of a group) become kernel parameters: global scratch memory the host allocates.
// Float math goes to libdevice (linked from the CUDA toolkit when found); the module is compiled
// for `arch` with LLVM's NVPTX back end and printed as PTX.
//
// Not done: shared-memory staging (cache_read into a shared scope with __syncthreads) and
// execution (there is no GPU on the development machine, so nothing here launches kernels).
#pragma once

#include "graph/Graph.h"
#include "tir/IR.h"

#include <string>
#include <vector>

namespace npuc::cpu {

struct GpuKernel {
  tir::PrimFunc func; // parameters: the group's buffers, then its scratch buffers
  int64_t grid = 1, block = 1;
};

/// Splits a group's function into thread-bound kernels (names `<f.name>_k<i>`).
std::vector<GpuKernel> bindThreads(const tir::PrimFunc &f, int64_t maxBlock = 256);

/// LLVM NVPTX code generation: PTX text for the kernels. `libdevice` is the path of
/// libdevice.10.bc ("" to look in /usr/local/cuda); needed only when kernels call float math.
std::string emitPtx(const std::vector<tir::PrimFunc> &kernels, const std::string &arch = "sm_80",
                    const std::string &libdevice = "");

struct GpuArtifacts {
  std::string ptx;
  /// Launch plan, one line per kernel in execution order:
  ///   kernel <name> grid <G> block <B> args <arg>...   (arg: v<graph value id> | s<elements>)
  std::string plan;
};

/// The whole model (every group) for the GPU.
GpuArtifacts buildGpu(const graph::Graph &g, const std::string &arch = "sm_80");

} // namespace npuc::cpu
