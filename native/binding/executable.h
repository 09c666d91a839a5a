// Executable: a compiled (loaded) PJRT program on the client's device.
#pragma once

#include <napi.h>

#include <memory>

#include "binding/client_child.h"
#include "runtime/core.h"

namespace pjrt_score {

class Client;

class Executable : public Napi::ObjectWrap<Executable>, public ClientChild {
 public:
  static Napi::Function Init(Napi::Env env);
  // Called by Client only: (External<shared_ptr<ExecutableCore>>, client object).
  explicit Executable(const Napi::CallbackInfo& info);
  ~Executable() override;

  void DisposeFromParent() override;

  // Output count, element types and dims, read from the plugin (worker thread).
  static Status ReadMetadata(ExecutableCore* core);

 private:
  Napi::Value Execute(const Napi::CallbackInfo& info);
  Napi::Value Serialize(const Napi::CallbackInfo& info);
  Napi::Value NumOutputs(const Napi::CallbackInfo& info);
  Napi::Value OutputTypes(const Napi::CallbackInfo& info);
  Napi::Value OutputDims(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value IsDisposed(const Napi::CallbackInfo& info);

  const ExecutableCore& LiveCore(Napi::Env env) const;
  void Release();

  std::shared_ptr<ExecutableCore> core_;
  Client* parent_ = nullptr;
  Napi::ObjectReference parent_ref_;
};

}  // namespace pjrt_score
