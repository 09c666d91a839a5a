// The bf16 attention kernel's tile product on AMX (Intel Xeon 4th generation
// and later): PortableBf16Tiles's operands and layout as tiles: C (tile 0,
// 16 rows x 16 f32), A (tile 1, 16 rows x 32 bf16), B (tile 2, 16 pairs x 16
// columns x 2 bf16), one _tile_dpbf16ps per 32 of depth, C kept in its tile.
// The tile configuration is per thread: Begin loads it (a work unit runs on
// one thread), End releases the tiles. The process needs the kernel's
// permission for tile state first (kernel_isa.cc asks for it; without it the
// CPU does not count as having AMX). Hand-written intrinsics, not oneDNN's
// brgemm: a library the prebuild cannot link would have to be fetched at run
// time (docs/performance.md, 'Matrix units').
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "bf16_tiles_avx512.h"

#define PJRT_SCORE_AMX __attribute__((target("amx-tile,amx-bf16")))

namespace pjrt_score {
namespace attention {

struct AmxBf16Tiles {
  static constexpr const char* kName = "amx";

  // The palette-1 configuration: 64 bytes, tile t's rows and bytes per row.
  struct alignas(64) Config {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
  };

  PJRT_SCORE_AMX static void Begin() {
    Config cfg;
    for (int t = 0; t < 3; ++t) {
      cfg.colsb[t] = 64;
      cfg.rows[t] = 16;
    }
    _tile_loadconfig(&cfg);
  }
  PJRT_SCORE_AMX static void End() { _tile_release(); }
  // Every AMX CPU has AVX512_BF16: its rounding.
  static void Round(const float* s, int64_t n, uint16_t* p) { Avx512Bf16Tiles::Round(s, n, p); }

  PJRT_SCORE_AMX static void Dot(const uint16_t* a, int64_t lda, const uint16_t* b, int64_t depth,
                                 float* c, int64_t ldc, bool add) {
    if (add) {
      _tile_loadd(0, c, ldc * sizeof(float));
    } else {
      _tile_zero(0);
    }
    for (int64_t k = 0; k < depth; k += 32) {
      _tile_loadd(1, a + k, lda * sizeof(uint16_t));
      _tile_loadd(2, b + k * 16, 64);
      _tile_dpbf16ps(0, 1, 2);
    }
    _tile_stored(0, c, ldc * sizeof(float));
  }
};

}  // namespace attention
}  // namespace pjrt_score

#undef PJRT_SCORE_AMX
#endif
