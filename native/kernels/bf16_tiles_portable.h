// The bf16 attention kernel's tile product in portable C++ (any CPU): the
// reference for the matrix-unit tiles (bf16_tiles_avx512.h, bf16_tiles_amx.h),
// same operands, same layout, f32 accumulation; tests run it everywhere.
#pragma once

#include <cstdint>
#include <cstring>

namespace pjrt_score {
namespace attention {

// A bf16 value (its bits) as f32, exactly.
inline float Bf16ToF32(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// f32 to bf16, rounded to nearest even (finite inputs; NaN stays NaN).
inline uint16_t F32ToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

// The tile product every bf16 path implements:
//   c[m][n] (+)= sum over k < depth of a[m * lda + k] * b(k, n), m, n < 16,
// a row-major bf16, b in pairs ([depth / 2][16 columns][2]: what AMX's B tile and vdpbf16ps read),
// depth a multiple of 32, c f32 with rows ldc floats apart; add: onto c's values. And the
// rounding of a row of probabilities to bf16 (Round).
struct PortableBf16Tiles {
  static constexpr const char* kName = "portable";
  static void Begin() {}
  static void End() {}
  // p[c] = bf16(s[c]), nearest even, n floats.
  static void Round(const float* s, int64_t n, uint16_t* p) {
    for (int64_t c = 0; c < n; ++c) p[c] = F32ToBf16(s[c]);
  }
  static void Dot(const uint16_t* a, int64_t lda, const uint16_t* b, int64_t depth, float* c,
                  int64_t ldc, bool add) {
    for (int64_t m = 0; m < 16; ++m) {
      float acc[16];
      for (int64_t n = 0; n < 16; ++n) acc[n] = add ? c[m * ldc + n] : 0.f;
      for (int64_t p = 0; p < depth / 2; ++p) {
        const float a0 = Bf16ToF32(a[m * lda + 2 * p]), a1 = Bf16ToF32(a[m * lda + 2 * p + 1]);
        const uint16_t* bp = b + p * 32;
        for (int64_t n = 0; n < 16; ++n)
          acc[n] += a0 * Bf16ToF32(bp[2 * n]) + a1 * Bf16ToF32(bp[2 * n + 1]);
      }
      for (int64_t n = 0; n < 16; ++n) c[m * ldc + n] = acc[n];
    }
  }
};

}  // namespace attention
}  // namespace pjrt_score
