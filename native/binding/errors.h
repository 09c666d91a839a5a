// JS errors for PJRT failures: instances of the facade's PjrtError (name
// 'PjrtError', .code 'INVALID_ARGUMENT'..., the plugin's own message), and of
// its DisposedError for use of a disposed object.
#pragma once

#include <napi.h>

#include "runtime/status.h"

namespace pjrt_score {

Napi::Error MakePjrtError(Napi::Env env, const Status& status);

// Throws a JS TypeError for a misuse of the binding (wrong argument types).
[[noreturn]] void ThrowTypeError(Napi::Env env, const std::string& message);

// Throws an Error with code 'ERR_DISPOSED' for use of a disposed object.
[[noreturn]] void ThrowDisposed(Napi::Env env, const char* what);

// setErrorClasses(PjrtError, DisposedError): the classes the errors above are made from.
Napi::Value SetErrorClasses(const Napi::CallbackInfo& info);

}  // namespace pjrt_score
