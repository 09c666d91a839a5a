#include "binding/executable.h"

#include "binding/buffer.h"
#include "binding/client.h"
#include "binding/errors.h"
#include "binding/promise_worker.h"
#include "runtime/element_type.h"

namespace pjrt_score {

namespace {

using Holder = std::shared_ptr<ExecutableCore>;

// Everything Execute needs on the worker thread, and what it produces.
struct ExecuteJob {
  std::shared_ptr<ExecutableCore> executable;
  std::vector<std::shared_ptr<BufferCore>> arguments;
  std::vector<std::shared_ptr<BufferCore>> outputs;
};

Status ReadBufferShape(const Plugin& plugin, BufferCore* buffer) {
  auto type_args = MakeArgs<pjrt::BufferElementTypeArgs>();
  type_args.buffer = buffer->buffer.get();
  Status status = plugin.Call(pjrt::kBufferElementType, &type_args);
  if (!status.ok()) return status;
  buffer->type = type_args.type;
  auto dims_args = MakeArgs<pjrt::BufferDimensionsArgs>();
  dims_args.buffer = buffer->buffer.get();
  status = plugin.Call(pjrt::kBufferDimensions, &dims_args);
  if (!status.ok()) return status;
  buffer->dims.assign(dims_args.dims, dims_args.dims + dims_args.num_dims);
  size_t elements = 1;
  for (int64_t d : buffer->dims) elements *= static_cast<size_t>(d);
  buffer->byte_size = elements * ElementTypeSize(buffer->type);
  return Status::Ok();
}

Status RunExecute(ExecuteJob* job) {
  const ClientCore& client = *job->executable->client;
  const Plugin& plugin = *client.plugin;
  std::vector<pjrt::Buffer*> arguments;
  for (const auto& argument : job->arguments) arguments.push_back(argument->buffer.get());
  std::vector<pjrt::Buffer*> outputs(job->executable->num_outputs, nullptr);
  pjrt::Buffer* const* argument_list = arguments.data();
  pjrt::Buffer** output_list = outputs.data();
  pjrt::Event* done = nullptr;

  auto options = MakeArgs<pjrt::ExecuteOptions>();
  auto args = MakeArgs<pjrt::LoadedExecutableExecuteArgs>();
  args.executable = job->executable->executable.get();
  args.options = &options;
  args.argument_lists = &argument_list;
  args.num_devices = 1;
  args.num_args = arguments.size();
  args.output_lists = &output_list;
  args.device_complete_events = &done;
  Status status = plugin.Call(pjrt::kLoadedExecutableExecute, &args);
  // Own every output the plugin handed back, on every path.
  for (pjrt::Buffer* output : outputs) {
    auto core = std::make_shared<BufferCore>();
    core->client = job->executable->client;
    core->buffer = OwnedBuffer(client.plugin, output);
    job->outputs.push_back(std::move(core));
  }
  if (!status.ok()) {
    plugin.DestroyEvent(done);
    return status;
  }
  status = plugin.AwaitAndDestroy(done);
  if (!status.ok()) return status;
  for (auto& output : job->outputs) {
    if (!output->buffer) {
      return Status::Make(pjrt::ErrorCode::kInternal, "the plugin returned a null output buffer");
    }
    status = ReadBufferShape(plugin, output.get());
    if (!status.ok()) return status;
  }
  return Status::Ok();
}

}  // namespace

Napi::Function Executable::Init(Napi::Env env) {
  return DefineClass(env, "Executable",
                     {
                         InstanceAccessor<&Executable::NumOutputs>("numOutputs"),
                         InstanceAccessor<&Executable::OutputTypes>("outputTypes"),
                         InstanceAccessor<&Executable::OutputDims>("outputDims"),
                         InstanceAccessor<&Executable::IsDisposed>("disposed"),
                         InstanceMethod<&Executable::Execute>("execute"),
                         InstanceMethod<&Executable::Serialize>("serialize"),
                         InstanceMethod<&Executable::Dispose>("dispose"),
                     });
}

Executable::Executable(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Executable>(info) {
  if (info.Length() < 2 || !info[0].IsExternal() || !info[1].IsObject()) {
    ThrowTypeError(info.Env(), "Executable cannot be constructed directly: use client.compile()");
  }
  core_ = *info[0].As<Napi::External<Holder>>().Data();
  parent_ = Client::Unwrap(info[1].As<Napi::Object>());
  parent_ref_ = Napi::Persistent(info[1].As<Napi::Object>());
  parent_->AddChild(this);
}

Executable::~Executable() { Release(); }

void Executable::Release() {
  core_.reset();
  if (parent_ != nullptr) parent_->RemoveChild(this);
  parent_ = nullptr;
  parent_ref_.Reset();
}

void Executable::DisposeFromParent() {
  parent_ = nullptr;  // the parent is clearing its own list
  core_.reset();
  parent_ref_.Reset();
}

const ExecutableCore& Executable::LiveCore(Napi::Env env) const {
  if (!core_) ThrowDisposed(env, "Executable");
  return *core_;
}

Status Executable::ReadMetadata(ExecutableCore* core) {
  const Plugin& plugin = *core->client->plugin;
  auto get_args = MakeArgs<pjrt::LoadedExecutableGetExecutableArgs>();
  get_args.loaded_executable = core->executable.get();
  Status status = plugin.Call(pjrt::kLoadedExecutableGetExecutable, &get_args);
  if (!status.ok()) return status;
  OwnedExecutable executable(core->client->plugin, get_args.executable);

  auto count_args = MakeArgs<pjrt::ExecutableNumOutputsArgs>();
  count_args.executable = executable.get();
  status = plugin.Call(pjrt::kExecutableNumOutputs, &count_args);
  if (!status.ok()) return status;
  core->num_outputs = count_args.num_outputs;

  if (plugin.HasSlot(pjrt::kExecutableOutputElementTypes)) {
    auto types_args = MakeArgs<pjrt::ExecutableOutputElementTypesArgs>();
    types_args.executable = executable.get();
    if (plugin.Call(pjrt::kExecutableOutputElementTypes, &types_args).ok()) {
      core->output_types.assign(types_args.output_types,
                                types_args.output_types + types_args.num_output_types);
    }
  }
  if (plugin.HasSlot(pjrt::kExecutableOutputDimensions)) {
    auto dims_args = MakeArgs<pjrt::ExecutableOutputDimensionsArgs>();
    dims_args.executable = executable.get();
    if (plugin.Call(pjrt::kExecutableOutputDimensions, &dims_args).ok()) {
      const int64_t* cursor = dims_args.dims;
      for (size_t i = 0; i < dims_args.num_outputs; ++i) {
        core->output_dims.emplace_back(cursor, cursor + dims_args.dim_sizes[i]);
        cursor += dims_args.dim_sizes[i];
      }
    }
  }
  return Status::Ok();
}

Napi::Value Executable::NumOutputs(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(LiveCore(info.Env()).num_outputs));
}

Napi::Value Executable::OutputTypes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const ExecutableCore& core = LiveCore(env);
  Napi::Array types = Napi::Array::New(env, core.output_types.size());
  for (size_t i = 0; i < core.output_types.size(); ++i) {
    types.Set(static_cast<uint32_t>(i), ElementTypeName(core.output_types[i]));
  }
  return types;
}

Napi::Value Executable::OutputDims(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const ExecutableCore& core = LiveCore(env);
  Napi::Array all = Napi::Array::New(env, core.output_dims.size());
  for (size_t i = 0; i < core.output_dims.size(); ++i) {
    Napi::Array dims = Napi::Array::New(env, core.output_dims[i].size());
    for (size_t j = 0; j < core.output_dims[i].size(); ++j) {
      dims.Set(static_cast<uint32_t>(j), static_cast<double>(core.output_dims[i][j]));
    }
    all.Set(static_cast<uint32_t>(i), dims);
  }
  return all;
}

Napi::Value Executable::IsDisposed(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), !core_);
}

Napi::Value Executable::Dispose(const Napi::CallbackInfo& info) {
  Release();
  return info.Env().Undefined();
}

Napi::Value Executable::Execute(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  LiveCore(env);
  if (info.Length() < 1 || !info[0].IsArray())
    ThrowTypeError(env, "execute(buffers: DeviceBuffer[])");
  Napi::Array list = info[0].As<Napi::Array>();
  auto job = std::make_shared<ExecuteJob>();
  job->executable = core_;
  std::vector<Napi::Object> keep_alive = {Value(), parent_ref_.Value()};
  for (uint32_t i = 0; i < list.Length(); ++i) {
    Napi::Value item = list.Get(i);
    DeviceBuffer* buffer =
        item.IsObject() ? DeviceBuffer::TryUnwrap(item.As<Napi::Object>()) : nullptr;
    if (buffer == nullptr)
      ThrowTypeError(env, "argument " + std::to_string(i) + " is not a DeviceBuffer");
    std::shared_ptr<BufferCore> core = buffer->core();
    if (!core) ThrowDisposed(env, ("argument " + std::to_string(i) + " (DeviceBuffer)").c_str());
    if (core->client != core_->client) {
      ThrowTypeError(env, "argument " + std::to_string(i) + " belongs to another client");
    }
    job->arguments.push_back(std::move(core));
    keep_alive.push_back(item.As<Napi::Object>());
  }
  return PromiseWorker::Start(
      env, "pjrt-score:execute", [job]() { return RunExecute(job.get()); },
      [job](Napi::Env env, const std::vector<Napi::Object>& kept) -> Napi::Value {
        Client* client = Client::Unwrap(kept[1]);
        if (!client->core()) ThrowDisposed(env, "Client");
        Napi::Array outputs = Napi::Array::New(env, job->outputs.size());
        for (size_t i = 0; i < job->outputs.size(); ++i) {
          outputs.Set(static_cast<uint32_t>(i), client->WrapBuffer(env, job->outputs[i]));
        }
        job->outputs.clear();
        return outputs;
      },
      keep_alive);
}

Napi::Value Executable::Serialize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  LiveCore(env);
  auto core = core_;
  auto bytes = std::make_shared<std::string>();
  return PromiseWorker::Start(
      env, "pjrt-score:serialize",
      [core, bytes]() {
        const Plugin& plugin = *core->client->plugin;
        if (!plugin.HasSlot(pjrt::kExecutableSerialize)) {
          return Status::Make(pjrt::ErrorCode::kUnimplemented,
                              "this PJRT plugin cannot serialize executables");
        }
        auto get_args = MakeArgs<pjrt::LoadedExecutableGetExecutableArgs>();
        get_args.loaded_executable = core->executable.get();
        Status status = plugin.Call(pjrt::kLoadedExecutableGetExecutable, &get_args);
        if (!status.ok()) return status;
        OwnedExecutable executable(core->client->plugin, get_args.executable);
        auto args = MakeArgs<pjrt::ExecutableSerializeArgs>();
        args.executable = executable.get();
        status = plugin.Call(pjrt::kExecutableSerialize, &args);
        if (!status.ok()) return status;
        if (args.serialized_bytes != nullptr)
          bytes->assign(args.serialized_bytes, args.serialized_bytes_size);
        if (args.serialized_executable_deleter != nullptr &&
            args.serialized_executable != nullptr) {
          args.serialized_executable_deleter(args.serialized_executable);
        }
        return Status::Ok();
      },
      [bytes](Napi::Env env, const std::vector<Napi::Object>&) -> Napi::Value {
        return Napi::Buffer<uint8_t>::Copy(env, reinterpret_cast<const uint8_t*>(bytes->data()),
                                           bytes->size());
      },
      {Value()});
}

}  // namespace pjrt_score
