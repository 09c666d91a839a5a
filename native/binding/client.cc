#include "binding/client.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "binding/addon_data.h"
#include "binding/compile_options.h"
#include "binding/errors.h"
#include "binding/executable.h"
#include "binding/promise_worker.h"
#include "kernels/register_kernels.h"
#include "runtime/element_type.h"
#include "runtime/heap_trim.h"
#include "runtime/large_stack.h"
#include "runtime/program_nesting.h"

namespace pjrt_score {

namespace {

using CoreHolder = std::shared_ptr<ClientCore>;

std::string ReadClientString(const ClientCore& core, pjrt::Slot slot, Status* status) {
  auto args = MakeArgs<pjrt::ClientStringArgs>();
  args.client = core.client.get();
  *status = core.plugin->Call(slot, &args);
  return status->ok() && args.value ? std::string(args.value, args.value_size) : std::string();
}

std::string ReadDescriptionString(const Plugin& plugin, pjrt::DeviceDescription* description,
                                  pjrt::Slot slot) {
  auto args = MakeArgs<pjrt::DeviceDescriptionStringArgs>();
  args.device_description = description;
  if (!plugin.Call(slot, &args).ok() || args.value == nullptr) return std::string();
  return std::string(args.value, args.value_size);
}

// The device's allocatable bytes, or -1 when the plugin has no memory stats
// for it (an error here only means "not known": it is dropped).
int64_t ReadMemoryLimit(const Plugin& plugin, pjrt::Device* device) {
  auto args = MakeArgs<pjrt::DeviceMemoryStatsArgs>();
  args.device = device;
  if (!plugin.Call(pjrt::kDeviceMemoryStats, &args).ok() || !args.bytes_limit_is_set) return -1;
  return args.bytes_limit > 0 ? args.bytes_limit : -1;
}

Status FillDevices(ClientCore* core) {
  auto args = MakeArgs<pjrt::ClientAddressableDevicesArgs>();
  args.client = core->client.get();
  Status status = core->plugin->Call(pjrt::kClientAddressableDevices, &args);
  if (!status.ok()) return status;
  if (args.num_devices == 0) {
    return Status::Make(pjrt::ErrorCode::kFailedPrecondition,
                        "the PJRT client has no addressable device");
  }
  for (size_t i = 0; i < args.num_devices; ++i) {
    pjrt::Device* device = args.devices[i];
    core->devices.push_back(device);
    DeviceInfo info;
    info.id = static_cast<int>(i);
    auto description_args = MakeArgs<pjrt::DeviceGetDescriptionArgs>();
    description_args.device = device;
    if (core->plugin->Call(pjrt::kDeviceGetDescription, &description_args).ok()) {
      auto id_args = MakeArgs<pjrt::DeviceDescriptionIdArgs>();
      id_args.device_description = description_args.device_description;
      if (core->plugin->Call(pjrt::kDeviceDescriptionId, &id_args).ok()) info.id = id_args.id;
      info.kind = ReadDescriptionString(*core->plugin, description_args.device_description,
                                        pjrt::kDeviceDescriptionKind);
      info.description = ReadDescriptionString(*core->plugin, description_args.device_description,
                                               pjrt::kDeviceDescriptionDebugString);
    }
    info.memory_limit = ReadMemoryLimit(*core->plugin, device);
    core->device_info.push_back(info);
  }
  return Status::Ok();
}

// A named client option, with its string kept alive by the owner.
struct OptionValue {
  std::string name;
  pjrt::NamedValueType type;
  std::string string_value;
  int64_t int_value = 0;
  float float_value = 0;
  bool bool_value = false;
};

std::vector<OptionValue> ReadOptions(Napi::Env env, const Napi::Value& value) {
  std::vector<OptionValue> options;
  if (value.IsUndefined() || value.IsNull()) return options;
  if (!value.IsObject()) ThrowTypeError(env, "client options must be an object");
  Napi::Object object = value.As<Napi::Object>();
  Napi::Array names = object.GetPropertyNames();
  for (uint32_t i = 0; i < names.Length(); ++i) {
    OptionValue option;
    option.name = names.Get(i).ToString().Utf8Value();
    Napi::Value v = object.Get(option.name);
    if (v.IsBoolean()) {
      option.type = pjrt::NamedValueType::kBool;
      option.bool_value = v.As<Napi::Boolean>().Value();
    } else if (v.IsNumber()) {
      double d = v.As<Napi::Number>().DoubleValue();
      if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 9007199254740992.0) {
        option.type = pjrt::NamedValueType::kInt64;
        option.int_value = static_cast<int64_t>(d);
      } else {
        option.type = pjrt::NamedValueType::kFloat;
        option.float_value = static_cast<float>(d);
      }
    } else if (v.IsString()) {
      option.type = pjrt::NamedValueType::kString;
      option.string_value = v.As<Napi::String>().Utf8Value();
    } else {
      ThrowTypeError(env,
                     "client option '" + option.name + "' must be a number, string or boolean");
    }
    options.push_back(std::move(option));
  }
  return options;
}

Status CreateClient(const std::string& plugin_path, const std::vector<OptionValue>& options,
                    CoreHolder* out) {
  Status status;
  std::shared_ptr<Plugin> plugin = Plugin::Load(plugin_path, &status);
  if (!plugin) return status;
  auto core = std::make_shared<ClientCore>();
  core->plugin = plugin;

  std::vector<pjrt::NamedValue> named(options.size());
  for (size_t i = 0; i < options.size(); ++i) {
    const OptionValue& option = options[i];
    pjrt::NamedValue& value = named[i];
    std::memset(static_cast<void*>(&value), 0, sizeof(value));
    value.struct_size = sizeof(pjrt::NamedValue);
    value.name = option.name.c_str();
    value.name_size = option.name.size();
    value.type = option.type;
    value.value_size = 1;
    switch (option.type) {
      case pjrt::NamedValueType::kString:
        value.string_value = option.string_value.c_str();
        value.value_size = option.string_value.size();
        break;
      case pjrt::NamedValueType::kInt64:
        value.int64_value = option.int_value;
        break;
      case pjrt::NamedValueType::kFloat:
        value.float_value = option.float_value;
        break;
      default:
        value.bool_value = option.bool_value;
        break;
    }
  }
  auto args = MakeArgs<pjrt::ClientCreateArgs>();
  args.create_options = named.empty() ? nullptr : named.data();
  args.num_options = named.size();
  status = plugin->Call(pjrt::kClientCreate, &args);
  if (!status.ok()) return status;
  core->client = OwnedClient(plugin, args.client);
  core->platform_name = ReadClientString(*core, pjrt::kClientPlatformName, &status);
  if (!status.ok()) return status;
  core->platform_version = ReadClientString(*core, pjrt::kClientPlatformVersion, &status);
  if (!status.ok()) return status;
  status = FillDevices(core.get());
  if (!status.ok()) return status;
  // The fused attention kernels (prefix and causal) run on the host: only a
  // CPU client offers them (a GPU plugin's FFI registry is for its own platforms).
  // PJRT_SCORE_KERNELS=off: a client without it, as on a plugin that has no
  // FFI extension (registration itself cannot be undone in a process).
  const char* kernels = std::getenv("PJRT_SCORE_KERNELS");
  const bool kernels_off = kernels != nullptr && std::strcmp(kernels, "off") == 0;
  if (core->platform_name == "cpu" && !kernels_off) {
    std::string why;
    core->prefix_attention_kernel = RegisterKernels(*plugin, &why);
  }
  *out = std::move(core);
  return Status::Ok();
}

// Compiles MLIR text into `result`. Runs on a large-stack thread.
Status CompileNow(std::string& code, const std::string& options, ExecutableCore* result) {
  const Plugin& plugin = *result->client->plugin;
  auto program = MakeArgs<pjrt::Program>();
  program.code = code.data();
  program.code_size = code.size();
  program.format = "mlir";
  program.format_size = 4;
  auto args = MakeArgs<pjrt::ClientCompileArgs>();
  args.client = result->client->client.get();
  args.program = &program;
  args.compile_options = options.data();
  args.compile_options_size = options.size();
  Status status = plugin.Call(pjrt::kClientCompile, &args);
  if (!status.ok()) return status;
  result->executable = OwnedLoadedExecutable(result->client->plugin, args.executable);
  return Executable::ReadMetadata(result);
}

// Loads a serialized executable into `result`. Runs on a large-stack thread.
Status DeserializeNow(const std::string& bytes, ExecutableCore* result) {
  const Plugin& plugin = *result->client->plugin;
  if (!plugin.HasSlot(pjrt::kExecutableDeserializeAndLoad)) {
    return Status::Make(pjrt::ErrorCode::kUnimplemented,
                        "this PJRT plugin cannot deserialize executables");
  }
  auto args = MakeArgs<pjrt::ExecutableDeserializeAndLoadArgs>();
  args.client = result->client->client.get();
  args.serialized_executable = bytes.data();
  args.serialized_executable_size = bytes.size();
  Status status = plugin.Call(pjrt::kExecutableDeserializeAndLoad, &args);
  if (!status.ok()) return status;
  result->executable = OwnedLoadedExecutable(result->client->plugin, args.loaded_executable);
  return Executable::ReadMetadata(result);
}

}  // namespace

Napi::Function Client::Init(Napi::Env env) {
  return DefineClass(env, "Client",
                     {
                         StaticMethod<&Client::Create>("create"),
                         InstanceAccessor<&Client::PlatformName>("platformName"),
                         InstanceAccessor<&Client::PlatformVersion>("platformVersion"),
                         InstanceAccessor<&Client::ApiVersion>("apiVersion"),
                         InstanceAccessor<&Client::PrefixAttentionKernel>("prefixAttentionKernel"),
                         InstanceAccessor<&Client::Devices>("devices"),
                         InstanceAccessor<&Client::IsDisposed>("disposed"),
                         InstanceMethod<&Client::Compile>("compile"),
                         InstanceMethod<&Client::Upload>("upload"),
                         InstanceMethod<&Client::Deserialize>("deserialize"),
                         InstanceMethod<&Client::Dispose>("dispose"),
                     });
}

Client::Client(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Client>(info) {
  if (info.Length() < 1 || !info[0].IsExternal()) {
    ThrowTypeError(info.Env(), "Client cannot be constructed directly: use Client.create()");
  }
  core_ = *info[0].As<Napi::External<CoreHolder>>().Data();
}

Client::~Client() { DisposeNow(); }

void Client::DisposeNow() {
  // Children first: copy, since each child unregisters itself.
  auto children = children_;
  children_.clear();
  for (ClientChild* child : children) child->DisposeFromParent();
  core_.reset();  // the PJRT client goes when the last in-flight worker lets go
}

const ClientCore& Client::LiveCore(Napi::Env env) const {
  if (!core_) ThrowDisposed(env, "Client");
  return *core_;
}

Napi::Value Client::Create(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) ThrowTypeError(env, "plugin path must be a string");
  std::string path = info[0].As<Napi::String>().Utf8Value();
  std::vector<OptionValue> options =
      ReadOptions(env, info.Length() > 1 ? info[1] : env.Undefined());
  auto created = std::make_shared<CoreHolder>();
  return PromiseWorker::Start(
      env, "pjrt-score:createClient",
      [path, options, created]() { return CreateClient(path, options, created.get()); },
      [created](Napi::Env env, const std::vector<Napi::Object>&) -> Napi::Value {
        CoreHolder holder = *created;
        auto external = Napi::External<CoreHolder>::New(env, &holder);
        return env.GetInstanceData<AddonData>()->client_constructor.New({external});
      });
}

Napi::Value Client::PlatformName(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), LiveCore(info.Env()).platform_name);
}

Napi::Value Client::PlatformVersion(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), LiveCore(info.Env()).platform_version);
}

Napi::Value Client::ApiVersion(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const ClientCore& core = LiveCore(env);
  Napi::Object version = Napi::Object::New(env);
  version.Set("major", core.plugin->major_version());
  version.Set("minor", core.plugin->minor_version());
  return version;
}

Napi::Value Client::PrefixAttentionKernel(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), LiveCore(info.Env()).prefix_attention_kernel);
}

Napi::Value Client::Devices(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const ClientCore& core = LiveCore(env);
  Napi::Array devices = Napi::Array::New(env, core.device_info.size());
  for (size_t i = 0; i < core.device_info.size(); ++i) {
    Napi::Object device = Napi::Object::New(env);
    device.Set("id", core.device_info[i].id);
    device.Set("kind", core.device_info[i].kind);
    device.Set("description", core.device_info[i].description);
    int64_t limit = core.device_info[i].memory_limit;
    device.Set("memoryLimit", limit > 0
                                  ? Napi::Value(Napi::Number::New(env, static_cast<double>(limit)))
                                  : env.Null());
    devices.Set(static_cast<uint32_t>(i), device);
  }
  return devices;
}

Napi::Value Client::IsDisposed(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), !core_);
}

Napi::Value Client::Dispose(const Napi::CallbackInfo& info) {
  DisposeNow();
  return info.Env().Undefined();
}

Napi::Object Client::WrapExecutable(Napi::Env env, std::shared_ptr<ExecutableCore> core) {
  auto external = Napi::External<std::shared_ptr<ExecutableCore>>::New(env, &core);
  return env.GetInstanceData<AddonData>()->executable_constructor.New({external, Value()});
}

Napi::Object Client::WrapBuffer(Napi::Env env, std::shared_ptr<BufferCore> core) {
  auto external = Napi::External<std::shared_ptr<BufferCore>>::New(env, &core);
  return env.GetInstanceData<AddonData>()->buffer_constructor.New({external, Value()});
}

Napi::Value Client::Compile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  LiveCore(env);
  if (info.Length() < 1 || !info[0].IsString())
    ThrowTypeError(env, "program text must be a string");
  auto options = std::make_shared<std::string>(
      CompileOptions::FromJs(env, info.Length() > 1 ? info[1] : env.Undefined()).Serialize());
  auto code = std::make_shared<std::string>(info[0].As<Napi::String>().Utf8Value());
  auto result = std::make_shared<ExecutableCore>();
  result->client = core_;
  return PromiseWorker::Start(
      env, "pjrt-score:compile",
      [code, options, result]() {
        // Checked here too, so a direct call of the binding cannot overflow the stack either.
        size_t depth = ProgramNestingDepth(*code, kMaxProgramNesting);
        if (depth > kMaxProgramNesting) {
          return Status::Make(pjrt::ErrorCode::kInvalidArgument,
                              "the program nests deeper than " +
                                  std::to_string(kMaxProgramNesting) +
                                  " levels of (, [, { and <; it is refused before parsing");
        }
        Status status = RunOnLargeStack(
            kLargeStackBytes, [&]() { return CompileNow(*code, *options, result.get()); });
        ReleaseFreeHeap();  // the compiler's scratch, failed compiles included
        return status;
      },
      [this, result](Napi::Env env, const std::vector<Napi::Object>&) -> Napi::Value {
        if (!core_) ThrowDisposed(env, "Client");
        return WrapExecutable(env, result);
      },
      {Value()});
}

Napi::Value Client::Deserialize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  LiveCore(env);
  if (info.Length() < 1 || !info[0].IsTypedArray()) {
    ThrowTypeError(env, "serialized executable must be a Uint8Array");
  }
  Napi::TypedArray array = info[0].As<Napi::TypedArray>();
  auto bytes = std::make_shared<std::string>(
      static_cast<const char*>(array.ArrayBuffer().Data()) + array.ByteOffset(),
      array.ByteLength());
  auto result = std::make_shared<ExecutableCore>();
  result->client = core_;
  return PromiseWorker::Start(
      env, "pjrt-score:deserialize",
      [bytes, result]() {
        Status status = RunOnLargeStack(kLargeStackBytes,
                                        [&]() { return DeserializeNow(*bytes, result.get()); });
        ReleaseFreeHeap();  // the loader's scratch
        return status;
      },
      [this, result](Napi::Env env, const std::vector<Napi::Object>&) -> Napi::Value {
        if (!core_) ThrowDisposed(env, "Client");
        return WrapExecutable(env, result);
      },
      {Value()});
}

Napi::Value Client::Upload(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  LiveCore(env);
  if (info.Length() < 3 || !info[0].IsTypedArray() || !info[1].IsArray() || !info[2].IsString()) {
    ThrowTypeError(env, "upload(data: TypedArray, dims: number[], dtype: string)");
  }
  Napi::TypedArray data = info[0].As<Napi::TypedArray>();
  Napi::Array dims_array = info[1].As<Napi::Array>();
  std::string dtype = info[2].As<Napi::String>().Utf8Value();
  auto type = ElementTypeFromName(dtype);
  if (!type) ThrowTypeError(env, "unknown dtype '" + dtype + "'");
  size_t element_size = ElementTypeSize(*type);

  auto result = std::make_shared<BufferCore>();
  result->client = core_;
  result->type = *type;
  if (dims_array.Length() > 64) ThrowTypeError(env, "too many dimensions");
  double elements = 1;
  for (uint32_t i = 0; i < dims_array.Length(); ++i) {
    Napi::Value d = dims_array.Get(i);
    double v = d.IsNumber() ? d.As<Napi::Number>().DoubleValue() : -1;
    if (!(v >= 0 && std::trunc(v) == v && v <= 4294967296.0)) {
      ThrowTypeError(env, "dims[" + std::to_string(i) + "] must be a non-negative integer");
    }
    result->dims.push_back(static_cast<int64_t>(v));
    elements *= v;
  }
  if (elements * element_size != static_cast<double>(data.ByteLength())) {
    ThrowTypeError(env, "data has " + std::to_string(data.ByteLength()) +
                            " bytes, but dims and dtype " + dtype + " need " +
                            std::to_string(static_cast<uint64_t>(elements * element_size)));
  }
  result->byte_size = data.ByteLength();
  // The plugin copies the array during this call (kImmutableOnlyDuringCall), here on the JS thread,
  // so the caller may reuse or detach it as soon as upload() returns; copying it into a vector
  // first and calling the plugin from a worker cost a second copy and its page faults (~100 MB for
  // the default model). Only waiting for the transfer's done event runs on the worker.
  const ClientCore& client = *core_;
  auto args = MakeArgs<pjrt::ClientBufferFromHostBufferArgs>();
  args.client = client.client.get();
  static const uint8_t kEmpty = 0;  // a valid pointer for zero-element arrays
  args.data = data.ByteLength() == 0
                  ? static_cast<const void*>(&kEmpty)
                  : static_cast<const uint8_t*>(data.ArrayBuffer().Data()) + data.ByteOffset();
  args.type = result->type;
  args.dims = result->dims.data();
  args.num_dims = result->dims.size();
  args.host_buffer_semantics = pjrt::HostBufferSemantics::kImmutableOnlyDuringCall;
  args.device = client.devices[0];
  Status called = client.plugin->Call(pjrt::kClientBufferFromHostBuffer, &args);
  if (called.ok()) result->buffer = OwnedBuffer(client.plugin, args.buffer);
  pjrt::Event* done = called.ok() ? args.done_with_host_buffer : nullptr;
  return PromiseWorker::Start(
      env, "pjrt-score:upload",
      [called, done, result]() {
        if (!called.ok()) return called;
        return result->client->plugin->AwaitAndDestroy(done);
      },
      [this, result](Napi::Env env, const std::vector<Napi::Object>&) -> Napi::Value {
        if (!core_) ThrowDisposed(env, "Client");
        return WrapBuffer(env, result);
      },
      {Value()});
}

}  // namespace pjrt_score
