// What every FFI custom-call handler of the addon shares (prefix_attention_ffi.cc,
// matmul_bf16_ffi.cc): checking a call's buffers against what the target expects, the handler
// body (registration handshake, decode, run) and registering a handler with a plugin. Errors go
// back to XLA as FFI errors (INVALID_ARGUMENT for a malformed call, INTERNAL when a run fails);
// nothing here throws or aborts.
#pragma once

#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>

#include "kernels/xla_ffi.h"
#include "runtime/plugin.h"

namespace pjrt_score {
namespace ffi {

using xla_ffi::Buffer;
using xla_ffi::CallFrame;
using xla_ffi::DataType;

// Dims past which the byte count of one buffer could overflow int64.
inline constexpr int64_t kMaxElements = int64_t{1} << 40;

inline xla_ffi::Error* MakeError(const CallFrame* frame, const char* target,
                                 xla_ffi::ErrorCode code, const std::string& message) {
  const xla_ffi::Api* api = frame->api;
  if (api == nullptr || api->struct_size < offsetof(xla_ffi::Api, error_create) + sizeof(void*) ||
      api->error_create == nullptr) {
    return nullptr;  // no way to say it; the runtime never hands out such an api
  }
  std::string text = std::string(target) + ": " + message;
  xla_ffi::ErrorCreateArgs args;
  std::memset(static_cast<void*>(&args), 0, sizeof(args));
  args.struct_size = offsetof(xla_ffi::ErrorCreateArgs, errc) + sizeof(args.errc);
  args.message = text.c_str();
  args.errc = code;
  return api->error_create(&args);
}

inline std::string DimsText(const Buffer* b) {
  std::string s = "[";
  for (int64_t i = 0; i < b->rank; ++i) s += (i ? ", " : "") + std::to_string(b->dims[i]);
  return s + "]";
}

inline const char* DataTypeName(DataType t) {
  switch (t) {
    case DataType::kS32:
      return "s32";
    case DataType::kU16:
      return "u16";
    case DataType::kF32:
      return "f32";
    case DataType::kBF16:
      return "bf16";
  }
  return "another element type";
}

// An operand's element type where it is a readable buffer, else nullopt (CheckBuffer then says
// why).
inline std::optional<DataType> ArgDataType(void* raw, int type) {
  const Buffer* b = static_cast<const Buffer*>(raw);
  if (type != xla_ffi::kArgTypeBuffer || b == nullptr ||
      b->struct_size < offsetof(Buffer, dims) + sizeof(b->dims))
    return std::nullopt;
  return b->dtype;
}

// One operand or result, checked: a buffer of `dtype` and `rank`, dims >= 0.
inline const Buffer* CheckBuffer(void* raw, int type, const char* name, DataType dtype,
                                 int64_t rank, std::string* why) {
  const Buffer* b = static_cast<const Buffer*>(raw);
  if (type != xla_ffi::kArgTypeBuffer || b == nullptr ||
      b->struct_size < offsetof(Buffer, dims) + sizeof(b->dims)) {
    *why = std::string(name) + " is not a buffer";
    return nullptr;
  }
  if (b->dtype != dtype) {
    *why = std::string(name) + " must be " + DataTypeName(dtype) + ", got " +
           DataTypeName(b->dtype) + " (element type " + std::to_string(static_cast<int>(b->dtype)) +
           ")";
    return nullptr;
  }
  if (b->rank != rank || (rank > 0 && b->dims == nullptr)) {
    *why = std::string(name) + " must have rank " + std::to_string(rank) + ", got " +
           std::to_string(b->rank);
    return nullptr;
  }
  int64_t elements = 1;
  for (int64_t i = 0; i < rank; ++i) {
    if (b->dims[i] < 0 || b->dims[i] > kMaxElements || (elements *= b->dims[i]) > kMaxElements) {
      *why = std::string(name) + " has dims " + DimsText(b) + ", out of range";
      return nullptr;
    }
  }
  if (elements > 0 && b->data == nullptr) {
    *why = std::string(name) + " has no data";
    return nullptr;
  }
  return b;
}

inline bool SameDims(const Buffer* b, std::initializer_list<int64_t> dims) {
  int64_t i = 0;
  for (int64_t want : dims) {
    if (b->dims[i++] != want) return false;
  }
  return true;
}

// What one operand or the result must be.
struct BufferSpec {
  const char* name;
  DataType dtype;
  int64_t rank;
};

// Checks the call's operands against `operands` and its one result against
// `result`, in that order; fills `out` (operands, then the result) or says
// why not.
template <size_t N>
bool CheckCall(const CallFrame* frame, const BufferSpec (&operands)[N], const BufferSpec& result,
               const Buffer* (&out)[N + 1], std::string* why) {
  const xla_ffi::Args& args = frame->args;
  const xla_ffi::Rets& rets = frame->rets;
  if (args.size != static_cast<int64_t>(N) || args.types == nullptr || args.args == nullptr) {
    std::string names;
    for (const BufferSpec& spec : operands)
      names += (names.empty() ? "" : ", ") + std::string(spec.name);
    *why = "expects " + std::to_string(N) + " operands (" + names + "), got " +
           std::to_string(args.size);
    return false;
  }
  if (rets.size != 1 || rets.types == nullptr || rets.rets == nullptr) {
    *why = "expects 1 result, got " + std::to_string(rets.size);
    return false;
  }
  for (size_t i = 0; i <= N; ++i) {
    const BufferSpec& spec = i < N ? operands[i] : result;
    out[i] = i < N
                 ? CheckBuffer(args.args[i], args.types[i], spec.name, spec.dtype, spec.rank, why)
                 : CheckBuffer(rets.rets[0], rets.types[0], spec.name, spec.dtype, spec.rank, why);
    if (out[i] == nullptr) return false;
  }
  return true;
}

// One handler body for every target: the registration handshake, then decode
// (INVALID_ARGUMENT when the call is malformed) and run (INTERNAL when out of memory).
template <class Args, bool (*Decode)(const CallFrame*, Args*, std::string*),
          bool (*Run)(const Args&, std::string*)>
xla_ffi::Error* Handle(CallFrame* frame, const char* target) {
  if (frame == nullptr) return nullptr;
  // The registration handshake: fill in the API version and traits, run nothing.
  const xla_ffi::ExtensionBase* ext = frame->extension_start;
  if (ext != nullptr && ext->type == xla_ffi::kExtensionTypeMetadata) {
    auto* metadata = reinterpret_cast<const xla_ffi::MetadataExtension*>(ext)->metadata;
    if (metadata != nullptr) {
      metadata->api_version.struct_size =
          offsetof(xla_ffi::ApiVersion, minor_version) + sizeof(int);
      metadata->api_version.extension_start = nullptr;
      metadata->api_version.major_version = xla_ffi::kApiMajor;
      metadata->api_version.minor_version = xla_ffi::kApiMinor;
      metadata->traits = 0;
    }
    return nullptr;
  }
  if (frame->struct_size < offsetof(CallFrame, rets) + sizeof(xla_ffi::Rets)) {
    return MakeError(frame, target, xla_ffi::ErrorCode::kInvalidArgument,
                     "call frame is older than this handler");
  }
  if (frame->stage != xla_ffi::ExecutionStage::kExecute) return nullptr;
  Args args;
  std::string why;
  if (!Decode(frame, &args, &why))
    return MakeError(frame, target, xla_ffi::ErrorCode::kInvalidArgument, why);
  if (!Run(args, &why)) return MakeError(frame, target, xla_ffi::ErrorCode::kInternal, why);
  return nullptr;
}

// Registers one handler; "" when it is, else why not.
inline std::string RegisterOne(const Plugin& plugin, const xla_ffi::PjrtFfiExtension* ffi,
                               const char* target, xla_ffi::Error* (*handler)(CallFrame*)) {
  xla_ffi::PjrtRegisterHandlerArgs args;
  std::memset(static_cast<void*>(&args), 0, sizeof(args));
  args.struct_size = xla_ffi::kPjrtRegisterHandlerArgsSize;
  args.target_name = target;
  args.target_name_size = std::strlen(target);
  args.handler = reinterpret_cast<void*>(handler);
  // XLA CPU's name for its platform in the custom-call registry.
  args.platform_name = "Host";
  args.platform_name_size = 4;
  Status status = plugin.TakeError(static_cast<pjrt::Error*>(ffi->register_handler(&args)));
  return status.ok() ? std::string()
                     : std::string("registering ") + target + " failed: " + status.message;
}

}  // namespace ffi
}  // namespace pjrt_score
