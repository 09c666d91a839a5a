// The decoder's projections in f32 on the CPU: out = x . w for an f32 activation x [T, K] (after
// the call's prologue, matmul_prologue.h) and one layer's f32 matrix w [K, N] of the stacked
// weights, f32 products and sums, as XLA's f32 dots compute them (in another order: each output
// is one FMA chain over k here). Why a kernel: XLA CPU packs the weights for every dot of every
// pass and runs the norms and SwiGLU as loops of their own between the dots; here the rows are
// computed once per call and every 12-row tile streams 32 columns of w where they lie
// (docs/performance.md, "The projections' kernels"). The same operands and prologues as the bf16
// kernel (matmul_args.h: MatmulArgs with f32 weights, `w_type` kF32 or kPackedF32: the panels a
// model's load packs; or kPacked, a bf16 checkpoint's pair panels, each widened exactly to f32).
#pragma once

#include <string>

#include "kernels/matmul_args.h"

namespace pjrt_score {

// Which inner loop a call runs: "avx512" where the allowed instruction set has AVX-512
// (kernel_isa.h), else "portable" (plain C++: the reference).
const char* MatmulF32Path();

// Shapes must already be checked (matmul_bf16_ffi.cc); `args.w_type` must be kF32, kPackedF32 or
// kPacked. Returns false with `error` set when scratch memory cannot be had; never throws.
bool RunMatmulF32(const MatmulArgs& args, std::string* error);

}  // namespace pjrt_score
