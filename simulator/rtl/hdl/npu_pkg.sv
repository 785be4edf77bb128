// npu_pkg.sv - everything the NPU core's modules share: the target parameters and decode
// functions the build generates from the target YAML (npu_params.svh, simulator/rtl/GenParams.cpp)
// and the floating-point datapath functions (npu_fp.svh). One package so every module (core,
// tensor array, PE, SRAM) imports one definition instead of including its own copy.
package npu_pkg;
  `include "npu_params.svh"
  `include "npu_fp.svh"
endpackage
