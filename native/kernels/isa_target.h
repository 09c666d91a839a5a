// The function attribute that compiles one function for AVX512_BF16 (vdpbf16ps, vcvtneps2bf16)
// inside a binary built for any x86-64: the bf16 tiles (bf16_tiles_avx512.h) and the matmul
// kernel (matmul_bf16.cc) take it; kernel_isa.h decides at run time whether it may run.
#pragma once

#if defined(__x86_64__)
// Clang 18 and later split 512-bit vectors off AVX-512 (feature evex512); GCC before 14 knows no
// such feature.
#if defined(__clang__) && __clang_major__ >= 18
#define PJRT_SCORE_AVX512BF16 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,evex512")))
#else
#define PJRT_SCORE_AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#endif
#endif
