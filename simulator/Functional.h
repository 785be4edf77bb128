// Functional.h - the data side of the simulator: what each decoded instruction does to Memory.
//
// Results are bit exact to the hardware's number formats: DMA moves raw element bit patterns,
// matmul multiplies fp16 (exact products in fp32) and adds in fp32 in k order, vector ops compute
// in fp32 and round once to the destination dtype. Inputs are already validated by Decode.
#pragma once

#include "simulator/Decode.h"

namespace npuc::sim {

void executeDma(const DmaOp &o, Memory &mem);
void executeMatmul(const isa::TensorUnit &tu, const MatmulOp &o, Memory &mem);
void executeVector(const VectorOp &o, Memory &mem);

} // namespace npuc::sim
