#include "runtime/plugin.h"

#include <dlfcn.h>

#include <map>

namespace pjrt_score {

namespace {

// The declarations in pjrt_api.h follow API major version 0. Minor versions
// only append fields and slots, which HasSlot and struct_size handle.
constexpr int kSupportedMajor = 0;

std::mutex& RegistryMutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<std::string, std::shared_ptr<Plugin>>& Registry() {
  static auto* registry = new std::map<std::string, std::shared_ptr<Plugin>>();
  return *registry;
}

}  // namespace

const char* ErrorCodeName(pjrt::ErrorCode code) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  int index = static_cast<int>(code);
  if (index < 0 || index > 16) return "UNKNOWN";
  return kNames[index];
}

std::shared_ptr<Plugin> Plugin::Load(const std::string& path, Status* status) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto found = Registry().find(path);
  if (found != Registry().end()) return found->second;

  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    *status = Status::Make(pjrt::ErrorCode::kNotFound, "Could not load the PJRT plugin " + path +
                                                           ": " + (why ? why : "dlopen failed"));
    return nullptr;
  }
  using GetApiFn = const void* (*)();
  auto get_api = reinterpret_cast<GetApiFn>(dlsym(handle, "GetPjrtApi"));
  if (get_api == nullptr) {
    dlclose(handle);
    *status = Status::Make(pjrt::ErrorCode::kInvalidArgument,
                           path + " is not a PJRT plugin: it does not export GetPjrtApi");
    return nullptr;
  }
  auto api = static_cast<const pjrt::ApiHeader*>(get_api());
  if (api == nullptr || api->struct_size < sizeof(pjrt::ApiHeader)) {
    *status = Status::Make(pjrt::ErrorCode::kInvalidArgument,
                           path + ": GetPjrtApi returned no usable API table");
    return nullptr;
  }
  if (api->major_version != kSupportedMajor) {
    *status = Status::Make(pjrt::ErrorCode::kFailedPrecondition,
                           path + " implements PJRT C API " + std::to_string(api->major_version) +
                               "." + std::to_string(api->minor_version) +
                               ", but pjrt-score supports major version " +
                               std::to_string(kSupportedMajor) + " only");
    return nullptr;
  }

  std::shared_ptr<Plugin> plugin(new Plugin());
  plugin->path_ = path;
  plugin->api_ = api;
  plugin->major_ = api->major_version;
  plugin->minor_ = api->minor_version;

  // Every slot we call must exist; a plugin too old for us fails here, clearly.
  for (pjrt::Slot slot : {pjrt::kErrorDestroy,
                          pjrt::kErrorMessage,
                          pjrt::kErrorGetCode,
                          pjrt::kPluginInitialize,
                          pjrt::kEventDestroy,
                          pjrt::kEventAwait,
                          pjrt::kClientCreate,
                          pjrt::kClientDestroy,
                          pjrt::kClientPlatformName,
                          pjrt::kClientPlatformVersion,
                          pjrt::kClientAddressableDevices,
                          pjrt::kClientCompile,
                          pjrt::kClientBufferFromHostBuffer,
                          pjrt::kExecutableDestroy,
                          pjrt::kExecutableNumOutputs,
                          pjrt::kLoadedExecutableDestroy,
                          pjrt::kLoadedExecutableGetExecutable,
                          pjrt::kLoadedExecutableExecute,
                          pjrt::kBufferDestroy,
                          pjrt::kBufferElementType,
                          pjrt::kBufferDimensions,
                          pjrt::kBufferToHostBuffer}) {
    if (!plugin->HasSlot(slot)) {
      *status = Status::Make(pjrt::ErrorCode::kUnimplemented,
                             path + " lacks PJRT function slot " + std::to_string(slot) + " (API " +
                                 std::to_string(plugin->major_) + "." +
                                 std::to_string(plugin->minor_) + " is too old for pjrt-score)");
      return nullptr;
    }
  }

  auto init = MakeArgs<pjrt::PluginInitializeArgs>();
  Status init_status = plugin->Call(pjrt::kPluginInitialize, &init);
  if (!init_status.ok()) {
    init_status.message = "PJRT plugin initialization failed: " + init_status.message;
    *status = init_status;
    return nullptr;
  }
  Registry()[path] = plugin;
  return plugin;
}

void* Plugin::SlotFn(pjrt::Slot slot) const {
  size_t offset = sizeof(pjrt::ApiHeader) + sizeof(void*) * static_cast<size_t>(slot);
  if (offset + sizeof(void*) > api_->struct_size) return nullptr;
  void* fn;
  std::memcpy(&fn, reinterpret_cast<const char*>(api_) + offset, sizeof(fn));
  return fn;
}

bool Plugin::HasSlot(pjrt::Slot slot) const { return SlotFn(slot) != nullptr; }

const void* Plugin::FindExtension(int type) const {
  // Every extension starts {size_t struct_size; int type; next}; a bound on
  // the walk guards against a malformed chain.
  struct Base {
    size_t struct_size;
    int type;
    const Base* next;
  };
  const Base* e = static_cast<const Base*>(api_->extension_start);
  for (int i = 0; e != nullptr && i < 64; e = e->next, ++i) {
    if (e->type == type) return e;
  }
  return nullptr;
}

Status Plugin::CallRaw(pjrt::Slot slot, void* args) const {
  auto fn = reinterpret_cast<pjrt::Fn>(SlotFn(slot));
  if (fn == nullptr) {
    return Status::Make(pjrt::ErrorCode::kUnimplemented,
                        "this PJRT plugin does not provide function slot " + std::to_string(slot));
  }
  return TakeError(fn(args));
}

Status Plugin::TakeError(pjrt::Error* error) const {
  if (error == nullptr) return Status::Ok();
  Status status;
  status.code = pjrt::ErrorCode::kUnknown;
  auto code_args = MakeArgs<pjrt::ErrorGetCodeArgs>();
  code_args.error = error;
  if (reinterpret_cast<pjrt::Fn>(SlotFn(pjrt::kErrorGetCode))(&code_args) == nullptr)
    status.code = code_args.code;
  auto message_args = MakeArgs<pjrt::ErrorMessageArgs>();
  message_args.error = error;
  // Error_Message and Error_Destroy return void.
  reinterpret_cast<void (*)(void*)>(SlotFn(pjrt::kErrorMessage))(&message_args);
  if (message_args.message != nullptr) {
    status.message.assign(message_args.message, message_args.message_size);
  }
  if (status.message.empty()) status.message = "PJRT error without a message";
  auto destroy_args = MakeArgs<pjrt::ErrorDestroyArgs>();
  destroy_args.error = error;
  reinterpret_cast<void (*)(void*)>(SlotFn(pjrt::kErrorDestroy))(&destroy_args);
  return status;
}

void Plugin::DestroyEvent(pjrt::Event* event) const {
  if (event == nullptr) return;
  auto args = MakeArgs<pjrt::EventDestroyArgs>();
  args.event = event;
  Call(pjrt::kEventDestroy, &args);
}

Status Plugin::AwaitAndDestroy(pjrt::Event* event) const {
  if (event == nullptr) return Status::Ok();
  auto args = MakeArgs<pjrt::EventAwaitArgs>();
  args.event = event;
  Status status = Call(pjrt::kEventAwait, &args);
  DestroyEvent(event);
  return status;
}

}  // namespace pjrt_score
