// The fused attention kernels' inner loops with AVX-512 (F, BW, VL; D a
// multiple of 16): the AVX2 path's blocking with 16-float registers, a
// register tile of the step's 12 rows x 32 columns (24 of the 32 ZMM
// registers), the query broadcast from memory into the FMA. Per-function
// target attributes: one binary for any x86-64 (kernel_isa.h).
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/attention_blocking.h"
#include "kernels/attention_exp2.h"

// Clang 18 and later split 512-bit vectors off AVX-512 (feature evex512); GCC before 14 knows no
// such feature.
#if defined(__clang__) && __clang_major__ >= 18
#define PJRT_SCORE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,evex512")))
#else
#define PJRT_SCORE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma")))
#endif
// The step's 12 rows, written out: named accumulators, not an array (GCC keeps an array of
// vectors on the stack).
#define PJRT_SCORE_ROWS12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

// GCC 12's avx512fintrin.h starts some intrinsics from _mm512_undefined_*(), which its own
// -Wuninitialized then reports (GCC bug 105593): quiet there only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace pjrt_score {
namespace attention {

struct Avx512Ops {
  static_assert(kStepRows == 12, "the AVX-512 tiles are written out for 12 rows");

  // c[r][0:32] (+)= sum over k of a[r * a_row + k] * (b0[k * b_row + 0:16], b1[k * b_row + 0:16])
  // for the step's 12 rows: 24 accumulators, 2 loads and 12 broadcast FMAs pairs per k. b1 lies in
  // b0's array (the loop reads it at b0's pointer plus their distance).
  PJRT_SCORE_AVX512 static inline void Tile12x32(const float* a, int64_t a_row, const float* b0,
                                                 const float* b1, int64_t b_row, int64_t depth,
                                                 float* c, int64_t c_row, bool add) {
#define PJRT_SCORE_DECL(r) __m512 c##r##a = _mm512_setzero_ps(), c##r##b = c##r##a;
#define PJRT_SCORE_LOAD(r)                  \
  c##r##a = _mm512_loadu_ps(c + (r)*c_row); \
  c##r##b = _mm512_loadu_ps(c + (r)*c_row + 16);
// Row r's value at k: one of three row pointers (rows 0, 4 and 8) plus 0, 1, 2 or 3 rows (the
// strides s1 and s3 as index registers, 2 rows as s1 scaled by 8), so the loop keeps 8 general
// registers. With a pointer per row GCC ran out of them and moved some through vector registers
// every k, moves that took slots on an FMA port: 2-5% of a projection's time (docs/performance.md).
#define PJRT_SCORE_FMA(r)                                                                 \
  {                                                                                       \
    const float* row = (r) < 4 ? a0 : (r) < 8 ? a4 : a8;                                  \
    const int64_t at = (r) % 4 == 0 ? 0 : (r) % 4 == 1 ? s1 : (r) % 4 == 2 ? 2 * s1 : s3; \
    const __m512 x = _mm512_set1_ps(row[at]);                                             \
    c##r##a = _mm512_fmadd_ps(x, v0, c##r##a);                                            \
    c##r##b = _mm512_fmadd_ps(x, v1, c##r##b);                                            \
  }
#define PJRT_SCORE_STORE(r)                 \
  _mm512_storeu_ps(c + (r)*c_row, c##r##a); \
  _mm512_storeu_ps(c + (r)*c_row + 16, c##r##b);
    PJRT_SCORE_ROWS12(PJRT_SCORE_DECL)
    if (add) {
      PJRT_SCORE_ROWS12(PJRT_SCORE_LOAD)
    }
    const int64_t s1 = a_row, s3 = 3 * a_row, b1_at = b1 - b0;
    const float* a0 = a;
    const float* a4 = a + 4 * a_row;
    const float* a8 = a + 8 * a_row;
    const float* b = b0;
    // Four k per iteration: the pointers' increments and the loop's test once per 96 FMAs.
#pragma GCC unroll 4
    for (int64_t k = 0; k < depth; ++k, ++a0, ++a4, ++a8, b += b_row) {
      const __m512 v0 = _mm512_loadu_ps(b);
      const __m512 v1 = _mm512_loadu_ps(b + b1_at);
      PJRT_SCORE_ROWS12(PJRT_SCORE_FMA)
    }
    PJRT_SCORE_ROWS12(PJRT_SCORE_STORE)
#undef PJRT_SCORE_DECL
#undef PJRT_SCORE_LOAD
#undef PJRT_SCORE_FMA
#undef PJRT_SCORE_STORE
  }

  // As Tile12x32 with 16 columns (b0 only).
  PJRT_SCORE_AVX512 static inline void Tile12x16(const float* a, int64_t a_row, const float* b0,
                                                 int64_t b_row, int64_t depth, float* c,
                                                 int64_t c_row, bool add) {
#define PJRT_SCORE_DECL(r) __m512 c##r = _mm512_setzero_ps();
#define PJRT_SCORE_LOAD(r) c##r = _mm512_loadu_ps(c + (r)*c_row);
#define PJRT_SCORE_FMA(r) c##r = _mm512_fmadd_ps(_mm512_set1_ps(a[(r)*a_row + k]), v0, c##r);
#define PJRT_SCORE_STORE(r) _mm512_storeu_ps(c + (r)*c_row, c##r);
    PJRT_SCORE_ROWS12(PJRT_SCORE_DECL)
    if (add) {
      PJRT_SCORE_ROWS12(PJRT_SCORE_LOAD)
    }
    for (int64_t k = 0; k < depth; ++k) {
      const __m512 v0 = _mm512_loadu_ps(b0 + k * b_row);
      PJRT_SCORE_ROWS12(PJRT_SCORE_FMA)
    }
    PJRT_SCORE_ROWS12(PJRT_SCORE_STORE)
#undef PJRT_SCORE_DECL
#undef PJRT_SCORE_LOAD
#undef PJRT_SCORE_FMA
#undef PJRT_SCORE_STORE
  }

  // Scores of the step's query rows against `cols` keys (a multiple of 16): K^T strips of 16
  // keys, [D][16] each, two strips per tile.
  PJRT_SCORE_AVX512 static void QkStep(const float* q, int64_t d, const float* kt, int64_t cols,
                                       float* s) {
    int64_t c = 0;
    for (; c + 2 * kColTile <= cols; c += 2 * kColTile)
      Tile12x32(q, d, kt + c * d, kt + (c + kColTile) * d, kColTile, d, s + c, kKeyBlock, false);
    if (c < cols) Tile12x16(q, d, kt + c * d, kColTile, d, s + c, kKeyBlock, false);
  }

  PJRT_SCORE_AVX512 static void PvStep(const float* w, const float* v, int64_t v_row, int64_t keys,
                                       int64_t d, float* acc) {
    int64_t j = 0;
    for (; j + 32 <= d; j += 32)
      Tile12x32(w, kKeyBlock, v + j, v + j + 16, v_row, keys, acc + j, d, true);
    if (j < d) Tile12x16(w, kKeyBlock, v + j, v_row, keys, acc + j, d, true);
  }

  PJRT_SCORE_AVX512 static float Dot(const float* a, const float* b, int64_t d) {
    __m512 s = _mm512_setzero_ps();
    for (int64_t x = 0; x < d; x += 16)
      s = _mm512_fmadd_ps(_mm512_loadu_ps(a + x), _mm512_loadu_ps(b + x), s);
    return _mm512_reduce_add_ps(s);
  }

  PJRT_SCORE_AVX512 static void Axpy(float w, const float* x, int64_t d, float* y) {
    const __m512 wv = _mm512_set1_ps(w);
    for (int64_t j = 0; j < d; j += 16)
      _mm512_storeu_ps(y + j, _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + j), _mm512_loadu_ps(y + j)));
  }

  PJRT_SCORE_AVX512 static void Scale(float c, const float* x, int64_t d, float* y) {
    const __m512 cv = _mm512_set1_ps(c);
    for (int64_t j = 0; j < d; j += 16)
      _mm512_storeu_ps(y + j, _mm512_mul_ps(cv, _mm512_loadu_ps(x + j)));
  }

  PJRT_SCORE_AVX512 static float RowMax(const float* s, int64_t n) {
    __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    int64_t c = 0;
    for (; c + 16 <= n; c += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(s + c));
    float out = _mm512_reduce_max_ps(m);
    for (; c < n; ++c) out = std::max(out, s[c]);
    return out;
  }

  // 2^t as the AVX2 path's Exp2 (the same polynomial; exactly 0 below t = -127).
  PJRT_SCORE_AVX512 static __m512 Exp2(__m512 t) {
    t = _mm512_max_ps(t, _mm512_set1_ps(-127.f));
    const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(t, n);
    __m512 p = _mm512_set1_ps(kExp2Poly[0]);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExp2Poly[1]));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExp2Poly[2]));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExp2Poly[3]));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExp2Poly[4]));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExp2Poly[5]));
    const __m512i bits =
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(bits));
  }

  PJRT_SCORE_AVX512 static float ExpSum(float* s, int64_t n, float shift) {
    const __m512 log2e = _mm512_set1_ps(kLog2e), sh = _mm512_set1_ps(shift * kLog2e);
    __m512 sum = _mm512_setzero_ps();
    int64_t c = 0;
    for (; c + 16 <= n; c += 16) {
      const __m512 e = Exp2(_mm512_fmsub_ps(_mm512_loadu_ps(s + c), log2e, sh));
      _mm512_storeu_ps(s + c, e);
      sum = _mm512_add_ps(sum, e);
    }
    float out = _mm512_reduce_add_ps(sum);
    for (; c < n; ++c) {
      s[c] = std::exp(s[c] - shift);
      out += s[c];
    }
    return out;
  }
};

}  // namespace attention
}  // namespace pjrt_score

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#undef PJRT_SCORE_ROWS12
#undef PJRT_SCORE_AVX512
#endif
