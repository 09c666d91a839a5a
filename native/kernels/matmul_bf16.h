// The decoder's projections in bf16 on the CPU's dot units: out = bf16(x) . bf16(w), f32
// accumulation, the product XLA's bf16 x bf16 -> f32 dots compute (both operands rounded to
// nearest even), for an f32 activation x [T, K] and one layer's weight matrix w [K, N] stored f32
// or as bf16 bits, or packed. Why a kernel: XLA CPU rounds and repacks the weights for every dot
// of every pass, and splits a dot of a few hundred rows unevenly over the cores; here each thread
// takes one 32-column panel of w (packed at load, or rounded and packed by the call) and runs every
// row over it (docs/performance.md, "The projections' kernels"). Its operands, prologues and
// weight forms: matmul_args.h.
#pragma once

#include <string>

#include "kernels/matmul_args.h"

namespace pjrt_score {

// Which inner loop a call runs: "avx512bf16" where the allowed instruction set has vdpbf16ps
// (kernel_isa.h: an AVX512_BF16 or AMX CPU, the probe's tried ceiling, PJRT_SCORE_KERNEL_ISA), else
// "portable" (the same rounding and blocking in plain C++; slow, the reference).
const char* MatmulBf16Path();

// Shapes must already be checked (matmul_bf16_ffi.cc). Returns false with `error` set when scratch
// memory cannot be had; never throws.
bool RunMatmulBf16(const MatmulArgs& args, std::string* error);

// The kPacked panels of a call's [K, N] weights (f32 or bf16 bits) into `packed` (ceil(N / 32) *
// ceil(K / 2) * 64 values), in plain C++: what the load's packing program computes (the probe child
// checks the packed form with it).
void PackMatmulWeights(const MatmulArgs& args, uint16_t* packed);

}  // namespace pjrt_score
