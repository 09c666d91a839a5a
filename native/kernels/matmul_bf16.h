// The decoder's projections in bf16 on the CPU's dot units: out = bf16(x) . bf16(w), f32
// accumulation, the product XLA's bf16 x bf16 -> f32 dots compute (both operands rounded to
// nearest even), for an f32 activation x [T, K] and one layer's weight matrix w [K, N] stored f32
// or as bf16 bits, or packed. Why a kernel: XLA CPU rounds and repacks the weights for every dot
// of every pass, and splits a dot of a few hundred rows unevenly over the cores; here each thread
// takes one 32-column panel of w (packed at load, or rounded and packed by the call) and runs every
// row over it (docs/performance.md, "The projections' kernels").
//
// A call may first compute each row of its input from the layer's own activations, in f32, then
// round it (the prologue, what the program would otherwise compute in XLA loops before the dot):
// - kRmsNorm: x [T, K] -> x * rsqrt(mean(x^2) + eps) * norm, norm [K] (lib/hlo/nn/functions.ts
//   rmsNorm);
// - kSwiGlu: x [T, 2K] (gate | up) -> gate * logistic(gate) * up, the SwiGLU MLP's activation.
//
// The weights come as the matrix [K, N] (f32 or bf16 bits, rounded and packed into panels by each
// call), or already packed (kPacked: a model's weights are packed once at load, by the program
// lib/hlo/nn/matmul-kernel.ts builds): ceil(N / 32) panels one after the other, each
// [ceil(K / 2)][32][2] bf16 bits, element [p][c][e] = w[2p + e][32j + c] for panel j, 0 past K and
// N.
#pragma once

#include <cstdint>
#include <string>

namespace pjrt_score {

// Columns of a packed panel.
constexpr int64_t kMatmulPanelColumns = 32;

struct MatmulBf16Args {
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
};

// Which inner loop a call runs: "avx512bf16" where the allowed instruction set has vdpbf16ps
// (kernel_isa.h: an AVX512_BF16 or AMX CPU, the probe's tried ceiling, PJRT_SCORE_KERNEL_ISA), else
// "portable" (the same rounding and blocking in plain C++; slow, the reference).
const char* MatmulBf16Path();

// Shapes must already be checked (matmul_bf16_ffi.cc). Returns false with `error` set when scratch
// memory cannot be had; never throws.
bool RunMatmulBf16(const MatmulBf16Args& args, std::string* error);

// The kPacked panels of a call's [K, N] weights (f32 or bf16 bits) into `packed` (ceil(N / 32) *
// ceil(K / 2) * 64 values), in plain C++: what the load's packing program computes (the probe child
// checks the packed form with it).
void PackMatmulWeights(const MatmulBf16Args& args, uint16_t* packed);

}  // namespace pjrt_score
