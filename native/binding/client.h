// Client: a PJRT client on one plugin. Makes executables (compile,
// deserialize) and device buffers (upload), and disposes them before itself.
#pragma once

#include <napi.h>

#include <memory>
#include <unordered_set>

#include "binding/client_child.h"
#include "runtime/core.h"

namespace pjrt_score {

class Client : public Napi::ObjectWrap<Client> {
 public:
  static Napi::Function Init(Napi::Env env);
  explicit Client(const Napi::CallbackInfo& info);
  ~Client() override;

  // Null once disposed.
  const std::shared_ptr<ClientCore>& core() const { return core_; }
  void AddChild(ClientChild* child) { children_.insert(child); }
  void RemoveChild(ClientChild* child) { children_.erase(child); }

  // New JS wrappers for native state made by a worker, owned by this client.
  Napi::Object WrapExecutable(Napi::Env env, std::shared_ptr<ExecutableCore> core);
  Napi::Object WrapBuffer(Napi::Env env, std::shared_ptr<BufferCore> core);

 private:
  static Napi::Value Create(const Napi::CallbackInfo& info);
  Napi::Value PlatformName(const Napi::CallbackInfo& info);
  Napi::Value PlatformVersion(const Napi::CallbackInfo& info);
  Napi::Value ApiVersion(const Napi::CallbackInfo& info);
  Napi::Value PrefixAttentionKernel(const Napi::CallbackInfo& info);
  Napi::Value Devices(const Napi::CallbackInfo& info);
  Napi::Value Compile(const Napi::CallbackInfo& info);
  Napi::Value Upload(const Napi::CallbackInfo& info);
  Napi::Value Deserialize(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value IsDisposed(const Napi::CallbackInfo& info);

  const ClientCore& LiveCore(Napi::Env env) const;
  void DisposeNow();

  std::shared_ptr<ClientCore> core_;
  std::unordered_set<ClientChild*> children_;
};

}  // namespace pjrt_score
