// The rows one call of the projections' matmul kernels (matmul_bf16.cc, matmul_f32.cc) computes:
// every row, or where the call says which rows are padding (MatmulArgs::live), the live ones in
// their order. The kernels work on those rows packed together (row c is the input's Source(c)) and
// write each result row back to its place; a padding row's product is 0 (its result the residual,
// where the call adds one). AddResidual is the epilogue of the rows a kernel wrote.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/matmul_args.h"
#include "kernels/thread_scratch.h"

namespace pjrt_score {

class MatmulRows {
 public:
  // Reads the live flags and writes the padding rows' results (0, or the residual); ok() is false
  // where the map could not be allocated.
  explicit MatmulRows(const MatmulArgs& a) : count_(a.t) {
    if (a.live == nullptr || std::all_of(a.live, a.live + a.t, [](int32_t v) { return v != 0; }))
      return;
    map_ = ThreadScratch<int32_t, kScratchId>(a.t);
    if (map_ == nullptr) {
      ok_ = false;
      return;
    }
    count_ = 0;
    for (int64_t r = 0; r < a.t; ++r) {
      if (a.live[r] != 0)
        map_[count_++] = static_cast<int32_t>(r);
      else if (a.residual != nullptr)
        std::copy_n(a.residual + r * a.n, a.n, a.out + r * a.n);
      else
        std::fill_n(a.out + r * a.n, a.n, 0.f);
    }
  }

  bool ok() const { return ok_; }
  // Rows computed.
  int64_t count() const { return count_; }
  // Every row is computed, in place (row c is row c).
  bool all() const { return map_ == nullptr; }
  // The input (and result) row of computed row c.
  int64_t Source(int64_t c) const { return map_ == nullptr ? c : map_[c]; }

  // The epilogue: out += residual over computed rows [c0, c1), columns [col0, col0 + cols), as XLA
  // adds them (one f32 add each). Nothing where the call has no residual.
  void AddResidual(const MatmulArgs& a, int64_t c0, int64_t c1, int64_t col0, int64_t cols) const {
    if (a.residual == nullptr) return;
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t at = Source(c) * a.n + col0;
      float* out = a.out + at;
      const float* res = a.residual + at;
      for (int64_t j = 0; j < cols; ++j) out[j] = res[j] + out[j];
    }
  }

 private:
  // Its ThreadScratch buffer (the bf16 kernel's are 0-2, the f32 kernel's 3-5; 7 the joined
  // attention call's rotated rows).
  static constexpr int kScratchId = 6;
  int32_t* map_ = nullptr;
  int64_t count_;
  bool ok_ = true;
};

}  // namespace pjrt_score
