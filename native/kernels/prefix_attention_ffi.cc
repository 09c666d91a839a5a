#include "kernels/prefix_attention_ffi.h"

#include <string>

#include "kernels/attention_rope.h"
#include "kernels/ffi_handler.h"
#include "kernels/prefix_attention.h"
#include "kernels/thread_scratch.h"

namespace pjrt_score {
namespace {

using ffi::Buffer;
using ffi::BufferSpec;
using ffi::CallFrame;
using ffi::CheckCall;
using ffi::DataType;
using ffi::DimsText;
using ffi::SameDims;

// Its ThreadScratch buffer (the matmul kernels' are 0-6).
constexpr int kRopeScratch = 7;

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

// A packed pass's attention in one call: the query's causal attention, then its items over it.
struct QueryItemsAttentionArgs {
  CausalAttentionArgs query;  // into the result's first P rows
  PrefixAttentionArgs items;  // into the rows after them
};

// Reads and cross-checks the joined call's operands: the query's q (scaled) [P, Hq, D], k, v
// [P, Hkv, D] and length s32 [], then the items' q (scaled) [N, L, Hq, D], k, v [N, L, Hkv, D] and
// lengths [N]; result [P + N L, Hq, D].
bool DecodeQueryItems(const CallFrame* frame, QueryItemsAttentionArgs* out, std::string* why) {
  static const BufferSpec kOperands[] = {
      {"q", DataType::kF32, 3},      {"k", DataType::kF32, 3},
      {"v", DataType::kF32, 3},      {"prefix length", DataType::kS32, 0},
      {"item q", DataType::kF32, 4}, {"item k", DataType::kF32, 4},
      {"item v", DataType::kF32, 4}, {"item lengths", DataType::kS32, 1},
  };
  const Buffer* b[9];
  if (!CheckCall(frame, kOperands, {"result", DataType::kF32, 3}, b, why)) return false;
  const Buffer *q = b[0], *k = b[1], *v = b[2], *plen = b[3], *iq = b[4], *ik = b[5], *iv = b[6],
               *len = b[7], *o = b[8];
  const int64_t p = q->dims[0], hq = q->dims[1], d = q->dims[2], hkv = k->dims[1];
  const int64_t n = iq->dims[0], l = iq->dims[1];
  if (!SameDims(k, {p, hkv, d}) || !SameDims(v, {p, hkv, d})) {
    *why =
        "k " + DimsText(k) + " and v " + DimsText(v) + " must be [P, Hkv, D] of q " + DimsText(q);
    return false;
  }
  if (!CheckHeads(hq, hkv, why)) return false;
  if (!SameDims(iq, {n, l, hq, d}) || !SameDims(ik, {n, l, hkv, d}) ||
      !SameDims(iv, {n, l, hkv, d})) {
    *why = "item q " + DimsText(iq) + ", k " + DimsText(ik) + " and v " + DimsText(iv) +
           " must be [N, L, Hq, D] and [N, L, Hkv, D] with the heads and D of q " + DimsText(q);
    return false;
  }
  if (!SameDims(len, {n})) {
    *why = "item lengths " + DimsText(len) + " must be [N] = [" + std::to_string(n) + "]";
    return false;
  }
  if (!SameDims(o, {p + n * l, hq, d})) {
    *why = "result " + DimsText(o) + " must be [P + N L, Hq, D] = [" + std::to_string(p + n * l) +
           ", " + std::to_string(hq) + ", " + std::to_string(d) + "]";
    return false;
  }
  const int32_t prefix_length = *static_cast<const int32_t*>(plen->data);
  float* result = static_cast<float*>(o->data);
  CausalAttentionArgs& a = out->query;
  a.t = p;
  a.hq = hq;
  a.hkv = hkv;
  a.d = d;
  a.q = static_cast<const float*>(q->data);
  a.k = static_cast<const float*>(k->data);
  a.v = static_cast<const float*>(v->data);
  a.valid_length = prefix_length;
  a.out = result;
  PrefixAttentionArgs& i = out->items;
  i.n = n;
  i.l = l;
  i.hq = hq;
  i.hkv = hkv;
  i.d = d;
  i.p = p;
  i.item_q = static_cast<const float*>(iq->data);
  i.item_k = static_cast<const float*>(ik->data);
  i.item_v = static_cast<const float*>(iv->data);
  i.item_lengths = static_cast<const int32_t*>(len->data);
  i.prefix_k = a.k;
  i.prefix_v = a.v;
  i.prefix_length = prefix_length;
  i.out = result + p * hq * d;
  return true;
}

template <bool (*kRunQuery)(const CausalAttentionArgs&, std::string*),
          bool (*kRunItems)(const PrefixAttentionArgs&, std::string*)>
bool RunQueryItems(const QueryItemsAttentionArgs& a, std::string* error) {
  return kRunQuery(a.query, error) && kRunItems(a.items, error);
}

// The joined call on the q | k | v projection itself: RoPE, the score scale and the split into the
// kernels' operands in the call (attention_rope.h), then the two kernels.
struct QueryItemsRopeArgs {
  RopeSplitArgs split;
  QueryItemsAttentionArgs attention;
};

// Its operands: qkv [P + N L, (Hq + 2 Hkv) D], the query's cos and sin [P, D / 2], the items' [N,
// L, D / 2], the score scale f32 [], the prefix length s32 [], the item lengths [N]; result [P + N
// L, Hq, D]. The arrays the kernels read are filled by Run (the split's pointers).
bool DecodeQueryItemsRope(const CallFrame* frame, QueryItemsRopeArgs* out, std::string* why) {
  static const BufferSpec kOperands[] = {
      {"qkv", DataType::kF32, 2},           {"query cos", DataType::kF32, 2},
      {"query sin", DataType::kF32, 2},     {"item cos", DataType::kF32, 3},
      {"item sin", DataType::kF32, 3},      {"score scale", DataType::kF32, 0},
      {"prefix length", DataType::kS32, 0}, {"item lengths", DataType::kS32, 1},
  };
  const Buffer* b[9];
  if (!CheckCall(frame, kOperands, {"result", DataType::kF32, 3}, b, why)) return false;
  const Buffer *qkv = b[0], *qc = b[1], *qs = b[2], *ic = b[3], *is = b[4], *scale = b[5],
               *plen = b[6], *len = b[7], *o = b[8];
  const int64_t t = o->dims[0], hq = o->dims[1], d = o->dims[2];
  const int64_t p = qc->dims[0], n = ic->dims[0], l = ic->dims[1], half = d / 2;
  if (d == 0 || d % 2 != 0) {
    *why = "result " + DimsText(o) + " must have an even head dim D > 0 (RoPE pairs)";
    return false;
  }
  const int64_t heads = qkv->dims[1] / d, hkv = (heads - hq) / 2;
  if (qkv->dims[0] != t || qkv->dims[1] % d != 0 || heads <= hq || (heads - hq) % 2 != 0) {
    *why = "qkv " + DimsText(qkv) + " must be [T, (Hq + 2 Hkv) D] for the result " + DimsText(o);
    return false;
  }
  if (!CheckHeads(hq, hkv, why)) return false;
  if (!SameDims(qc, {p, half}) || !SameDims(qs, {p, half}) || !SameDims(ic, {n, l, half}) ||
      !SameDims(is, {n, l, half}) || p + n * l != t) {
    *why = "query cos " + DimsText(qc) + " and sin " + DimsText(qs) + ", item cos " + DimsText(ic) +
           " and sin " + DimsText(is) +
           " must be [P, D / 2] and [N, L, D / 2] with P + N L = " + std::to_string(t) +
           " rows and D / 2 = " + std::to_string(half);
    return false;
  }
  if (!SameDims(len, {n})) {
    *why = "item lengths " + DimsText(len) + " must be [N] = [" + std::to_string(n) + "]";
    return false;
  }
  RopeSplitArgs& r = out->split;
  r.p = p;
  r.items = n * l;
  r.hq = hq;
  r.hkv = hkv;
  r.d = d;
  r.qkv = static_cast<const float*>(qkv->data);
  r.query_cos = static_cast<const float*>(qc->data);
  r.query_sin = static_cast<const float*>(qs->data);
  r.item_cos = static_cast<const float*>(ic->data);
  r.item_sin = static_cast<const float*>(is->data);
  r.scale = *static_cast<const float*>(scale->data);
  const int32_t prefix_length = *static_cast<const int32_t*>(plen->data);
  float* result = static_cast<float*>(o->data);
  CausalAttentionArgs& a = out->attention.query;
  a.t = p;
  a.hq = hq;
  a.hkv = hkv;
  a.d = d;
  a.valid_length = prefix_length;
  a.out = result;
  PrefixAttentionArgs& i = out->attention.items;
  i.n = n;
  i.l = l;
  i.hq = hq;
  i.hkv = hkv;
  i.d = d;
  i.p = p;
  i.item_lengths = static_cast<const int32_t*>(len->data);
  i.prefix_length = prefix_length;
  i.out = result + p * hq * d;
  return true;
}

template <bool (*kRunQuery)(const CausalAttentionArgs&, std::string*),
          bool (*kRunItems)(const PrefixAttentionArgs&, std::string*)>
bool RunQueryItemsRope(const QueryItemsRopeArgs& args, std::string* error) {
  RopeSplitArgs r = args.split;
  const int64_t t = r.p + r.items, width = (r.hq + 2 * r.hkv) * r.d;
  // The kernels' operands, in this thread's scratch (kept between calls: no allocation per layer).
  float* rows = ThreadScratch<float, kRopeScratch>(t * width);
  if (rows == nullptr) {
    *error = "could not allocate " + std::to_string(t * width * 4) + " bytes of rotated rows";
    return false;
  }
  r.query_q = rows;
  r.query_k = r.query_q + r.p * r.hq * r.d;
  r.query_v = r.query_k + r.p * r.hkv * r.d;
  r.item_q = r.query_v + r.p * r.hkv * r.d;
  r.item_k = r.item_q + r.items * r.hq * r.d;
  r.item_v = r.item_k + r.items * r.hkv * r.d;
  RopeSplit(r);
  QueryItemsAttentionArgs a = args.attention;
  a.query.q = r.query_q;
  a.query.k = r.query_k;
  a.query.v = r.query_v;
  a.items.item_q = r.item_q;
  a.items.item_k = r.item_k;
  a.items.item_v = r.item_v;
  a.items.prefix_k = r.query_k;
  a.items.prefix_v = r.query_v;
  return kRunQuery(a.query, error) && kRunItems(a.items, error);
}

}  // namespace

xla_ffi::Error* QueryItemsAttentionRopeHandler(CallFrame* frame) {
  return ffi::Handle<QueryItemsRopeArgs, DecodeQueryItemsRope,
                     RunQueryItemsRope<RunCausalAttention, RunPrefixAttention>>(
      frame, kQueryItemsAttentionRopeTarget);
}

xla_ffi::Error* QueryItemsAttentionRopeBf16Handler(CallFrame* frame) {
  return ffi::Handle<QueryItemsRopeArgs, DecodeQueryItemsRope,
                     RunQueryItemsRope<RunCausalAttentionBf16, RunPrefixAttentionBf16>>(
      frame, kQueryItemsAttentionRopeBf16Target);
}

xla_ffi::Error* QueryItemsAttentionHandler(CallFrame* frame) {
  return ffi::Handle<QueryItemsAttentionArgs, DecodeQueryItems,
                     RunQueryItems<RunCausalAttention, RunPrefixAttention>>(
      frame, kQueryItemsAttentionTarget);
}

xla_ffi::Error* QueryItemsAttentionBf16Handler(CallFrame* frame) {
  return ffi::Handle<QueryItemsAttentionArgs, DecodeQueryItems,
                     RunQueryItems<RunCausalAttentionBf16, RunPrefixAttentionBf16>>(
      frame, kQueryItemsAttentionBf16Target);
}

xla_ffi::Error* PrefixAttentionHandler(CallFrame* frame) {
  return ffi::Handle<PrefixAttentionArgs, DecodePrefix, RunPrefixAttention>(frame,
                                                                            kPrefixAttentionTarget);
}

xla_ffi::Error* CausalAttentionHandler(CallFrame* frame) {
  return ffi::Handle<CausalAttentionArgs, DecodeCausal, RunCausalAttention>(frame,
                                                                            kCausalAttentionTarget);
}

xla_ffi::Error* PrefixAttentionBf16Handler(CallFrame* frame) {
  return ffi::Handle<PrefixAttentionArgs, DecodePrefix, RunPrefixAttentionBf16>(
      frame, kPrefixAttentionBf16Target);
}

xla_ffi::Error* CausalAttentionBf16Handler(CallFrame* frame) {
  return ffi::Handle<CausalAttentionArgs, DecodeCausal, RunCausalAttentionBf16>(
      frame, kCausalAttentionBf16Target);
}

}  // namespace pjrt_score
