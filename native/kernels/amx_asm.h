// The AMX instructions the bf16 tiles use (bf16_tiles_amx.h), as inline
// assembly that declares every memory effect, instead of the compilers'
// intrinsics: GCC 12's _tile_loadconfig tells the compiler it reads 8 of the
// configuration's 64 bytes (so the stores of the tile shapes were removed as
// dead and ldtilecfg loaded stack garbage: #GP, SIGSEGV at load on every AMX
// Xeon), and its _tile_loadd reads no memory at all (so stores to a tile's
// source may legally sink below the load). Here:
// - the configuration is a constant in read-only data, built at compile time:
//   no store exists to be removed, and the whole object is the operand;
// - every tile load and store clobbers memory, so the compiler finishes the
//   stores before a load and reloads after a store;
// - the tile registers are fixed: tmm0 C (16 x 16 f32), tmm1 A (16 x 32
//   bf16), tmm2 B (16 pairs x 16 columns x 2 bf16).
// test/amx-disassembly.test.js reads the configuration ldtilecfg loads out of
// both builds (g++ and the zig prebuild) and checks its 64 bytes.
#pragma once

#if defined(__x86_64__)
#include <cstdint>

namespace pjrt_score {
namespace amx {

// The palette-1 tile configuration (Intel SDM, LDTILECFG): 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];  // bytes per row of tile t
  uint8_t rows[16];    // rows of tile t
};
static_assert(sizeof(TileConfig) == 64, "LDTILECFG reads 64 bytes");

// Tiles 0, 1 and 2: 16 rows of 64 bytes each; the rest unused (zero).
constexpr TileConfig ThreeFullTiles() {
  TileConfig c{};
  c.palette = 1;
  for (int t = 0; t < 3; ++t) {
    c.colsb[t] = 64;
    c.rows[t] = 16;
  }
  return c;
}

inline constexpr TileConfig kThreeFullTiles = ThreeFullTiles();

inline void LoadConfig(const TileConfig& config) {
  __asm__ volatile("ldtilecfg %0" : : "m"(config) : "memory");
}
inline void Release() { __asm__ volatile("tilerelease" : : : "memory"); }

inline void ZeroC() { __asm__ volatile("tilezero %%tmm0" : : :); }
inline void LoadC(const float* base, int64_t stride_bytes) {
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm0" : : "r"(base), "r"(stride_bytes) : "memory");
}
inline void LoadA(const uint16_t* base, int64_t stride_bytes) {
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm1" : : "r"(base), "r"(stride_bytes) : "memory");
}
inline void LoadB(const uint16_t* base, int64_t stride_bytes) {
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm2" : : "r"(base), "r"(stride_bytes) : "memory");
}
// C += A x B over 32 of depth (bf16 pairs, f32 accumulation).
inline void DotBf16CAB() { __asm__ volatile("tdpbf16ps %%tmm2, %%tmm1, %%tmm0" : : :); }
inline void StoreC(float* base, int64_t stride_bytes) {
  __asm__ volatile("tilestored %%tmm0, (%0,%1,1)" : : "r"(base), "r"(stride_bytes) : "memory");
}

}  // namespace amx
}  // namespace pjrt_score
#endif
