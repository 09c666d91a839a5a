// The projections' kernels (matmul_bf16.h, matmul_f32.h) as XLA FFI custom-call handlers
// (registered with a plugin by register_kernels.h); lib/hlo/nn/matmul-kernel.ts emits the calls.
// Each takes the stacked weights and the layer s32 [] (clamped to [0, Ly - 1], as a dynamic
// slice's start), and gives one result f32 [T, N]:
// - `pjrt_score_matmul_bf16`: x f32 [T, K], weights, layer;
// - `pjrt_score_matmul_bf16_rmsnorm`: x f32 [T, K], the stacked norm weights f32 [Ly, K], eps
//   f32 [], weights, layer (x RMS-normalized by the layer's norm first);
// - `pjrt_score_matmul_bf16_swiglu`: x f32 [T, 2K] (gate | up), weights, layer (SwiGLU first);
// - `pjrt_score_matmul_bf16_geglu`: the same with Gemma's GeGLU (tanh GELU) first;
// - `pjrt_score_matmul_f32`, `_f32_rmsnorm`, `_f32_swiglu`, `_f32_geglu`: the same in f32.
// Each may take one more operand, the live rows s32 [T] (MatmulArgs::live): a row marked 0 is a
// pass's padding, skipped, its result 0.
// The bf16 kernel's weights: [Ly, K, N] of f32, or of bf16 bits typed u16 or bf16, or packed
// (u16 or bf16 [Ly, ceil(N / 32), ceil(K / 2), 32, 2]); the f32 kernel's: [Ly, K, N] of f32, its
// f32 panels [Ly, ceil(N / 32), K, 32], or the same packed bf16 pairs (widened exactly).
#pragma once

#include "kernels/xla_ffi.h"

namespace pjrt_score {

constexpr const char* kMatmulBf16Target = "pjrt_score_matmul_bf16";
constexpr const char* kMatmulBf16RmsNormTarget = "pjrt_score_matmul_bf16_rmsnorm";
constexpr const char* kMatmulBf16SwiGluTarget = "pjrt_score_matmul_bf16_swiglu";
constexpr const char* kMatmulBf16GeGluTarget = "pjrt_score_matmul_bf16_geglu";

xla_ffi::Error* MatmulBf16Handler(xla_ffi::CallFrame* frame);
xla_ffi::Error* MatmulBf16RmsNormHandler(xla_ffi::CallFrame* frame);
xla_ffi::Error* MatmulBf16SwiGluHandler(xla_ffi::CallFrame* frame);
xla_ffi::Error* MatmulBf16GeGluHandler(xla_ffi::CallFrame* frame);

constexpr const char* kMatmulF32Target = "pjrt_score_matmul_f32";
constexpr const char* kMatmulF32RmsNormTarget = "pjrt_score_matmul_f32_rmsnorm";
constexpr const char* kMatmulF32SwiGluTarget = "pjrt_score_matmul_f32_swiglu";
constexpr const char* kMatmulF32GeGluTarget = "pjrt_score_matmul_f32_geglu";

xla_ffi::Error* MatmulF32Handler(xla_ffi::CallFrame* frame);
xla_ffi::Error* MatmulF32RmsNormHandler(xla_ffi::CallFrame* frame);
xla_ffi::Error* MatmulF32SwiGluHandler(xla_ffi::CallFrame* frame);
xla_ffi::Error* MatmulF32GeGluHandler(xla_ffi::CallFrame* frame);

}  // namespace pjrt_score
