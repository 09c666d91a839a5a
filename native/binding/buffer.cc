#include "binding/buffer.h"

#include "binding/addon_data.h"
#include "binding/client.h"
#include "binding/errors.h"
#include "binding/promise_worker.h"
#include "runtime/element_type.h"

namespace pjrt_score {

namespace {
using Holder = std::shared_ptr<BufferCore>;
}  // namespace

Napi::Function DeviceBuffer::Init(Napi::Env env) {
  return DefineClass(env, "DeviceBuffer",
                     {
                         InstanceAccessor<&DeviceBuffer::Dims>("dims"),
                         InstanceAccessor<&DeviceBuffer::Dtype>("dtype"),
                         InstanceAccessor<&DeviceBuffer::ByteLength>("byteLength"),
                         InstanceAccessor<&DeviceBuffer::IsDisposed>("disposed"),
                         InstanceMethod<&DeviceBuffer::ToHost>("toHost"),
                         InstanceMethod<&DeviceBuffer::Dispose>("dispose"),
                     });
}

DeviceBuffer::DeviceBuffer(const Napi::CallbackInfo& info) : Napi::ObjectWrap<DeviceBuffer>(info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsExternal() || !info[1].IsObject()) {
    ThrowTypeError(env, "DeviceBuffer cannot be constructed directly: use client.upload()");
  }
  core_ = *info[0].As<Napi::External<Holder>>().Data();
  parent_ = Client::Unwrap(info[1].As<Napi::Object>());
  parent_ref_ = Napi::Persistent(info[1].As<Napi::Object>());
  parent_->AddChild(this);
  // Device memory on a CPU plugin is host memory: let V8's GC know about it.
  accounted_bytes_ = static_cast<int64_t>(core_->byte_size);
  env.GetInstanceData<AddonData>()->ReportExternalMemory(env, accounted_bytes_);
}

// Finalizers run on the JS thread: without NAPI_EXPERIMENTAL, Node defers
// them out of the GC to the event loop, so V8 may be called from here.
DeviceBuffer::~DeviceBuffer() { Release(); }

DeviceBuffer* DeviceBuffer::TryUnwrap(Napi::Object object) {
  Napi::Env env = object.Env();
  AddonData* data = env.GetInstanceData<AddonData>();
  if (!object.InstanceOf(data->buffer_constructor.Value())) return nullptr;
  return DeviceBuffer::Unwrap(object);
}

void DeviceBuffer::Release() {
  if (accounted_bytes_ != 0) {
    Napi::Env env = Env();
    env.GetInstanceData<AddonData>()->ReportExternalMemory(env, -accounted_bytes_);
  }
  accounted_bytes_ = 0;
  core_.reset();
  if (parent_ != nullptr) parent_->RemoveChild(this);
  parent_ = nullptr;
  parent_ref_.Reset();
}

void DeviceBuffer::DisposeFromParent() {
  parent_ = nullptr;  // the parent is clearing its own list
  Release();          // on the JS thread: Client::dispose() or the client's finalizer
}

const BufferCore& DeviceBuffer::LiveCore(Napi::Env env) const {
  if (!core_) ThrowDisposed(env, "DeviceBuffer");
  return *core_;
}

Napi::Value DeviceBuffer::Dims(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const BufferCore& core = LiveCore(env);
  Napi::Array dims = Napi::Array::New(env, core.dims.size());
  for (size_t i = 0; i < core.dims.size(); ++i) {
    dims.Set(static_cast<uint32_t>(i), static_cast<double>(core.dims[i]));
  }
  return dims;
}

Napi::Value DeviceBuffer::Dtype(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), ElementTypeName(LiveCore(info.Env()).type));
}

Napi::Value DeviceBuffer::ByteLength(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(LiveCore(info.Env()).byte_size));
}

Napi::Value DeviceBuffer::IsDisposed(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), !core_);
}

Napi::Value DeviceBuffer::Dispose(const Napi::CallbackInfo& info) {
  Release();
  return info.Env().Undefined();
}

Napi::Value DeviceBuffer::ToHost(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const BufferCore& live = LiveCore(env);
  if (ElementTypeSize(live.type) == 0) {
    ThrowTypeError(env,
                   "cannot copy a buffer of type " + ElementTypeName(live.type) + " to the host");
  }
  auto core = core_;
  // The destination is allocated here and filled by the worker; JS sees it
  // only after the copy completes.
  Napi::ArrayBuffer destination = Napi::ArrayBuffer::New(env, core->byte_size);
  void* data = destination.Data();
  size_t size = core->byte_size;
  return PromiseWorker::Start(
      env, "pjrt-score:toHost",
      [core, data, size]() {
        const Plugin& plugin = *core->client->plugin;
        if (size == 0) return Status::Ok();
        auto args = MakeArgs<pjrt::BufferToHostBufferArgs>();
        args.src = core->buffer.get();
        args.dst = data;
        args.dst_size = size;
        Status status = plugin.Call(pjrt::kBufferToHostBuffer, &args);
        if (!status.ok()) {
          plugin.DestroyEvent(args.event);
          return status;
        }
        return plugin.AwaitAndDestroy(args.event);
      },
      [](Napi::Env, const std::vector<Napi::Object>& kept) -> Napi::Value { return kept[1]; },
      {Value(), destination});
}

}  // namespace pjrt_score
