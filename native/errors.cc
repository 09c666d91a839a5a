#include "errors.h"

namespace pjrt_score {

Napi::Error MakePjrtError(Napi::Env env, const Status& status) {
  Napi::Error error = Napi::Error::New(env, status.message);
  error.Set("name", Napi::String::New(env, "PjrtError"));
  error.Set("code", Napi::String::New(env, ErrorCodeName(status.code)));
  error.Set("pjrtCode", Napi::Number::New(env, static_cast<int>(status.code)));
  return error;
}

void ThrowTypeError(Napi::Env env, const std::string& message) {
  throw Napi::TypeError::New(env, message);
}

void ThrowDisposed(Napi::Env env, const char* what) {
  Napi::Error error = Napi::Error::New(env, std::string(what) + " has been disposed");
  error.Set("code", Napi::String::New(env, "ERR_DISPOSED"));
  throw error;
}

}  // namespace pjrt_score
