// Runs work on a fresh thread with a large stack, then joins it. The PJRT
// plugin's parsers (MLIR text, serialized executables) recurse once per
// nesting level on the calling thread; a libuv worker's stack (8 MiB or less)
// overflows at a few thousand levels, which kills the process.
#pragma once

#include <cstddef>
#include <functional>

#include "runtime/status.h"

namespace pjrt_score {

// Room for the deepest program the nesting check accepts (kMaxProgramNesting),
// with a wide margin: pages are only committed when touched.
constexpr size_t kLargeStackBytes = size_t{64} << 20;

// Calls `work` on a new thread whose stack is `stack_bytes`, waits for it and
// returns its status. No Node-API may be used inside `work`. Exceptions are
// turned into an INTERNAL status.
Status RunOnLargeStack(size_t stack_bytes, const std::function<Status()>& work);

}  // namespace pjrt_score
