// pjrt-score's own declarations of the subset of the XLA FFI C API and the
// PJRT FFI extension that the prefix-attention custom call uses.
//
// Written for this project from the published layout of the ABI (XLA's
// xla/ffi/api/c_api.h and xla/pjrt/c/pjrt_c_api_ffi_extension.h, read, not
// copied). Every struct starts {size_t struct_size; ...}; we check the sizes
// the runtime hands us before reading a field, and name the sizes we send.
// Layouts confirmed against the CPU plugin (xla-cpu-pjrt 0.0.1, PJRT C API
// 0.81): its register_handler answers a too-small struct with "expected 52",
// the size of the layout below (no api_version field, typed handlers only).
#pragma once

#include <cstddef>
#include <cstdint>

namespace xla_ffi {

// --- PJRT side: the FFI extension of a plugin's PJRT_Api --------------------

constexpr int kPjrtExtensionTypeFfi = 5;

struct PjrtExtensionBase {
  size_t struct_size;
  int type;
  PjrtExtensionBase* next;
};

struct PjrtRegisterHandlerArgs {
  size_t struct_size;
  const char* target_name;
  size_t target_name_size;
  void* handler;  // an XLA FFI handler: Error* (*)(CallFrame*)
  const char* platform_name;
  size_t platform_name_size;
  uint32_t traits;
};
// The plugin checks struct_size >= its own; this is offsetof(traits) + 4.
constexpr size_t kPjrtRegisterHandlerArgsSize =
    offsetof(PjrtRegisterHandlerArgs, traits) + sizeof(uint32_t);
static_assert(kPjrtRegisterHandlerArgsSize == 52,
              "PJRT_FFI_Register_Handler_Args of PJRT C API 0.81");

struct PjrtFfiExtension {
  PjrtExtensionBase base;
  void* type_id_register;
  void* user_data_add;
  void* (*register_handler)(PjrtRegisterHandlerArgs* args);  // returns a PJRT_Error*
};

// --- XLA FFI side: what a handler receives ----------------------------------

struct Error;  // opaque, created by the runtime, owned by whoever receives it

enum class ErrorCode : int { kInvalidArgument = 3, kInternal = 13 };

enum class DataType : int { kS32 = 4, kU16 = 7, kF32 = 11, kBF16 = 16 };

enum class ExecutionStage : int { kInstantiate = 0, kPrepare = 1, kInitialize = 2, kExecute = 3 };

constexpr int kExtensionTypeMetadata = 1;

struct ExtensionBase {
  size_t struct_size;
  int type;
  ExtensionBase* next;
};

struct ApiVersion {
  size_t struct_size;
  ExtensionBase* extension_start;
  int major_version;
  int minor_version;
};
// The FFI API version this handler is written against.
constexpr int kApiMajor = 0;
constexpr int kApiMinor = 1;

struct ErrorCreateArgs {
  size_t struct_size;
  ExtensionBase* extension_start;
  const char* message;
  ErrorCode errc;
};

// XLA_FFI_Api: a header, then function pointers; Error_Create is the first.
struct Api {
  size_t struct_size;
  ExtensionBase* extension_start;
  ApiVersion api_version;
  void* internal_api;
  Error* (*error_create)(ErrorCreateArgs* args);
};

struct Buffer {
  size_t struct_size;
  ExtensionBase* extension_start;
  DataType dtype;
  void* data;
  int64_t rank;
  int64_t* dims;  // rank of them
};

constexpr int kArgTypeBuffer = 1;
constexpr int kRetTypeBuffer = 1;

struct Args {
  size_t struct_size;
  ExtensionBase* extension_start;
  int64_t size;
  int* types;  // size of them
  void** args;
};

struct Rets {
  size_t struct_size;
  ExtensionBase* extension_start;
  int64_t size;
  int* types;
  void** rets;
};

struct CallFrame {
  size_t struct_size;
  ExtensionBase* extension_start;
  const Api* api;
  void* ctx;
  ExecutionStage stage;
  Args args;
  Rets rets;
  // attrs and (newer runtimes) a future follow; this handler reads neither.
};

// The registration handshake: the runtime calls the handler once with a
// call frame whose extension_start is this; the handler fills `metadata`.
struct Metadata {
  size_t struct_size;
  ApiVersion api_version;
  uint32_t traits;
};

struct MetadataExtension {
  ExtensionBase extension_base;
  Metadata* metadata;
};

using Handler = Error* (*)(CallFrame* frame);

}  // namespace xla_ffi
