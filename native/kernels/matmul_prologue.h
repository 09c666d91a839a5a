// What the matmul kernels (matmul_bf16.cc, matmul_f32.cc) compute from a call's input before its
// product, one row at a time in f32 (matmul_args.h, MatmulArgs::Prologue): the layer's
// RMSNorm, or SwiGLU or GeGLU of a gate | up row. A portable loop, and an AVX-512 one (per-function
// target attribute: kernel_isa.h decides at run time whether it may run).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/matmul_args.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/attention_exp2.h"
#include "kernels/attention_ops_avx512.h"
#include "kernels/isa_target.h"
#endif

namespace pjrt_score {
namespace matmul {

// gelu_tanh(g) = 0.5 g (1 + tanh(u)), u = sqrt(2 / pi) (g + 0.044715 g^3), is g logistic(2u), which
// both prologues compute: 1 + tanh(u) loses its digits where it cancels (u below -3 or so), the
// logistic does not.
constexpr float kGeluCubic = 0.044715f;
constexpr float kGeluTwiceScale = 1.5957691216057308f;  // 2 sqrt(2 / pi)

// 2u = 2 sqrt(2 / pi) g (1 + 0.044715 g^2), one element.
inline float GeluTwiceU(float g) { return kGeluTwiceScale * g * (1.f + kGeluCubic * g * g); }

// Row r of the call's input after its prologue, in f32 (`row`: k floats).
inline void PrologueRowPortable(const MatmulArgs& a, int64_t r, float* row) {
  const int64_t k = a.k;
  switch (a.prologue) {
    case MatmulArgs::Prologue::kNone:
      std::memcpy(row, a.x + r * k, k * sizeof(float));
      return;
    case MatmulArgs::Prologue::kRmsNorm: {
      const float* x = a.x + r * k;
      float sum = 0.f;
      for (int64_t c = 0; c < k; ++c) sum += x[c] * x[c];
      const float factor = 1.f / std::sqrt(sum / static_cast<float>(k) + a.eps);
      for (int64_t c = 0; c < k; ++c) row[c] = x[c] * factor * a.norm[c];
      return;
    }
    case MatmulArgs::Prologue::kSwiGlu: {
      const float* gate = a.x + r * 2 * k;
      const float* up = gate + k;
      for (int64_t c = 0; c < k; ++c) row[c] = gate[c] / (1.f + std::exp(-gate[c])) * up[c];
      return;
    }
    case MatmulArgs::Prologue::kGeGlu: {
      const float* gate = a.x + r * 2 * k;
      const float* up = gate + k;
      for (int64_t c = 0; c < k; ++c)
        row[c] = gate[c] / (1.f + std::exp(-GeluTwiceU(gate[c]))) * up[c];
      return;
    }
  }
}

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// logistic(g) = 1 / (1 + 2^(-g log2 e)) with the attention kernels' 2^t (attention_exp2.h), t
// kept below the exponent's top (at either end the result is 0 or 1 in f32 anyway).
PJRT_SCORE_AVX512F inline __m512 Logistic(__m512 g) {
  const __m512 t =
      _mm512_min_ps(_mm512_mul_ps(g, _mm512_set1_ps(-attention::kLog2e)), _mm512_set1_ps(126.f));
  const __m512 one = _mm512_set1_ps(1.f);
  return _mm512_div_ps(one, _mm512_add_ps(one, attention::Avx512Ops::Exp2(t)));
}

// Row r after a prologue (kRmsNorm, kSwiGlu or kGeGlu) into `row` (k floats), 16 at a time.
PJRT_SCORE_AVX512F inline void PrologueRowAvx512(const MatmulArgs& a, int64_t r, float* row) {
  const int64_t k = a.k;
  int64_t c = 0;
  if (a.prologue == MatmulArgs::Prologue::kRmsNorm) {
    const float* x = a.x + r * k;
    __m512 acc = _mm512_setzero_ps();
    for (; c + 16 <= k; c += 16) {
      const __m512 v = _mm512_loadu_ps(x + c);
      acc = _mm512_fmadd_ps(v, v, acc);
    }
    float sum = _mm512_reduce_add_ps(acc);
    for (; c < k; ++c) sum += x[c] * x[c];
    const float factor = 1.f / std::sqrt(sum / static_cast<float>(k) + a.eps);
    const __m512 fv = _mm512_set1_ps(factor);
    for (c = 0; c + 16 <= k; c += 16) {
      const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + c), fv);
      _mm512_storeu_ps(row + c, _mm512_mul_ps(v, _mm512_loadu_ps(a.norm + c)));
    }
    for (; c < k; ++c) row[c] = x[c] * factor * a.norm[c];
    return;
  }
  const float* gate = a.x + r * 2 * k;
  const float* up = gate + k;
  if (a.prologue == MatmulArgs::Prologue::kGeGlu) {
    const __m512 cubic = _mm512_set1_ps(kGeluCubic), twice_scale = _mm512_set1_ps(kGeluTwiceScale);
    for (; c + 16 <= k; c += 16) {
      const __m512 g = _mm512_loadu_ps(gate + c);
      const __m512 inner = _mm512_fmadd_ps(_mm512_mul_ps(cubic, g), g, _mm512_set1_ps(1.f));
      const __m512 two_u = _mm512_mul_ps(_mm512_mul_ps(twice_scale, g), inner);
      const __m512 v = _mm512_mul_ps(_mm512_mul_ps(g, Logistic(two_u)), _mm512_loadu_ps(up + c));
      _mm512_storeu_ps(row + c, v);
    }
    for (; c < k; ++c) row[c] = gate[c] / (1.f + std::exp(-GeluTwiceU(gate[c]))) * up[c];
    return;
  }
  for (; c + 16 <= k; c += 16) {
    const __m512 g = _mm512_loadu_ps(gate + c);
    const __m512 v = _mm512_mul_ps(_mm512_mul_ps(g, Logistic(g)), _mm512_loadu_ps(up + c));
    _mm512_storeu_ps(row + c, v);
  }
  for (; c < k; ++c) row[c] = gate[c] / (1.f + std::exp(-gate[c])) * up[c];
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

}  // namespace matmul
}  // namespace pjrt_score
