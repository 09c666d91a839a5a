// A packed pass's q | k | v projection made ready for its attention kernels, in the call that runs
// them (prefix_attention_ffi.cc, `pjrt_score_query_items_attention_rope`): each row's q and k heads
// rotated (RoPE, rotate-half pairing: element j with j + D/2) by its position's cos and sin, q then
// times the score scale, v copied; the query's rows and the items' into the arrays the kernels
// take. The same f32 operations in the same order as the program's XLA loops
// (lib/hlo/nn/functions.ts, applyRotary; the score scale after it), one rounding each.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/thread_pool.h"

namespace pjrt_score {

struct RopeSplitArgs {
  int64_t p = 0, items = 0, hq = 0, hkv = 0, d = 0;  // items: N L rows after the P query rows
  const float* qkv = nullptr;                        // [P + N L, (Hq + 2 Hkv) D]
  const float* query_cos = nullptr;                  // [P, D / 2]
  const float* query_sin = nullptr;
  const float* item_cos = nullptr;  // [N L, D / 2]
  const float* item_sin = nullptr;
  float scale = 1.f;
  // Where the rows go: the query's q [P, Hq, D], k, v [P, Hkv, D]; the items' [N L, ...].
  float *query_q = nullptr, *query_k = nullptr, *query_v = nullptr;
  float *item_q = nullptr, *item_k = nullptr, *item_v = nullptr;
};

namespace rope {

// Heads [h][D] of src rotated into dst, each times `scale` where `scaled`.
inline void RotateHeads(const float* src, int64_t heads, int64_t d, const float* cos,
                        const float* sin, bool scaled, float scale, float* dst) {
  const int64_t half = d / 2;
  for (int64_t h = 0; h < heads; ++h) {
    const float* x = src + h * d;
    float* y = dst + h * d;
    for (int64_t j = 0; j < half; ++j) {
      const float x1 = x[j], x2 = x[j + half];
      const float a = x1 * cos[j] - x2 * sin[j];
      const float b = x2 * cos[j] + x1 * sin[j];
      y[j] = scaled ? a * scale : a;
      y[j + half] = scaled ? b * scale : b;
    }
  }
}

}  // namespace rope

inline void RopeSplit(const RopeSplitArgs& a) {
  constexpr int64_t kRowsPerTask = 16;
  const int64_t rows = a.p + a.items, width = (a.hq + 2 * a.hkv) * a.d, half = a.d / 2;
  ThreadPool::Shared().ParallelFor((rows + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t b) {
    for (int64_t r = b * kRowsPerTask; r < rows && r < (b + 1) * kRowsPerTask; ++r) {
      const bool query = r < a.p;
      const int64_t i = query ? r : r - a.p;
      const float* src = a.qkv + r * width;
      const float* cos = (query ? a.query_cos : a.item_cos) + i * half;
      const float* sin = (query ? a.query_sin : a.item_sin) + i * half;
      float* q = (query ? a.query_q : a.item_q) + i * a.hq * a.d;
      float* k = (query ? a.query_k : a.item_k) + i * a.hkv * a.d;
      float* v = (query ? a.query_v : a.item_v) + i * a.hkv * a.d;
      rope::RotateHeads(src, a.hq, a.d, cos, sin, true, a.scale, q);
      rope::RotateHeads(src + a.hq * a.d, a.hkv, a.d, cos, sin, false, 1.f, k);
      std::memcpy(v, src + (a.hq + a.hkv) * a.d, sizeof(float) * a.hkv * a.d);
    }
  });
}

}  // namespace pjrt_score
