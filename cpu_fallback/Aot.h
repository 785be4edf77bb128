// Aot.h - ahead-of-time compilation of a CPU-placed model for deployment without the compiler.
//
// buildAot() lowers every fused group with the CPU schedules (Lower.h), optimises the module
// exactly like the JIT (Optimize.h) and emits either a relocatable object or a shared library
// (the object linked with the system C compiler driver, `cc -shared ... -lm`). Next to it go:
//   <lib>.graph  - the execution plan, a line-oriented text file (format below)
//   <lib>.params - the constants, fp32 little endian, each at a 64-byte aligned element offset
// include/npuc/runtime.h loads the three files (dlopen) and runs the plan.
//
// Graph file format, version 1 (one record per line, names run to the end of the line):
//   npuc-aot 1
//   threads <default thread count>
//   value <id> <input|const|temp> <elements> <params element offset, -1 unless const> <name>
//   input <id> <rank> <dims...> <name>
//   output <id> <rank> <dims...> <name>
//   call <symbol> <argc> <value ids...>       (in execution order; outputs are the last args)
#pragma once

#include "graph/Graph.h"

#include <string>

namespace npuc::cpu {

struct AotArtifacts {
  std::string library; // object file or shared library bytes
  std::string graph;   // the plan text
  std::string params;  // constant bytes
};

/// Every group of `g` must be CPU-placed (compiled with --target cpu); `threads` is the default
/// the runtime uses. Errors (no C compiler for a shared library, ...) are npuc::Error.
AotArtifacts buildAot(const graph::Graph &g, bool sharedLibrary, int threads);

} // namespace npuc::cpu
