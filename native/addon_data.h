// Per-environment data: the constructors, so natives can make instances, and
// the bytes of live device buffers this addon has reported to V8.
#pragma once

#include <napi.h>

#include <cstdint>

namespace pjrt_score {

struct AddonData {
  Napi::FunctionReference client_constructor;
  Napi::FunctionReference executable_constructor;
  Napi::FunctionReference buffer_constructor;
  // Sum of the sizes passed to AdjustExternalMemory and not yet taken back;
  // V8 does not report its own total (process.memoryUsage().external omits it).
  int64_t external_bytes = 0;
};

}  // namespace pjrt_score
