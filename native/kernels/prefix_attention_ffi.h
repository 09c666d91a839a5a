// The attention kernel (prefix_attention.h) as XLA FFI custom-call handlers
// (registered with a plugin by register_kernels.h):
// - `pjrt_score_prefix_attention`, items over a prefix. Operands: item q
//   (scaled), k, v, item lengths, prefix k, v, prefix length
//   (lib/hlo/attention/prefix-kernel.ts emits the call); one result [N, L, Hq, D];
// - `pjrt_score_causal_attention`, the prefill's causal attention. Operands:
//   q (scaled) [T, Hq, D], k, v [T, Hkv, D], valid length s32 []
//   (lib/hlo/attention/causal-kernel.ts); one result [T, Hq, D];
// - `pjrt_score_prefix_attention_bf16` and `pjrt_score_causal_attention_bf16`:
//   the same operands and results, computed in bf16 on the CPU's matrix units
//   (RunPrefixAttentionBf16), for passes whose dots run in bf16;
// - `pjrt_score_query_items_attention` (and `_bf16`), a packed pass's attention in one call: the
//   query's causal attention, then its items over it. Operands: q (scaled) [P, Hq, D], k, v
//   [P, Hkv, D], prefix length s32 [], item q (scaled) [N, L, Hq, D], k, v [N, L, Hkv, D], item
//   lengths [N] (lib/hlo/attention/query-items-kernel.ts); one result [P + N L, Hq, D]: the two
//   calls' results one after the other, so no XLA fusion joins them;
// - `pjrt_score_query_items_attention_rope` (and `_bf16`), the same on the pass's q | k | v
//   projection itself: RoPE, the score scale and the split into the kernels' operands in the call
//   (attention_rope.h). Operands: qkv [P + N L, (Hq + 2 Hkv) D], the query's cos and sin
//   [P, D / 2], the items' [N, L, D / 2], the score scale f32 [], the prefix length s32 [], the
//   item lengths [N]; one result [P + N L, Hq, D].
#pragma once

#include "kernels/xla_ffi.h"

namespace pjrt_score {

constexpr const char* kPrefixAttentionTarget = "pjrt_score_prefix_attention";
constexpr const char* kCausalAttentionTarget = "pjrt_score_causal_attention";
constexpr const char* kPrefixAttentionBf16Target = "pjrt_score_prefix_attention_bf16";
constexpr const char* kCausalAttentionBf16Target = "pjrt_score_causal_attention_bf16";
constexpr const char* kQueryItemsAttentionTarget = "pjrt_score_query_items_attention";
constexpr const char* kQueryItemsAttentionBf16Target = "pjrt_score_query_items_attention_bf16";
constexpr const char* kQueryItemsAttentionRopeTarget = "pjrt_score_query_items_attention_rope";
constexpr const char* kQueryItemsAttentionRopeBf16Target =
    "pjrt_score_query_items_attention_rope_bf16";

xla_ffi::Error* PrefixAttentionHandler(xla_ffi::CallFrame* frame);
xla_ffi::Error* CausalAttentionHandler(xla_ffi::CallFrame* frame);
xla_ffi::Error* PrefixAttentionBf16Handler(xla_ffi::CallFrame* frame);
xla_ffi::Error* CausalAttentionBf16Handler(xla_ffi::CallFrame* frame);
xla_ffi::Error* QueryItemsAttentionHandler(xla_ffi::CallFrame* frame);
xla_ffi::Error* QueryItemsAttentionBf16Handler(xla_ffi::CallFrame* frame);
xla_ffi::Error* QueryItemsAttentionRopeHandler(xla_ffi::CallFrame* frame);
xla_ffi::Error* QueryItemsAttentionRopeBf16Handler(xla_ffi::CallFrame* frame);

}  // namespace pjrt_score
