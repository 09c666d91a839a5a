// What one call of the projections' matmul kernels (matmul_bf16.h, matmul_f32.h) computes on.
//
// A call may first compute each row of its input from the layer's own activations, in f32, then
// round it (the prologue, what the program would otherwise compute in XLA loops before the dot):
// - kRmsNorm: x [T, K] -> x * rsqrt(mean(x^2) + eps) * norm, norm [K] (lib/hlo/nn/functions.ts
//   rmsNorm);
// - kSwiGlu: x [T, 2K] (gate | up) -> gate * logistic(gate) * up, the SwiGLU MLP's activation.
//
// A call may skip rows (`live`): a pass's padding rows (a query or an item shorter than its
// bucket) are never computed, their products 0 (matmul_rows.h). It may add a residual to its
// result (the epilogue: the layer's residual add, out = residual + x . w, bit for bit XLA's add).
//
// The weights come as the matrix [K, N] (f32 or bf16 bits, rounded and packed into panels by each
// call), or already packed (kPacked: a model's weights are packed once at load, by the program
// lib/hlo/nn/matmul-kernel.ts builds): ceil(N / 32) panels one after the other, each
// [ceil(K / 2)][32][2] bf16 bits, element [p][c][e] = w[2p + e][32j + c] for panel j, 0 past K and
// N. The f32 kernel takes f32 matrices only.
#pragma once

#include <cstdint>

namespace pjrt_score {

// Columns of a packed panel.
constexpr int64_t kMatmulPanelColumns = 32;

struct MatmulArgs {
  enum class Weights { kF32, kBf16Bits, kPacked };
  enum class Prologue { kNone, kRmsNorm, kSwiGlu };
  int64_t t = 0, k = 0, n = 0;
  Prologue prologue = Prologue::kNone;
  const float* x = nullptr;     // [T, K]; [T, 2K] for kSwiGlu
  const float* norm = nullptr;  // kRmsNorm: [K]
  float eps = 0.f;              // kRmsNorm
  const void* w = nullptr;      // [K, N]: floats or bf16 bits (uint16_t); kPacked: the panels
  Weights w_type = Weights::kF32;
  float* out = nullptr;  // [T, N]
  // [T]: 0 marks a padding row (its result 0, never computed); nullptr: every row is computed.
  const int32_t* live = nullptr;
  // [T, N]: added to the product (out = residual + product); nullptr: none.
  const float* residual = nullptr;
};

}  // namespace pjrt_score
