// The rows one call of the projections' matmul kernels (matmul_bf16.cc, matmul_f32.cc) computes:
// every row, or where the call says which rows are padding (MatmulArgs::live), the live ones in
// their order. The kernels work on those rows packed together (row c is the input's Source(c)) and
// write each result row back to its place; a padding row's result is 0.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/matmul_args.h"
#include "kernels/thread_scratch.h"

namespace pjrt_score {

class MatmulRows {
 public:
  // Reads the live flags and zeroes the padding rows' results; ok() is false where the map could
  // not be allocated.
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

 private:
  // Its ThreadScratch buffer (the bf16 kernel's are 0-2, the f32 kernel's 3-5).
  static constexpr int kScratchId = 6;
  int32_t* map_ = nullptr;
  int64_t count_;
  bool ok_ = true;
};

}  // namespace pjrt_score
