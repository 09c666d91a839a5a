// What one call of the fused attention kernels (prefix_attention.h: items over a prefix, and causal
// attention as that kernel with items of one token) computes on: its operands' shapes and pointers,
// checked before (prefix_attention_ffi.cc). attention_units.h reads it without the kernels' entry
// points.
#pragma once

#include <cstdint>

namespace pjrt_score {

struct PrefixAttentionArgs {
  int64_t n = 0, l = 0, hq = 0, hkv = 0, d = 0, p = 0;
  const float* item_q = nullptr;          // [N, L, Hq, D], already scaled by the score scale
  const float* item_k = nullptr;          // [N, L, Hkv, D]
  const float* item_v = nullptr;          // [N, L, Hkv, D]
  const int32_t* item_lengths = nullptr;  // [N]; clamped to [0, L]
  const float* prefix_k = nullptr;        // [P, Hkv, D]
  const float* prefix_v = nullptr;        // [P, Hkv, D]
  int32_t prefix_length = 0;              // clamped to [0, P]
  // [N] or null: item i sees prefix keys [0, min(max(item_prefix_lengths[i], 0), prefix_length)).
  // Causal attention is this kernel with items of one token over their own sequence as the prefix,
  // item i seeing the i keys before it (RunCausalAttention).
  const int32_t* item_prefix_lengths = nullptr;
  float* out = nullptr;  // [N, L, Hq, D]
};

}  // namespace pjrt_score
