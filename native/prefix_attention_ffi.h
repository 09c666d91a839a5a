// The prefix-attention kernel as an XLA FFI custom-call target
// (`pjrt_score_prefix_attention`), registered with a PJRT plugin through the
// plugin's FFI extension. Operands: item q (scaled), k, v, item lengths,
// prefix k, v, prefix length (lib/hlo/attention-ffi.ts emits the call); one
// result [N, L, Hq, D].
#pragma once

#include "plugin.h"

namespace pjrt_score {

constexpr const char* kPrefixAttentionTarget = "pjrt_score_prefix_attention";

// Registers the handler with `plugin` once per process (registration is
// process-wide and permanent in the plugin). True when the handler is
// registered; false when the plugin has no FFI extension with
// register_handler, or registration failed (`why` says which).
bool RegisterPrefixAttention(const Plugin& plugin, std::string* why);

}  // namespace pjrt_score
