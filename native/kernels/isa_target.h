// The function attributes that compile one function for AVX512_BF16 (vdpbf16ps, vcvtneps2bf16) or
// for AVX-512 (F, BW, VL) inside a binary built for any x86-64: the bf16 tiles
// (bf16_tiles_avx512.h) and the bf16 matmul kernel (matmul_bf16.cc) take the first, the matmul
// kernels' prologues (matmul_prologue.h) the second; kernel_isa.h decides at run time whether they
// may run.
#pragma once

#if defined(__x86_64__)
// Clang 18 and later split 512-bit vectors off AVX-512 (feature evex512); GCC before 14 knows no
// such feature.
#if defined(__clang__) && __clang_major__ >= 18
#define PJRT_SCORE_AVX512BF16 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,evex512")))
#define PJRT_SCORE_AVX512F __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,evex512")))
#else
#define PJRT_SCORE_AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define PJRT_SCORE_AVX512F __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma")))
#endif
#endif
