// Registers the addon's custom-call handlers (the attention kernels, prefix_attention_ffi.h; the
// projections' kernel, matmul_bf16_ffi.h) with a PJRT plugin through its FFI extension.
#pragma once

#include <string>

#include "runtime/plugin.h"

namespace pjrt_score {

// Registers every handler with `plugin` once per process (registration is process-wide and
// permanent in the plugin). True when all are registered; false when the plugin has no FFI
// extension with register_handler, or a registration failed (`why` says which).
bool RegisterKernels(const Plugin& plugin, std::string* why);

}  // namespace pjrt_score
