// Per-environment data: the constructors, so natives can make instances (the
// error classes included), and
// the bytes of live device buffers this addon has reported to V8.
#pragma once

#include <napi.h>

#include <cstdint>

namespace pjrt_score {

struct AddonData {
  Napi::FunctionReference client_constructor;
  Napi::FunctionReference executable_constructor;
  Napi::FunctionReference buffer_constructor;
  // The facade's error classes (setErrorClasses, called once when the binding
  // loads), so that the raw binding rejects with instances of the exported
  // PjrtError and DisposedError; plain Errors of the same name and code until then.
  Napi::FunctionReference pjrt_error_class;
  Napi::FunctionReference disposed_error_class;
  // Sum of the sizes passed to AdjustExternalMemory and not yet taken back;
  // V8 does not report its own total (process.memoryUsage().external omits it).
  int64_t external_bytes = 0;
  // While > 0 (deferExternalMemory calls not yet ended), changes are summed in
  // deferred_bytes and reported to V8 once at the end: V8 starts a full
  // collection for every ~64 MB of external growth, 7 of them while the
  // default model's 540 MB of weights loaded.
  int deferring = 0;
  int64_t deferred_bytes = 0;

  // Tells V8 (now, or at the end of the deferral) that device buffers hold `delta` more bytes.
  void ReportExternalMemory(Napi::Env env, int64_t delta) {
    external_bytes += delta;
    if (deferring > 0) {
      deferred_bytes += delta;
    } else {
      Napi::MemoryManagement::AdjustExternalMemory(env, delta);
    }
  }
};

}  // namespace pjrt_score
