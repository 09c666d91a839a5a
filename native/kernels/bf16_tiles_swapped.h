// A deliberately wrong bf16 tile product, for tests of the tile self-check
// (bf16_tiles_check.h): PortableBf16Tiles with the two bf16 of each pair of b
// swapped (row 2p of a times b(2p + 1, n)), the kind of layout slip a tile
// implementation can make while its output stays finite and plausible.
// Selected only by PJRT_SCORE_TILES_CHECK_WRONG (bf16_tiles_gate.h) or the
// addon's checkBf16Tiles hook; it never computes a kernel's output.
#pragma once

#include <cstdint>

#include "kernels/bf16_tiles_portable.h"

namespace pjrt_score {
namespace attention {

struct SwappedPairsBf16Tiles {
  static constexpr const char* kName = "test-swapped-pairs";
  static void Begin() {}
  static void End() {}
  static void Round(const float* s, int64_t n, uint16_t* p) { PortableBf16Tiles::Round(s, n, p); }
  static void Dot(const uint16_t* a, int64_t lda, const uint16_t* b, int64_t depth, float* c,
                  int64_t ldc, bool add) {
    for (int64_t m = 0; m < 16; ++m) {
      for (int64_t n = 0; n < 16; ++n) {
        float acc = add ? c[m * ldc + n] : 0.f;
        for (int64_t p = 0; p < depth / 2; ++p)
          acc += Bf16ToF32(a[m * lda + 2 * p]) * Bf16ToF32(b[p * 32 + 2 * n + 1]) +
                 Bf16ToF32(a[m * lda + 2 * p + 1]) * Bf16ToF32(b[p * 32 + 2 * n]);
        c[m * ldc + n] = acc;
      }
    }
  }
};

}  // namespace attention
}  // namespace pjrt_score
