#include "binding/errors.h"

#include "binding/addon_data.h"

namespace pjrt_score {

namespace {
// An instance of the facade's class when it was registered, else a plain Error.
Napi::Error NewError(Napi::Env env, Napi::FunctionReference AddonData::*cls,
                     std::initializer_list<napi_value> args, const std::string& message) {
  AddonData* data = env.GetInstanceData<AddonData>();
  if (data != nullptr && !(data->*cls).IsEmpty()) {
    return Napi::Error(env, (data->*cls).New(args));
  }
  return Napi::Error::New(env, message);
}
}  // namespace

Napi::Error MakePjrtError(Napi::Env env, const Status& status) {
  Napi::String message = Napi::String::New(env, status.message);
  Napi::String code = Napi::String::New(env, ErrorCodeName(status.code));
  Napi::Error error = NewError(env, &AddonData::pjrt_error_class, {message, code}, status.message);
  error.Set("name", Napi::String::New(env, "PjrtError"));
  error.Set("code", code);
  error.Set("pjrtCode", Napi::Number::New(env, static_cast<int>(status.code)));
  return error;
}

void ThrowTypeError(Napi::Env env, const std::string& message) {
  throw Napi::TypeError::New(env, message);
}

void ThrowDisposed(Napi::Env env, const char* what) {
  Napi::Error error =
      NewError(env, &AddonData::disposed_error_class, {Napi::String::New(env, what)},
               std::string(what) + " has been disposed");
  error.Set("code", Napi::String::New(env, "ERR_DISPOSED"));
  throw error;
}

Napi::Value SetErrorClasses(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsFunction() || !info[1].IsFunction())
    ThrowTypeError(env, "setErrorClasses(PjrtError: Function, DisposedError: Function)");
  AddonData* data = env.GetInstanceData<AddonData>();
  data->pjrt_error_class = Napi::Persistent(info[0].As<Napi::Function>());
  data->disposed_error_class = Napi::Persistent(info[1].As<Napi::Function>());
  return env.Undefined();
}

}  // namespace pjrt_score
