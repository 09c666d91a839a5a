// The attention kernel (prefix_attention.h) as two XLA FFI custom-call
// targets, registered with a PJRT plugin through the plugin's FFI extension:
// - `pjrt_score_prefix_attention`, items over a prefix. Operands: item q
//   (scaled), k, v, item lengths, prefix k, v, prefix length
//   (lib/hlo/attention/prefix-kernel.ts emits the call); one result [N, L, Hq, D];
// - `pjrt_score_causal_attention`, the prefill's causal attention. Operands:
//   q (scaled) [T, Hq, D], k, v [T, Hkv, D], valid length s32 []
//   (lib/hlo/attention/causal-kernel.ts); one result [T, Hq, D];
// - `pjrt_score_prefix_attention_bf16` and `pjrt_score_causal_attention_bf16`:
//   the same operands and results, computed in bf16 on the CPU's matrix units
//   (RunPrefixAttentionBf16), for passes whose dots run in bf16.
#pragma once

#include "runtime/plugin.h"

namespace pjrt_score {

constexpr const char* kPrefixAttentionTarget = "pjrt_score_prefix_attention";
constexpr const char* kCausalAttentionTarget = "pjrt_score_causal_attention";
constexpr const char* kPrefixAttentionBf16Target = "pjrt_score_prefix_attention_bf16";
constexpr const char* kCausalAttentionBf16Target = "pjrt_score_causal_attention_bf16";

// Registers the four handlers with `plugin` once per process (registration is
// process-wide and permanent in the plugin). True when all are registered;
// false when the plugin has no FFI extension with register_handler, or
// registration failed (`why` says which).
bool RegisterAttentionKernels(const Plugin& plugin, std::string* why);

}  // namespace pjrt_score
