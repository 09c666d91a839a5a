// DeviceBuffer: an array on the client's device (uploaded or produced by
// an execution). Copies back to the host asynchronously.
#pragma once

#include <napi.h>

#include <memory>

#include "binding/client_child.h"
#include "runtime/core.h"

namespace pjrt_score {

class Client;

class DeviceBuffer : public Napi::ObjectWrap<DeviceBuffer>, public ClientChild {
 public:
  static Napi::Function Init(Napi::Env env);
  // Called by Client only: (External<shared_ptr<BufferCore>>, client object).
  explicit DeviceBuffer(const Napi::CallbackInfo& info);
  ~DeviceBuffer() override;

  void DisposeFromParent() override;
  // Null once disposed.
  std::shared_ptr<BufferCore> core() const { return core_; }
  // The wrapped DeviceBuffer, or null if `object` is not one.
  static DeviceBuffer* TryUnwrap(Napi::Object object);

 private:
  Napi::Value ToHost(const Napi::CallbackInfo& info);
  Napi::Value Dims(const Napi::CallbackInfo& info);
  Napi::Value Dtype(const Napi::CallbackInfo& info);
  Napi::Value ByteLength(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value IsDisposed(const Napi::CallbackInfo& info);

  const BufferCore& LiveCore(Napi::Env env) const;
  // Every path that lets go of the buffer (dispose, the parent's dispose, the
  // finalizer) comes here; the external-memory count is taken back once.
  void Release();

  std::shared_ptr<BufferCore> core_;
  Client* parent_ = nullptr;
  Napi::ObjectReference parent_ref_;
  int64_t accounted_bytes_ = 0;
};

}  // namespace pjrt_score
