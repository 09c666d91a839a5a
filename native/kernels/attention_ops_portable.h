// The fused attention kernels' inner loops in portable C++ (any CPU, any D):
// the reference blocking every SIMD path follows (prefix_attention.cc).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/attention_blocking.h"

namespace pjrt_score {
namespace attention {

struct PortableOps {
  // s[r][c] = q[r] . key c for the step's kStepRows rows and `cols` (a multiple of 16) keys;
  // kt holds the keys in strips of 16, each strip [D][16].
  static void QkStep(const float* q, int64_t d, const float* kt, int64_t cols, float* s) {
    for (int64_t r = 0; r < kStepRows; ++r) {
      float* sr = s + r * kKeyBlock;
      for (int64_t c = 0; c < cols; c += kColTile) {
        float acc[kColTile] = {};
        const float* strip = kt + c * d;
        for (int64_t k = 0; k < d; ++k) {
          const float qk = q[r * d + k];
          for (int64_t x = 0; x < kColTile; ++x) acc[x] += qk * strip[k * kColTile + x];
        }
        for (int64_t x = 0; x < kColTile; ++x) sr[c + x] = acc[x];
      }
    }
  }
  static float Dot(const float* a, const float* b, int64_t d) {
    float s = 0.f;
    for (int64_t x = 0; x < d; ++x) s += a[x] * b[x];
    return s;
  }
  // y += w * x, d floats.
  static void Axpy(float w, const float* x, int64_t d, float* y) {
    for (int64_t j = 0; j < d; ++j) y[j] += w * x[j];
  }
  // y = c * x, d floats (in place when y == x).
  static void Scale(float c, const float* x, int64_t d, float* y) {
    for (int64_t j = 0; j < d; ++j) y[j] = c * x[j];
  }
  static float RowMax(const float* s, int64_t n) {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < n; ++c) m = std::max(m, s[c]);
    return m;
  }
  // s[c] = exp(s[c] - shift); returns their sum.
  static float ExpSum(float* s, int64_t n, float shift) {
    float sum = 0.f;
    for (int64_t c = 0; c < n; ++c) {
      s[c] = std::exp(s[c] - shift);
      sum += s[c];
    }
    return sum;
  }
  // acc[r] += sum_k w[r][k] * v[k] for the step's rows, `keys` keys (v rows D floats, v_row apart).
  static void PvStep(const float* w, const float* v, int64_t v_row, int64_t keys, int64_t d,
                     float* acc) {
    for (int64_t r = 0; r < kStepRows; ++r) {
      float* ar = acc + r * d;
      const float* wr = w + r * kKeyBlock;
      for (int64_t k = 0; k < keys; ++k) {
        const float wk = wr[k];
        const float* vk = v + k * v_row;
        for (int64_t j = 0; j < d; ++j) ar[j] += wk * vk[j];
      }
    }
  }
};

}  // namespace attention
}  // namespace pjrt_score
