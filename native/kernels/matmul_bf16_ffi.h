// The projections' kernel (matmul_bf16.h) as an XLA FFI custom-call handler (registered with a
// plugin by register_kernels.h): `pjrt_score_matmul_bf16`. Operands: x f32 [T, K], the stacked
// weights [Ly, K, N] (f32, or bf16 bits typed u16 or bf16), the layer s32 [] (clamped to
// [0, Ly - 1], as a dynamic slice's start); one result f32 [T, N]
// (lib/hlo/nn/matmul-kernel.ts emits the call).
#pragma once

#include "kernels/xla_ffi.h"

namespace pjrt_score {

constexpr const char* kMatmulBf16Target = "pjrt_score_matmul_bf16";

xla_ffi::Error* MatmulBf16Handler(xla_ffi::CallFrame* frame);

}  // namespace pjrt_score
