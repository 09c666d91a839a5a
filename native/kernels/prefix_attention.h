// The fused items-over-prefix attention kernel (f32, one query, ungrouped):
// each item token attends to the valid prefix keys and causally to its own
// item's keys with one joint softmax; padding tokens get 0. The same numbers
// as lib/hlo/attention/prefix-joint.ts itemsOverPrefixAttention within f32 rounding.
//
// Why a kernel: XLA CPU makes separate passes over the [Hkv, N, L, G, P]
// prefix scores (GEMM, max, exp, sum, GEMM), each larger than the cache.
// Here prefix keys go in blocks that stay in L2 with an online softmax, and
// the rows of several items share each block (docs/performance.md).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/attention_args.h"

namespace pjrt_score {

// Which inner loops an f32 call runs: "avx512" or "avx2" where the CPU has
// them (kernel_isa.h: CPUID, XCR0) and D is a multiple of 16, else
// "portable"; PJRT_SCORE_KERNEL_ISA caps the choice (read on every call, so
// tests can run every path in one process).
const char* PrefixAttentionPath(int64_t d);

// Shapes must already be checked (prefix_attention_ffi.cc). Returns false
// with `error` set when scratch memory cannot be had; never throws.
bool RunPrefixAttention(const PrefixAttentionArgs& args, std::string* error);

// The same attention in bf16 on the CPU's matrix units (prefix_attention_bf16.cc): q, K, V
// rounded to bf16, scores and softmax statistics in f32, probabilities rounded to bf16 before
// the PV product (f32 accumulation). The path: "amx", "avx512bf16", "portable" (the same
// blocking and rounding anywhere: where the allowed ISA is portable), or on AVX2 and AVX-512 CPUs
// without bf16 dot units "f32 avx2" / "f32 avx512" (the f32 kernel: faster there than portable
// tiles); capped by PJRT_SCORE_KERNEL_ISA like the f32 path; any D. A matrix-unit path ("amx",
// "avx512bf16") is first checked once per process against the portable tiles
// (bf16_tiles_check.h); one that fails is not taken, and *note (when given) says which and why
// ("amx failed its self-check ...; using avx512bf16"); empty when nothing fell back.
const char* PrefixAttentionBf16Path(int64_t d, std::string* note = nullptr);
bool RunPrefixAttentionBf16(const PrefixAttentionArgs& args, std::string* error);

// Runs the self-check of bf16 tile path `path` ("portable", "avx512bf16", "amx", or
// "test-swapped-pairs": a deliberately wrong product) against the portable tiles now (not the
// process's once-only verdict): true when it agrees, what it found in *detail. Returns false with
// *detail empty when this CPU cannot run `path` (an unknown name included).
bool CheckBf16TilePath(const std::string& path, std::string* detail);

// Causal self-attention of one sequence, as RunPrefixAttention with items of
// one token (see item_prefix_lengths): q [T, Hq, D] (already scaled), k, v
// [T, Hkv, D]; row i < valid_length attends to keys 0..i; rows at or past
// valid_length (clamped to [0, T]) get 0. Shapes must already be checked.
struct CausalAttentionArgs {
  int64_t t = 0, hq = 0, hkv = 0, d = 0;
  const float* q = nullptr;  // [T, Hq, D]
  const float* k = nullptr;  // [T, Hkv, D]
  const float* v = nullptr;  // [T, Hkv, D]
  int32_t valid_length = 0;
  float* out = nullptr;  // [T, Hq, D]
};
bool RunCausalAttention(const CausalAttentionArgs& args, std::string* error);
// As RunCausalAttention through RunPrefixAttentionBf16.
bool RunCausalAttentionBf16(const CausalAttentionArgs& args, std::string* error);

}  // namespace pjrt_score
