// The projections' kernel (matmul_bf16.h) as XLA FFI custom-call handlers (registered with a
// plugin by register_kernels.h); lib/hlo/nn/matmul-kernel.ts emits the calls. Each takes the
// stacked weights [Ly, K, N] (f32, or bf16 bits typed u16 or bf16) and the layer s32 [] (clamped to
// [0, Ly - 1], as a dynamic slice's start), and gives one result f32 [T, N]:
// - `pjrt_score_matmul_bf16`: x f32 [T, K], weights, layer;
// - `pjrt_score_matmul_bf16_rmsnorm`: x f32 [T, K], the stacked norm weights f32 [Ly, K], eps f32
// [],
//   weights, layer (x RMS-normalized by the layer's norm first);
// - `pjrt_score_matmul_bf16_swiglu`: x f32 [T, 2K] (gate | up), weights, layer (SwiGLU first).
#pragma once

#include "kernels/xla_ffi.h"

namespace pjrt_score {

constexpr const char* kMatmulBf16Target = "pjrt_score_matmul_bf16";
constexpr const char* kMatmulBf16RmsNormTarget = "pjrt_score_matmul_bf16_rmsnorm";
constexpr const char* kMatmulBf16SwiGluTarget = "pjrt_score_matmul_bf16_swiglu";

xla_ffi::Error* MatmulBf16Handler(xla_ffi::CallFrame* frame);
xla_ffi::Error* MatmulBf16RmsNormHandler(xla_ffi::CallFrame* frame);
xla_ffi::Error* MatmulBf16SwiGluHandler(xla_ffi::CallFrame* frame);

}  // namespace pjrt_score
