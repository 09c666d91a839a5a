#include "kernels/matmul_bf16_ffi.h"

#include <algorithm>
#include <string>

#include "kernels/ffi_handler.h"
#include "kernels/matmul_bf16.h"

namespace pjrt_score {
namespace {

using ffi::Buffer;
using ffi::CallFrame;
using ffi::DataType;
using ffi::DimsText;

// Reads and cross-checks the call's operands: x f32 [T, K], w [Ly, K, N] (f32, u16 or bf16),
// layer s32 []; result f32 [T, N].
bool DecodeMatmul(const CallFrame* frame, MatmulBf16Args* out, std::string* why) {
  const xla_ffi::Args& args = frame->args;
  const xla_ffi::Rets& rets = frame->rets;
  if (args.size != 3 || args.types == nullptr || args.args == nullptr) {
    *why = "expects 3 operands (x, weights, layer), got " + std::to_string(args.size);
    return false;
  }
  if (rets.size != 1 || rets.types == nullptr || rets.rets == nullptr) {
    *why = "expects 1 result, got " + std::to_string(rets.size);
    return false;
  }
  const Buffer* x = ffi::CheckBuffer(args.args[0], args.types[0], "x", DataType::kF32, 2, why);
  if (x == nullptr) return false;
  const Buffer* w = static_cast<const Buffer*>(args.args[1]);
  DataType w_type = DataType::kF32;
  if (args.types[1] == xla_ffi::kArgTypeBuffer && w != nullptr &&
      w->struct_size >= offsetof(Buffer, dims) + sizeof(w->dims) &&
      (w->dtype == DataType::kU16 || w->dtype == DataType::kBF16)) {
    w_type = w->dtype;
  }
  w = ffi::CheckBuffer(args.args[1], args.types[1], "weights", w_type, 3, why);
  if (w == nullptr) return false;
  const Buffer* layer =
      ffi::CheckBuffer(args.args[2], args.types[2], "layer", DataType::kS32, 0, why);
  if (layer == nullptr) return false;
  const Buffer* o = ffi::CheckBuffer(rets.rets[0], rets.types[0], "result", DataType::kF32, 2, why);
  if (o == nullptr) return false;
  const int64_t t = x->dims[0], k = x->dims[1], layers = w->dims[0], n = w->dims[2];
  if (w->dims[1] != k || layers == 0) {
    *why = "weights " + DimsText(w) + " must be [Ly >= 1, K, N] with K = " + std::to_string(k) +
           " of x " + DimsText(x);
    return false;
  }
  if (o->dims[0] != t || o->dims[1] != n) {
    *why = "result " + DimsText(o) + " must be [T, N] = [" + std::to_string(t) + ", " +
           std::to_string(n) + "]";
    return false;
  }
  const int64_t l = std::clamp<int64_t>(*static_cast<const int32_t*>(layer->data), 0, layers - 1);
  const bool f32 = w_type == DataType::kF32;
  out->t = t;
  out->k = k;
  out->n = n;
  out->x = static_cast<const float*>(x->data);
  out->w_type = f32 ? MatmulBf16Args::Weights::kF32 : MatmulBf16Args::Weights::kBf16Bits;
  out->w = static_cast<const char*>(w->data) + l * k * n * (f32 ? 4 : 2);
  out->out = static_cast<float*>(o->data);
  return true;
}

}  // namespace

xla_ffi::Error* MatmulBf16Handler(CallFrame* frame) {
  return ffi::Handle<MatmulBf16Args, DecodeMatmul, RunMatmulBf16>(frame, kMatmulBf16Target);
}

}  // namespace pjrt_score
