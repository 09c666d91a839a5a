#include "kernels/matmul_bf16_ffi.h"

#include <algorithm>
#include <string>

#include "kernels/ffi_handler.h"
#include "kernels/matmul_bf16.h"
#include "kernels/matmul_f32.h"

namespace pjrt_score {
namespace {

using ffi::Buffer;
using ffi::CallFrame;
using ffi::DataType;
using ffi::DimsText;
using Prologue = MatmulArgs::Prologue;

// The weights operand: the stacked matrices [Ly, K, N] of f32, u16 or bf16, or their packed panels
// [Ly, ceil(N / 32), ceil(K / 2), 32, 2] of u16 or bf16 (matmul_args.h); for f32 arithmetic
// [Ly, K, N] of f32, its f32 panels [Ly, ceil(N / 32), K, 32], or the same bf16 pair panels (each
// value widened exactly).
template <bool kF32>
const Buffer* CheckWeights(void* raw, int type, std::string* why) {
  const Buffer* w = static_cast<const Buffer*>(raw);
  const bool readable = type == xla_ffi::kArgTypeBuffer && w != nullptr &&
                        w->struct_size >= offsetof(Buffer, dims) + sizeof(w->dims);
  const bool bits = readable && (w->dtype == DataType::kU16 || w->dtype == DataType::kBF16);
  if (kF32) {
    if (bits) return ffi::CheckBuffer(raw, type, "weights", w->dtype, 5, why);
    const int64_t rank = readable && w->rank == 4 ? 4 : 3;
    return ffi::CheckBuffer(raw, type, "weights", DataType::kF32, rank, why);
  }
  return ffi::CheckBuffer(raw, type, "weights", bits ? w->dtype : DataType::kF32,
                          bits && w->rank == 5 ? 5 : 3, why);
}

// Reads and cross-checks a call's operands (matmul_bf16_ffi.h: x, then the norm weights and eps for
// kRmsNorm, then the weights and the layer, then optionally the live rows); fills `out` or says why
// not.
template <Prologue kPrologue, bool kF32 = false>
bool DecodeMatmul(const CallFrame* frame, MatmulArgs* out, std::string* why) {
  const xla_ffi::Args& args = frame->args;
  const xla_ffi::Rets& rets = frame->rets;
  const bool norm = kPrologue == Prologue::kRmsNorm;
  const int64_t count = norm ? 5 : 3;
  if (args.size < count || args.size > count + 2 || args.types == nullptr || args.args == nullptr) {
    *why = "expects " + std::to_string(count) + " to " + std::to_string(count + 2) + " operands (" +
           (norm ? "x, norm weights, eps, weights, layer" : "x, weights, layer") +
           ", then optionally the live rows s32 [T] and the residual f32 [T, N]), got " +
           std::to_string(args.size);
    return false;
  }
  if (rets.size != 1 || rets.types == nullptr || rets.rets == nullptr) {
    *why = "expects 1 result, got " + std::to_string(rets.size);
    return false;
  }
  const Buffer* x = ffi::CheckBuffer(args.args[0], args.types[0], "x", DataType::kF32, 2, why);
  if (x == nullptr) return false;
  const Buffer *norms = nullptr, *eps = nullptr;
  if (norm) {
    norms = ffi::CheckBuffer(args.args[1], args.types[1], "norm weights", DataType::kF32, 2, why);
    if (norms == nullptr) return false;
    eps = ffi::CheckBuffer(args.args[2], args.types[2], "eps", DataType::kF32, 0, why);
    if (eps == nullptr) return false;
  }
  const int64_t wi = norm ? 3 : 1;
  const Buffer* w = CheckWeights<kF32>(args.args[wi], args.types[wi], why);
  if (w == nullptr) return false;
  const Buffer* layer =
      ffi::CheckBuffer(args.args[wi + 1], args.types[wi + 1], "layer", DataType::kS32, 0, why);
  if (layer == nullptr) return false;
  const Buffer* o = ffi::CheckBuffer(rets.rets[0], rets.types[0], "result", DataType::kF32, 2, why);
  if (o == nullptr) return false;
  // The optional operands, told apart by element type: the live rows (s32), then the residual
  // (f32).
  const Buffer *live = nullptr, *residual = nullptr;
  int64_t next = count;
  if (next < args.size && ffi::ArgDataType(args.args[next], args.types[next]) == DataType::kS32) {
    live = ffi::CheckBuffer(args.args[next], args.types[next], "live rows", DataType::kS32, 1, why);
    if (live == nullptr) return false;
    if (live->dims[0] != x->dims[0]) {
      *why = "live rows " + DimsText(live) + " must be [T] = [" + std::to_string(x->dims[0]) +
             "] for x " + DimsText(x);
      return false;
    }
    ++next;
  }
  if (next < args.size) {
    residual =
        ffi::CheckBuffer(args.args[next], args.types[next], "residual", DataType::kF32, 2, why);
    if (residual == nullptr) return false;
    if (residual->dims[0] != o->dims[0] || residual->dims[1] != o->dims[1]) {
      *why = "residual " + DimsText(residual) + " must be the result's shape " + DimsText(o);
      return false;
    }
    ++next;
  }
  if (next != args.size) {
    *why = "takes the live rows (s32) before the residual (f32), one of each at most";
    return false;
  }
  // Packed panels: bf16 pairs (rank 5) or f32 (rank 4: only the f32 kernel takes it).
  const bool packed = w->rank == 5 || w->rank == 4;
  const bool packed_f32 = w->rank == 4;
  const int64_t x_k = GatedPrologue(kPrologue) ? x->dims[1] / 2 : x->dims[1];
  const int64_t t = x->dims[0], layers = w->dims[0];
  // Packed panels do not say K and N exactly (both are rounded up): x and the result do.
  const int64_t k = packed ? x_k : w->dims[1], n = packed ? o->dims[1] : w->dims[2];
  const int64_t x_width = GatedPrologue(kPrologue) ? 2 * k : k;
  if (packed_f32) {
    const int64_t panels = (n + kMatmulPanelColumns - 1) / kMatmulPanelColumns;
    if (layers == 0 || x->dims[1] != x_width || w->dims[1] != panels || w->dims[2] != k ||
        w->dims[3] != kMatmulPanelColumns) {
      *why = "packed f32 weights " + DimsText(w) + " must be [Ly >= 1, ceil(N / " +
             std::to_string(kMatmulPanelColumns) + "), K, " + std::to_string(kMatmulPanelColumns) +
             "] = [Ly, " + std::to_string(panels) + ", " + std::to_string(k) + ", " +
             std::to_string(kMatmulPanelColumns) + "] for x " + DimsText(x) + " and the result " +
             DimsText(o) + (GatedPrologue(kPrologue) ? " (x's width even: gate | up)" : "");
      return false;
    }
  } else if (packed) {
    const int64_t panels = (n + kMatmulPanelColumns - 1) / kMatmulPanelColumns;
    if (layers == 0 || x->dims[1] != x_width || w->dims[1] != panels || w->dims[2] != (k + 1) / 2 ||
        w->dims[3] != kMatmulPanelColumns || w->dims[4] != 2) {
      *why = "packed weights " + DimsText(w) + " must be [Ly >= 1, ceil(N / " +
             std::to_string(kMatmulPanelColumns) + "), ceil(K / 2), " +
             std::to_string(kMatmulPanelColumns) + ", 2] = [Ly, " + std::to_string(panels) + ", " +
             std::to_string((k + 1) / 2) + ", " + std::to_string(kMatmulPanelColumns) +
             ", 2] for x " + DimsText(x) + " and the result " + DimsText(o) +
             (GatedPrologue(kPrologue) ? " (x's width even: gate | up)" : "");
      return false;
    }
  } else if (layers == 0 || x->dims[1] != x_width) {
    *why = "weights " + DimsText(w) + " must be [Ly >= 1, K, N] with " +
           (GatedPrologue(kPrologue) ? "2K" : "K") + " = " + std::to_string(x->dims[1]) + " of x " +
           DimsText(x);
    return false;
  }
  if (norm && (norms->dims[0] != layers || norms->dims[1] != k)) {
    *why = "norm weights " + DimsText(norms) + " must be [Ly, K] = [" + std::to_string(layers) +
           ", " + std::to_string(k) + "]";
    return false;
  }
  if (o->dims[0] != t || o->dims[1] != n) {
    *why = "result " + DimsText(o) + " must be [T, N] = [" + std::to_string(t) + ", " +
           std::to_string(n) + "]";
    return false;
  }
  const int64_t l = std::clamp<int64_t>(*static_cast<const int32_t*>(layer->data), 0, layers - 1);
  const bool f32 = w->dtype == DataType::kF32;
  // Elements of one layer's matrix as stored (packed: its panels, K and N rounded up).
  const int64_t layer_elements = packed_f32 ? w->dims[1] * k * kMatmulPanelColumns
                                 : packed   ? w->dims[1] * w->dims[2] * kMatmulPanelColumns * 2
                                            : k * n;
  out->t = t;
  out->k = k;
  out->n = n;
  out->prologue = kPrologue;
  out->x = static_cast<const float*>(x->data);
  if (norm) {
    out->norm = static_cast<const float*>(norms->data) + l * k;
    out->eps = *static_cast<const float*>(eps->data);
  }
  out->w_type = packed_f32 ? MatmulArgs::Weights::kPackedF32
                : packed   ? MatmulArgs::Weights::kPacked
                : f32      ? MatmulArgs::Weights::kF32
                           : MatmulArgs::Weights::kBf16Bits;
  out->w = static_cast<const char*>(w->data) + l * layer_elements * (f32 ? 4 : 2);
  out->out = static_cast<float*>(o->data);
  out->live = live != nullptr ? static_cast<const int32_t*>(live->data) : nullptr;
  out->residual = residual != nullptr ? static_cast<const float*>(residual->data) : nullptr;
  return true;
}

}  // namespace

xla_ffi::Error* MatmulBf16Handler(CallFrame* frame) {
  return ffi::Handle<MatmulArgs, DecodeMatmul<Prologue::kNone>, RunMatmulBf16>(frame,
                                                                               kMatmulBf16Target);
}

xla_ffi::Error* MatmulBf16RmsNormHandler(CallFrame* frame) {
  return ffi::Handle<MatmulArgs, DecodeMatmul<Prologue::kRmsNorm>, RunMatmulBf16>(
      frame, kMatmulBf16RmsNormTarget);
}

xla_ffi::Error* MatmulBf16SwiGluHandler(CallFrame* frame) {
  return ffi::Handle<MatmulArgs, DecodeMatmul<Prologue::kSwiGlu>, RunMatmulBf16>(
      frame, kMatmulBf16SwiGluTarget);
}

xla_ffi::Error* MatmulBf16GeGluHandler(CallFrame* frame) {
  return ffi::Handle<MatmulArgs, DecodeMatmul<Prologue::kGeGlu>, RunMatmulBf16>(
      frame, kMatmulBf16GeGluTarget);
}

xla_ffi::Error* MatmulF32Handler(CallFrame* frame) {
  return ffi::Handle<MatmulArgs, DecodeMatmul<Prologue::kNone, true>, RunMatmulF32>(
      frame, kMatmulF32Target);
}

xla_ffi::Error* MatmulF32RmsNormHandler(CallFrame* frame) {
  return ffi::Handle<MatmulArgs, DecodeMatmul<Prologue::kRmsNorm, true>, RunMatmulF32>(
      frame, kMatmulF32RmsNormTarget);
}

xla_ffi::Error* MatmulF32SwiGluHandler(CallFrame* frame) {
  return ffi::Handle<MatmulArgs, DecodeMatmul<Prologue::kSwiGlu, true>, RunMatmulF32>(
      frame, kMatmulF32SwiGluTarget);
}

xla_ffi::Error* MatmulF32GeGluHandler(CallFrame* frame) {
  return ffi::Handle<MatmulArgs, DecodeMatmul<Prologue::kGeGlu, true>, RunMatmulF32>(
      frame, kMatmulF32GeGluTarget);
}

}  // namespace pjrt_score
