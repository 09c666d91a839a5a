// The bf16 attention kernel's tile product with AVX512_BF16 (vdpbf16ps: two
// bf16 products a row into f32, e.g. AMD Zen 4/5, Intel Cooper Lake and
// later): PortableBf16Tiles's operands and layout, 16 accumulators of 16
// f32, a pair of a row broadcast into each dot. Per-function target
// attributes: one binary for any x86-64 (kernel_isa.h picks it).
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/bf16_tiles_portable.h"
#include "kernels/isa_target.h"

#define PJRT_SCORE_ROWS16(X) \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)

namespace pjrt_score {
namespace attention {

struct Avx512Bf16Tiles {
  static constexpr const char* kName = "avx512bf16";
  static void Begin() {}
  static void End() {}
  // p = bf16(s), nearest even, 16 at a time (vcvtneps2bf16; it reads f32 denormals as 0, the
  // portable rounding keeps them: a difference below 1e-38).
  PJRT_SCORE_AVX512BF16 static void Round(const float* s, int64_t n, uint16_t* p) {
    int64_t c = 0;
    for (; c + 16 <= n; c += 16) {
      const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(s + c));
      std::memcpy(p + c, &h, sizeof(h));
    }
    for (; c < n; ++c) p[c] = F32ToBf16(s[c]);
  }
  PJRT_SCORE_AVX512BF16 static void Dot(const uint16_t* a, int64_t lda, const uint16_t* b,
                                        int64_t depth, float* c, int64_t ldc, bool add) {
#define PJRT_SCORE_DECL(m) __m512 c##m = add ? _mm512_loadu_ps(c + (m) * ldc) : _mm512_setzero_ps();
#define PJRT_SCORE_DOT(m)                                                 \
  {                                                                       \
    int32_t pair;                                                         \
    std::memcpy(&pair, a + (m) * lda + 2 * p, sizeof(pair));              \
    c##m = _mm512_dpbf16_ps(c##m, (__m512bh)_mm512_set1_epi32(pair), bv); \
  }
#define PJRT_SCORE_STORE(m) _mm512_storeu_ps(c + (m) * ldc, c##m);
    PJRT_SCORE_ROWS16(PJRT_SCORE_DECL)
    for (int64_t p = 0; p < depth / 2; ++p) {
      const __m512bh bv = (__m512bh)_mm512_loadu_si512(b + p * 32);
      PJRT_SCORE_ROWS16(PJRT_SCORE_DOT)
    }
    PJRT_SCORE_ROWS16(PJRT_SCORE_STORE)
#undef PJRT_SCORE_DECL
#undef PJRT_SCORE_DOT
#undef PJRT_SCORE_STORE
  }
};

}  // namespace attention
}  // namespace pjrt_score

#undef PJRT_SCORE_ROWS16
#endif
