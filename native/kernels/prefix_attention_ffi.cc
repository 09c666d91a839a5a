#include "kernels/prefix_attention_ffi.h"

#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "kernels/prefix_attention.h"
#include "kernels/xla_ffi.h"

namespace pjrt_score {
namespace {

using xla_ffi::Buffer;
using xla_ffi::CallFrame;
using xla_ffi::DataType;

// Dims past which the byte count of one buffer could overflow int64.
constexpr int64_t kMaxElements = int64_t{1} << 40;

xla_ffi::Error* MakeError(const CallFrame* frame, const char* target, xla_ffi::ErrorCode code,
                          const std::string& message) {
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

std::string DimsText(const Buffer* b) {
  std::string s = "[";
  for (int64_t i = 0; i < b->rank; ++i) s += (i ? ", " : "") + std::to_string(b->dims[i]);
  return s + "]";
}

// One operand or result, checked: a buffer of `dtype` and `rank`, dims >= 0.
const Buffer* CheckBuffer(void* raw, int type, const char* name, DataType dtype, int64_t rank,
                          std::string* why) {
  const Buffer* b = static_cast<const Buffer*>(raw);
  if (type != xla_ffi::kArgTypeBuffer || b == nullptr ||
      b->struct_size < offsetof(Buffer, dims) + sizeof(b->dims)) {
    *why = std::string(name) + " is not a buffer";
    return nullptr;
  }
  if (b->dtype != dtype) {
    *why = std::string(name) + " must be " + (dtype == DataType::kF32 ? "f32" : "s32") +
           ", got element type " + std::to_string(static_cast<int>(b->dtype));
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

bool SameDims(const Buffer* b, std::initializer_list<int64_t> dims) {
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

bool CheckHeads(int64_t hq, int64_t hkv, std::string* why) {
  if (hkv == 0 || hq % hkv != 0) {
    *why = "query heads (" + std::to_string(hq) + ") must be a multiple of kv heads (" +
           std::to_string(hkv) + ")";
    return false;
  }
  return true;
}

// Reads and cross-checks the prefix call's operands; fills `out` or says why not.
bool DecodePrefix(const CallFrame* frame, PrefixAttentionArgs* out, std::string* why) {
  static const BufferSpec kOperands[] = {
      {"item q", DataType::kF32, 4},        {"item k", DataType::kF32, 4},
      {"item v", DataType::kF32, 4},        {"item lengths", DataType::kS32, 1},
      {"prefix k", DataType::kF32, 3},      {"prefix v", DataType::kF32, 3},
      {"prefix length", DataType::kS32, 0},
  };
  const Buffer* b[8];
  if (!CheckCall(frame, kOperands, {"result", DataType::kF32, 4}, b, why)) return false;
  const Buffer *q = b[0], *k = b[1], *v = b[2], *len = b[3], *pk = b[4], *pv = b[5], *plen = b[6],
               *o = b[7];
  const int64_t n = q->dims[0], l = q->dims[1], hq = q->dims[2], d = q->dims[3];
  const int64_t hkv = k->dims[2], p = pk->dims[0];
  if (!SameDims(k, {n, l, hkv, d}) || !SameDims(v, {n, l, hkv, d})) {
    *why = "item k " + DimsText(k) + " and v " + DimsText(v) +
           " must be [N, L, Hkv, D] of item q " + DimsText(q);
    return false;
  }
  if (!CheckHeads(hq, hkv, why)) return false;
  if (!SameDims(len, {n})) {
    *why = "item lengths " + DimsText(len) + " must be [N] = [" + std::to_string(n) + "]";
    return false;
  }
  if (!SameDims(pk, {p, hkv, d}) || !SameDims(pv, {p, hkv, d})) {
    *why = "prefix k " + DimsText(pk) + " and v " + DimsText(pv) +
           " must be [P, Hkv, D] with Hkv = " + std::to_string(hkv) + ", D = " + std::to_string(d);
    return false;
  }
  if (!SameDims(o, {n, l, hq, d})) {
    *why = "result " + DimsText(o) + " must be [N, L, Hq, D] = " + DimsText(q);
    return false;
  }
  out->n = n;
  out->l = l;
  out->hq = hq;
  out->hkv = hkv;
  out->d = d;
  out->p = p;
  out->item_q = static_cast<const float*>(q->data);
  out->item_k = static_cast<const float*>(k->data);
  out->item_v = static_cast<const float*>(v->data);
  out->item_lengths = static_cast<const int32_t*>(len->data);
  out->prefix_k = static_cast<const float*>(pk->data);
  out->prefix_v = static_cast<const float*>(pv->data);
  out->prefix_length = *static_cast<const int32_t*>(plen->data);
  out->out = static_cast<float*>(o->data);
  return true;
}

// Reads and cross-checks the causal call's operands: q [T, Hq, D], k, v [T, Hkv, D], valid
// length s32 []; result [T, Hq, D].
bool DecodeCausal(const CallFrame* frame, CausalAttentionArgs* out, std::string* why) {
  static const BufferSpec kOperands[] = {
      {"q", DataType::kF32, 3},
      {"k", DataType::kF32, 3},
      {"v", DataType::kF32, 3},
      {"valid length", DataType::kS32, 0},
  };
  const Buffer* b[5];
  if (!CheckCall(frame, kOperands, {"result", DataType::kF32, 3}, b, why)) return false;
  const Buffer *q = b[0], *k = b[1], *v = b[2], *len = b[3], *o = b[4];
  const int64_t t = q->dims[0], hq = q->dims[1], d = q->dims[2], hkv = k->dims[1];
  if (!SameDims(k, {t, hkv, d}) || !SameDims(v, {t, hkv, d})) {
    *why =
        "k " + DimsText(k) + " and v " + DimsText(v) + " must be [T, Hkv, D] of q " + DimsText(q);
    return false;
  }
  if (!CheckHeads(hq, hkv, why)) return false;
  if (!SameDims(o, {t, hq, d})) {
    *why = "result " + DimsText(o) + " must be [T, Hq, D] = " + DimsText(q);
    return false;
  }
  out->t = t;
  out->hq = hq;
  out->hkv = hkv;
  out->d = d;
  out->q = static_cast<const float*>(q->data);
  out->k = static_cast<const float*>(k->data);
  out->v = static_cast<const float*>(v->data);
  out->valid_length = *static_cast<const int32_t*>(len->data);
  out->out = static_cast<float*>(o->data);
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

xla_ffi::Error* PrefixHandler(CallFrame* frame) {
  return Handle<PrefixAttentionArgs, DecodePrefix, RunPrefixAttention>(frame,
                                                                       kPrefixAttentionTarget);
}

xla_ffi::Error* CausalHandler(CallFrame* frame) {
  return Handle<CausalAttentionArgs, DecodeCausal, RunCausalAttention>(frame,
                                                                       kCausalAttentionTarget);
}

xla_ffi::Error* PrefixBf16Handler(CallFrame* frame) {
  return Handle<PrefixAttentionArgs, DecodePrefix, RunPrefixAttentionBf16>(
      frame, kPrefixAttentionBf16Target);
}

xla_ffi::Error* CausalBf16Handler(CallFrame* frame) {
  return Handle<CausalAttentionArgs, DecodeCausal, RunCausalAttentionBf16>(
      frame, kCausalAttentionBf16Target);
}

// Registers one handler; "" when it is, else why not.
std::string RegisterOne(const Plugin& plugin, const xla_ffi::PjrtFfiExtension* ffi,
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

}  // namespace

bool RegisterAttentionKernels(const Plugin& plugin, std::string* why) {
  static std::mutex mu;
  static std::map<const Plugin*, std::string> done;  // plugin -> "" (registered) or why not
  std::lock_guard<std::mutex> lock(mu);
  auto found = done.find(&plugin);
  if (found == done.end()) {
    std::string result;
    const auto* ffi = static_cast<const xla_ffi::PjrtFfiExtension*>(
        plugin.FindExtension(xla_ffi::kPjrtExtensionTypeFfi));
    if (ffi == nullptr) {
      result = "the plugin has no FFI extension";
    } else if (ffi->base.struct_size <
                   offsetof(xla_ffi::PjrtFfiExtension, register_handler) + sizeof(void*) ||
               ffi->register_handler == nullptr) {
      result = "the plugin's FFI extension cannot register handlers";
    } else {
      result = RegisterOne(plugin, ffi, kPrefixAttentionTarget, &PrefixHandler);
      if (result.empty()) result = RegisterOne(plugin, ffi, kCausalAttentionTarget, &CausalHandler);
      if (result.empty())
        result = RegisterOne(plugin, ffi, kPrefixAttentionBf16Target, &PrefixBf16Handler);
      if (result.empty())
        result = RegisterOne(plugin, ffi, kCausalAttentionBf16Target, &CausalBf16Handler);
    }
    found = done.emplace(&plugin, result).first;
  }
  *why = found->second;
  return found->second.empty();
}

}  // namespace pjrt_score
