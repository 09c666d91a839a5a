// What one call of the projections' matmul kernels (matmul_bf16.h, matmul_f32.h) computes on.
//
// A call may first compute each row of its input from the layer's own activations, in f32, then
// round it (the prologue, what the program would otherwise compute in XLA loops before the dot):
// - kRmsNorm: x [T, K] -> x * rsqrt(mean(x^2) + eps) * norm, norm [K] (lib/hlo/nn/functions.ts
//   rmsNorm);
// - kSwiGlu: x [T, 2K] (gate | up) -> gate * logistic(gate) * up, the SwiGLU MLP's activation;
// - kGeGlu: x [T, 2K] (gate | up) -> gelu_tanh(gate) * up, Gemma's GeGLU (transformers'
//   gelu_pytorch_tanh: 0.5 g (1 + tanh(sqrt(2 / pi) (g + 0.044715 g^3)))).
//
// A call may skip rows (`live`): a pass's padding rows (a query or an item shorter than its
// bucket) are never computed, their products 0 (matmul_rows.h). It may add a residual to its
// result (the epilogue: the layer's residual add, out = residual + x . w, bit for bit XLA's add).
//
// The weights come as the matrix [K, N] (f32 or bf16 bits), or already packed into 32-column panels
// (a model's weights are packed once at load, by the programs lib/hlo/nn/matmul-kernel.ts builds),
// ceil(N / 32) panels one after the other:
// - kPacked, for the bf16 kernel (which packs a plain matrix so on every call): each panel
//   [ceil(K / 2)][32][2] bf16 bits, element [p][c][e] = w[2p + e][32j + c] for panel j, 0 past K
//   and N;
// - kPackedF32, for the f32 kernel: each panel [K][32] f32, element [k][c] = w[k][32j + c], 0 past
//   N. A panel is one contiguous run, so a tile streams it from the cache; the plain matrix's rows
//   lie N apart, and at the large N of a model's projections the panel's rows fall into a few cache
//   sets and evict each other (docs/performance.md, "The projections' kernels").
// The f32 kernel takes f32 weights, plain or kPackedF32, and kPacked: each task widens the panel it
// reads to f32 (exactly: a bf16 value is the high half of its float), so a bf16 checkpoint is kept
// in its own bits and its products are still f32's.
#pragma once

#include <cstdint>

namespace pjrt_score {

// Columns of a packed panel.
constexpr int64_t kMatmulPanelColumns = 32;

struct MatmulArgs {
  enum class Weights { kF32, kBf16Bits, kPacked, kPackedF32 };
  enum class Prologue { kNone, kRmsNorm, kSwiGlu, kGeGlu };
  int64_t t = 0, k = 0, n = 0;
  Prologue prologue = Prologue::kNone;
  const float* x = nullptr;     // [T, K]; [T, 2K] for kSwiGlu and kGeGlu
  const float* norm = nullptr;  // kRmsNorm: [K]
  float eps = 0.f;              // kRmsNorm
  const void* w = nullptr;      // [K, N]: floats or bf16 bits (uint16_t); kPacked*: the panels
  Weights w_type = Weights::kF32;
  float* out = nullptr;  // [T, N]
  // [T]: 0 marks a padding row (its result 0, never computed); nullptr: every row is computed.
  const int32_t* live = nullptr;
  // [T, N]: added to the product (out = residual + product); nullptr: none.
  const float* residual = nullptr;
};

// The prologue reads a gate | up row of width 2K (SwiGLU, GeGLU).
constexpr bool GatedPrologue(MatmulArgs::Prologue p) {
  return p == MatmulArgs::Prologue::kSwiGlu || p == MatmulArgs::Prologue::kGeGlu;
}

}  // namespace pjrt_score
