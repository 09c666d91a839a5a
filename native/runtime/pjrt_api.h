// pjrt-score's own declarations of the subset of the PJRT C API it uses.
//
// Written for this project from the published facts about the ABI (docs/pjrt.md
// says them in our words); no upstream header is copied. Rules we rely on:
//  - every argument struct starts with {size_t struct_size; void* extension_start},
//    we zero-fill it and set struct_size to sizeof our (newest known) layout;
//    the plugin accepts a larger struct and rejects a smaller one;
//  - the function table is a fixed sequence of pointers after a 40-byte header;
//    a slot exists only if it lies inside the table's struct_size.
// Each declaration is proven against the real CPU plugin by the test suite.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pjrt {

// Opaque handles owned by the plugin.
struct Error;
struct Event;
struct Client;
struct Device;
struct DeviceDescription;
struct Memory;
struct Executable;
struct LoadedExecutable;
struct Buffer;
struct SerializedExecutable;

enum class ErrorCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// PJRT_Buffer_Type values we use. 0 (INVALID) must never be sent: it aborts.
enum class ElementType : int {
  kPred = 1,
  kS8 = 2,
  kS16 = 3,
  kS32 = 4,
  kS64 = 5,
  kU8 = 6,
  kU16 = 7,
  kU32 = 8,
  kU64 = 9,
  kF16 = 10,
  kF32 = 11,
  kF64 = 12,
  kBF16 = 13,
};

enum class NamedValueType : int { kString = 0, kInt64 = 1, kInt64List = 2, kFloat = 3, kBool = 4 };

enum class HostBufferSemantics : int {
  kImmutableOnlyDuringCall = 0,
  kImmutableUntilTransferCompletes = 1,
  kImmutableZeroCopy = 2,
  kMutableZeroCopy = 3,
};

#define PJRT_ARGS_HEADER \
  size_t struct_size;    \
  void* extension_start

struct NamedValue {
  PJRT_ARGS_HEADER;
  const char* name;
  size_t name_size;
  NamedValueType type;
  union {
    const char* string_value;
    int64_t int64_value;
    const int64_t* int64_array_value;
    float float_value;
    bool bool_value;
  };
  size_t value_size;
};

struct ErrorDestroyArgs {
  PJRT_ARGS_HEADER;
  Error* error;
};
struct ErrorMessageArgs {
  PJRT_ARGS_HEADER;
  const Error* error;
  const char* message;  // out
  size_t message_size;  // out
};
struct ErrorGetCodeArgs {
  PJRT_ARGS_HEADER;
  const Error* error;
  ErrorCode code;  // out
};
struct PluginInitializeArgs {
  PJRT_ARGS_HEADER;
};
struct EventDestroyArgs {
  PJRT_ARGS_HEADER;
  Event* event;
};
struct EventAwaitArgs {
  PJRT_ARGS_HEADER;
  Event* event;
};
struct ClientCreateArgs {
  PJRT_ARGS_HEADER;
  const NamedValue* create_options;
  size_t num_options;
  void* kv_get_callback;
  void* kv_get_user_arg;
  void* kv_put_callback;
  void* kv_put_user_arg;
  Client* client;  // out
  void* kv_try_get_callback;
  void* kv_try_get_user_arg;
};
struct ClientDestroyArgs {
  PJRT_ARGS_HEADER;
  Client* client;
};
// Shape shared by Client_PlatformName and Client_PlatformVersion.
struct ClientStringArgs {
  PJRT_ARGS_HEADER;
  Client* client;
  const char* value;  // out
  size_t value_size;  // out
};
struct ClientAddressableDevicesArgs {
  PJRT_ARGS_HEADER;
  Client* client;
  Device* const* devices;  // out, owned by the client
  size_t num_devices;      // out
};
struct Program {
  PJRT_ARGS_HEADER;
  char* code;
  size_t code_size;
  const char* format;
  size_t format_size;
};
struct ClientCompileArgs {
  PJRT_ARGS_HEADER;
  Client* client;
  const Program* program;
  const char* compile_options;
  size_t compile_options_size;
  LoadedExecutable* executable;  // out
};
struct ClientBufferFromHostBufferArgs {
  PJRT_ARGS_HEADER;
  Client* client;
  const void* data;
  ElementType type;
  const int64_t* dims;
  size_t num_dims;
  const int64_t* byte_strides;
  size_t num_byte_strides;
  HostBufferSemantics host_buffer_semantics;
  Device* device;
  Memory* memory;
  void* device_layout;
  Event* done_with_host_buffer;  // out
  Buffer* buffer;                // out
};
struct DeviceDescriptionIdArgs {
  PJRT_ARGS_HEADER;
  DeviceDescription* device_description;
  int id;  // out
};
// Shape shared by DeviceDescription_Kind and DeviceDescription_DebugString.
struct DeviceDescriptionStringArgs {
  PJRT_ARGS_HEADER;
  DeviceDescription* device_description;
  const char* value;  // out
  size_t value_size;  // out
};
struct DeviceGetDescriptionArgs {
  PJRT_ARGS_HEADER;
  Device* device;
  DeviceDescription* device_description;  // out
};
// Every field through the newest known one, so the struct is never smaller
// than what the plugin expects. Each `_is_set` says whether the value before
// it was filled; bytes_in_use always is.
struct DeviceMemoryStatsArgs {
  PJRT_ARGS_HEADER;
  Device* device;
  int64_t bytes_in_use;  // out
  int64_t peak_bytes_in_use;
  bool peak_bytes_in_use_is_set;
  int64_t num_allocs;
  bool num_allocs_is_set;
  int64_t largest_alloc_size;
  bool largest_alloc_size_is_set;
  int64_t bytes_limit;  // out: the most the user may allocate on the device
  bool bytes_limit_is_set;
  int64_t bytes_reserved;
  bool bytes_reserved_is_set;
  int64_t peak_bytes_reserved;
  bool peak_bytes_reserved_is_set;
  int64_t bytes_reservable_limit;
  bool bytes_reservable_limit_is_set;
  int64_t largest_free_block_bytes;
  bool largest_free_block_bytes_is_set;
  int64_t pool_bytes;
  bool pool_bytes_is_set;
  int64_t peak_pool_bytes;
  bool peak_pool_bytes_is_set;
};

struct ExecutableDestroyArgs {
  PJRT_ARGS_HEADER;
  Executable* executable;
};
struct ExecutableNumOutputsArgs {
  PJRT_ARGS_HEADER;
  Executable* executable;
  size_t num_outputs;  // out
};
struct ExecutableSerializeArgs {
  PJRT_ARGS_HEADER;
  const Executable* executable;
  const char* serialized_bytes;                                  // out
  size_t serialized_bytes_size;                                  // out
  SerializedExecutable* serialized_executable;                   // out, backs the bytes
  void (*serialized_executable_deleter)(SerializedExecutable*);  // out
};
struct ExecutableOutputElementTypesArgs {
  PJRT_ARGS_HEADER;
  Executable* executable;
  ElementType* output_types;  // out
  size_t num_output_types;    // out
};
struct ExecutableOutputDimensionsArgs {
  PJRT_ARGS_HEADER;
  Executable* executable;
  size_t num_outputs;       // out
  const int64_t* dims;      // out, all outputs' dims concatenated
  const size_t* dim_sizes;  // out, rank of each output
};
struct LoadedExecutableDestroyArgs {
  PJRT_ARGS_HEADER;
  LoadedExecutable* executable;
};
struct LoadedExecutableGetExecutableArgs {
  PJRT_ARGS_HEADER;
  LoadedExecutable* loaded_executable;
  Executable* executable;  // out, destroy with Executable_Destroy
};
struct ExecuteOptions {
  PJRT_ARGS_HEADER;
  void** send_callbacks;
  void** recv_callbacks;
  size_t num_send_ops;
  size_t num_recv_ops;
  int launch_id;
  const int64_t* non_donatable_input_indices;
  size_t num_non_donatable_input_indices;
  void* context;
  const char* call_location;
  size_t num_tasks;
  int* task_ids;
  int64_t* incarnation_ids;
};
struct LoadedExecutableExecuteArgs {
  PJRT_ARGS_HEADER;
  LoadedExecutable* executable;
  ExecuteOptions* options;
  Buffer* const* const* argument_lists;  // [num_devices][num_args]
  size_t num_devices;
  size_t num_args;
  Buffer** const* output_lists;    // [num_devices][num_outputs], caller-allocated
  Event** device_complete_events;  // [num_devices], optional
  Device* execute_device;
};
struct ExecutableDeserializeAndLoadArgs {
  PJRT_ARGS_HEADER;
  Client* client;
  const char* serialized_executable;
  size_t serialized_executable_size;
  LoadedExecutable* loaded_executable;  // out
  const char* overridden_serialized_compile_options;
  size_t overridden_serialized_compile_options_size;
};
struct BufferDestroyArgs {
  PJRT_ARGS_HEADER;
  Buffer* buffer;
};
struct BufferElementTypeArgs {
  PJRT_ARGS_HEADER;
  Buffer* buffer;
  ElementType type;  // out
};
struct BufferDimensionsArgs {
  PJRT_ARGS_HEADER;
  Buffer* buffer;
  const int64_t* dims;  // out
  size_t num_dims;      // out
};
struct BufferToHostBufferArgs {
  PJRT_ARGS_HEADER;
  Buffer* src;
  void* host_layout;
  void* dst;
  size_t dst_size;
  Event* event;  // out
};

#undef PJRT_ARGS_HEADER

using Fn = Error* (*)(void* args);

// Indices of the function-table slots we call (slot i is at byte 40 + 8 * i).
enum Slot : int {
  kErrorDestroy = 0,
  kErrorMessage = 1,
  kErrorGetCode = 2,
  kPluginInitialize = 3,
  kEventDestroy = 5,
  kEventAwait = 8,
  kClientCreate = 10,
  kClientDestroy = 11,
  kClientPlatformName = 12,
  kClientPlatformVersion = 14,
  kClientAddressableDevices = 16,
  kClientCompile = 20,
  kClientBufferFromHostBuffer = 22,
  kDeviceDescriptionId = 23,
  kDeviceDescriptionKind = 26,
  kDeviceDescriptionDebugString = 27,
  kDeviceGetDescription = 29,
  kDeviceMemoryStats = 34,
  kExecutableDestroy = 40,
  kExecutableNumOutputs = 44,
  kExecutableSerialize = 49,
  kLoadedExecutableDestroy = 50,
  kLoadedExecutableGetExecutable = 51,
  kLoadedExecutableExecute = 55,
  kExecutableDeserializeAndLoad = 56,
  kBufferDestroy = 58,
  kBufferElementType = 59,
  kBufferDimensions = 60,
  kBufferToHostBuffer = 70,
  kExecutableOutputElementTypes = 90,
  kExecutableOutputDimensions = 91,
};

// The table header: {struct_size, extension_start, {struct_size,
// extension_start, major, minor}}; function pointers follow at byte 40.
struct ApiHeader {
  size_t struct_size;
  void* extension_start;
  size_t version_struct_size;
  void* version_extension_start;
  int major_version;
  int minor_version;
};
static_assert(sizeof(ApiHeader) == 40, "PJRT_Api function table must start at byte 40");

}  // namespace pjrt
