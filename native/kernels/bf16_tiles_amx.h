// The bf16 attention kernel's tile product on AMX (Intel Xeon 4th generation
// and later): PortableBf16Tiles's operands and layout as tiles: C (tile 0,
// 16 rows x 16 f32), A (tile 1, 16 rows x 32 bf16), B (tile 2, 16 pairs x 16
// columns x 2 bf16), one tdpbf16ps per 32 of depth, C kept in its tile. The
// instructions are amx_asm.h's: inline assembly with every memory effect
// declared (the compilers' intrinsics under-declare them). The tile
// configuration is per thread: Begin loads it (a work unit runs on one
// thread), End releases the tiles. The process needs the kernel's permission
// for tile state first (kernel_isa.cc asks for it; without it the
// CPU does not count as having AMX); Unusable checks, before any tile
// instruction runs, what would make one fault (bf16_tiles_gate.h).
// Hand-written, not oneDNN's brgemm: a library the prebuild cannot
// link would have to be fetched at run time (docs/performance.md, 'Long
// items, and the kernel's paths by CPU class').
#pragma once

#if defined(__x86_64__)
#include <cpuid.h>

#include <cstdint>

#include "kernels/amx_asm.h"
#include "kernels/bf16_tiles_avx512.h"
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace pjrt_score {
namespace attention {

struct AmxBf16Tiles {
  static constexpr const char* kName = "amx";

  // Null when this process can run Begin and Dot; else why not (each a fault there: a
  // configuration the CPU lacks is #GP, tile data without the kernel's permission #NM): CPUID leaf
  // 0x1D (palette 1 with 3 tiles of 16 rows x 64 bytes) and the permission granted (arch_prctl
  // ARCH_GET_XCOMP_PERM, Linux).
  static const char* Unusable() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(0x1d, 0, &a, &b, &c, &d) || a < 1)
      return "cannot run: CPUID leaf 0x1D has no tile palette 1";
    __get_cpuid_count(0x1d, 1, &a, &b, &c, &d);
    if ((b & 0xffffu) < 64 || (b >> 16) < 3 || (c & 0xffffu) < 16)
      return "cannot run: tile palette 1 has fewer than 3 tiles of 16 rows x 64 bytes";
#if defined(__linux__)
    constexpr int kArchGetXcompPerm = 0x1022;
    constexpr uint64_t kXtiledata = uint64_t{1} << 18;
    uint64_t granted = 0;
    if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &granted) != 0 || !(granted & kXtiledata))
      return "cannot run: the kernel did not grant tile data state (ARCH_GET_XCOMP_PERM)";
    return nullptr;
#else
    return "cannot run: no way asked here for tile state";
#endif
  }

  static void Begin() { amx::LoadConfig(amx::kThreeFullTiles); }
  static void End() { amx::Release(); }
  // Every AMX CPU has AVX512_BF16: its rounding.
  static void Round(const float* s, int64_t n, uint16_t* p) { Avx512Bf16Tiles::Round(s, n, p); }

  static void Dot(const uint16_t* a, int64_t lda, const uint16_t* b, int64_t depth, float* c,
                  int64_t ldc, bool add) {
    if (add) {
      amx::LoadC(c, ldc * sizeof(float));
    } else {
      amx::ZeroC();
    }
    for (int64_t k = 0; k < depth; k += 32) {
      amx::LoadA(a + k, lda * sizeof(uint16_t));
      amx::LoadB(b + k * 16, 64);
      amx::DotBf16CAB();
    }
    amx::StoreC(c, ldc * sizeof(float));
  }
};

}  // namespace attention
}  // namespace pjrt_score

#endif
