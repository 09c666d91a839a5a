// The fused attention kernels' inner loops with AVX2 + FMA (D a multiple of
// 16), compiled with per-function target attributes so that one binary runs
// on any x86-64 and takes this path only where the CPU has it (kernel_isa.h).
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/attention_blocking.h"
#include "kernels/attention_exp2.h"

namespace pjrt_score {
namespace attention {

struct Avx2Ops {
  // c[r][0:16] (+)= sum over k of a[r * a_row + k] * b[k * b_row + 0:16], for rows r = 0..5: the
  // one register tile both products use (6 rows x 16 columns: 12 accumulators, 2 loads of b and
  // one broadcast at a time, 15 of the 16 YMM registers). Per k it issues 12 FMAs against 8 loads;
  // a 4-row tile (8 FMAs, 6 loads) left the two FMA pipes waiting on loads and on the FMA latency
  // (8 chains for 2 pipes x 4 cycles). `add`: onto c's values.
  __attribute__((target("avx2,fma"))) static inline void Tile6x16(const float* a, int64_t a_row,
                                                                  const float* b, int64_t b_row,
                                                                  int64_t depth, float* c,
                                                                  int64_t c_row, bool add) {
    static_assert(kRowTile == 6, "Tile6x16 is written out for 6 rows");
    // Named accumulators, not an array: GCC keeps an array of __m256 on the stack.
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    if (add) {
      c00 = _mm256_loadu_ps(c), c01 = _mm256_loadu_ps(c + 8);
      c10 = _mm256_loadu_ps(c + c_row), c11 = _mm256_loadu_ps(c + c_row + 8);
      c20 = _mm256_loadu_ps(c + 2 * c_row), c21 = _mm256_loadu_ps(c + 2 * c_row + 8);
      c30 = _mm256_loadu_ps(c + 3 * c_row), c31 = _mm256_loadu_ps(c + 3 * c_row + 8);
      c40 = _mm256_loadu_ps(c + 4 * c_row), c41 = _mm256_loadu_ps(c + 4 * c_row + 8);
      c50 = _mm256_loadu_ps(c + 5 * c_row), c51 = _mm256_loadu_ps(c + 5 * c_row + 8);
    }
    for (int64_t k = 0; k < depth; ++k) {
      const __m256 b0 = _mm256_loadu_ps(b + k * b_row);
      const __m256 b1 = _mm256_loadu_ps(b + k * b_row + 8);
      __m256 x = _mm256_broadcast_ss(a + k);
      c00 = _mm256_fmadd_ps(x, b0, c00);
      c01 = _mm256_fmadd_ps(x, b1, c01);
      x = _mm256_broadcast_ss(a + a_row + k);
      c10 = _mm256_fmadd_ps(x, b0, c10);
      c11 = _mm256_fmadd_ps(x, b1, c11);
      x = _mm256_broadcast_ss(a + 2 * a_row + k);
      c20 = _mm256_fmadd_ps(x, b0, c20);
      c21 = _mm256_fmadd_ps(x, b1, c21);
      x = _mm256_broadcast_ss(a + 3 * a_row + k);
      c30 = _mm256_fmadd_ps(x, b0, c30);
      c31 = _mm256_fmadd_ps(x, b1, c31);
      x = _mm256_broadcast_ss(a + 4 * a_row + k);
      c40 = _mm256_fmadd_ps(x, b0, c40);
      c41 = _mm256_fmadd_ps(x, b1, c41);
      x = _mm256_broadcast_ss(a + 5 * a_row + k);
      c50 = _mm256_fmadd_ps(x, b0, c50);
      c51 = _mm256_fmadd_ps(x, b1, c51);
    }
    _mm256_storeu_ps(c, c00);
    _mm256_storeu_ps(c + 8, c01);
    _mm256_storeu_ps(c + c_row, c10);
    _mm256_storeu_ps(c + c_row + 8, c11);
    _mm256_storeu_ps(c + 2 * c_row, c20);
    _mm256_storeu_ps(c + 2 * c_row + 8, c21);
    _mm256_storeu_ps(c + 3 * c_row, c30);
    _mm256_storeu_ps(c + 3 * c_row + 8, c31);
    _mm256_storeu_ps(c + 4 * c_row, c40);
    _mm256_storeu_ps(c + 4 * c_row + 8, c41);
    _mm256_storeu_ps(c + 5 * c_row, c50);
    _mm256_storeu_ps(c + 5 * c_row + 8, c51);
  }

  // Scores of the step's query rows against `cols` keys: K^T strips of 16 keys, [D][16] each.
  __attribute__((target("avx2,fma"))) static void QkStep(const float* q, int64_t d, const float* kt,
                                                         int64_t cols, float* s) {
    for (int64_t c = 0; c < cols; c += kColTile)
      for (int64_t t = 0; t < kStepRows; t += kRowTile)
        Tile6x16(q + t * d, d, kt + c * d, kColTile, d, s + t * kKeyBlock + c, kKeyBlock, false);
  }

  // D a multiple of 16.
  __attribute__((target("avx2,fma"))) static float Dot(const float* a, const float* b, int64_t d) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    for (int64_t x = 0; x < d; x += 16) {
      s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + x), _mm256_loadu_ps(b + x), s0);
      s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + x + 8), _mm256_loadu_ps(b + x + 8), s1);
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, _mm256_add_ps(s0, s1));
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
           ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  }

  // y += w * x and y = c * x, D floats (a multiple of 16).
  __attribute__((target("avx2,fma"))) static void Axpy(float w, const float* x, int64_t d,
                                                       float* y) {
    const __m256 wv = _mm256_set1_ps(w);
    for (int64_t j = 0; j < d; j += 16) {
      _mm256_storeu_ps(y + j, _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + j), _mm256_loadu_ps(y + j)));
      _mm256_storeu_ps(y + j + 8,
                       _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + j + 8), _mm256_loadu_ps(y + j + 8)));
    }
  }
  __attribute__((target("avx2,fma"))) static void Scale(float c, const float* x, int64_t d,
                                                        float* y) {
    const __m256 cv = _mm256_set1_ps(c);
    for (int64_t j = 0; j < d; j += 16) {
      _mm256_storeu_ps(y + j, _mm256_mul_ps(cv, _mm256_loadu_ps(x + j)));
      _mm256_storeu_ps(y + j + 8, _mm256_mul_ps(cv, _mm256_loadu_ps(x + j + 8)));
    }
  }

  __attribute__((target("avx2,fma"))) static float RowMax(const float* s, int64_t n) {
    __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    int64_t c = 0;
    for (; c + 8 <= n; c += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(s + c));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, m);
    float out = lanes[0];
    for (int i = 1; i < 8; ++i) out = std::max(out, lanes[i]);
    for (; c < n; ++c) out = std::max(out, s[c]);
    return out;
  }

  // exp(s - shift) for s <= shift, as 2^t (attention_exp2.h). Below t = -127 the result is
  // exactly 0: t is clamped there, and n = -127 makes 2^n's exponent bits 0. The shared rounding
  // of shift * log2(e) scales a row's weights alike, so it cancels in the softmax.
  __attribute__((target("avx2,fma"))) static __m256 Exp2(__m256 t) {
    t = _mm256_max_ps(t, _mm256_set1_ps(-127.f));
    const __m256 n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 f = _mm256_sub_ps(t, n);
    __m256 p = _mm256_set1_ps(kExp2Poly[0]);
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(kExp2Poly[1]));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(kExp2Poly[2]));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(kExp2Poly[3]));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(kExp2Poly[4]));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(kExp2Poly[5]));
    const __m256i bits =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  }

  __attribute__((target("avx2,fma"))) static float ExpSum(float* s, int64_t n, float shift) {
    const __m256 log2e = _mm256_set1_ps(kLog2e), sh = _mm256_set1_ps(shift * kLog2e);
    __m256 sum0 = _mm256_setzero_ps(), sum1 = sum0;
    int64_t c = 0;
    for (; c + 16 <= n; c += 16) {
      const __m256 e0 = Exp2(_mm256_fmsub_ps(_mm256_loadu_ps(s + c), log2e, sh));
      const __m256 e1 = Exp2(_mm256_fmsub_ps(_mm256_loadu_ps(s + c + 8), log2e, sh));
      _mm256_storeu_ps(s + c, e0);
      _mm256_storeu_ps(s + c + 8, e1);
      sum0 = _mm256_add_ps(sum0, e0);
      sum1 = _mm256_add_ps(sum1, e1);
    }
    for (; c + 8 <= n; c += 8) {
      const __m256 e = Exp2(_mm256_fmsub_ps(_mm256_loadu_ps(s + c), log2e, sh));
      _mm256_storeu_ps(s + c, e);
      sum0 = _mm256_add_ps(sum0, e);
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, _mm256_add_ps(sum0, sum1));
    float out = 0.f;
    for (int i = 0; i < 8; ++i) out += lanes[i];
    for (; c < n; ++c) {
      s[c] = std::exp(s[c] - shift);
      out += s[c];
    }
    return out;
  }

  __attribute__((target("avx2,fma"))) static void PvStep(const float* w, const float* v,
                                                         int64_t v_row, int64_t keys, int64_t d,
                                                         float* acc) {
    for (int64_t j = 0; j < d; j += 16)
      for (int64_t t = 0; t < kStepRows; t += kRowTile)
        Tile6x16(w + t * kKeyBlock, kKeyBlock, v + j, v_row, keys, acc + t * d + j, d, true);
  }
};

}  // namespace attention
}  // namespace pjrt_score
#endif
