// How the projections' matmul kernels (matmul_bf16.cc, matmul_f32.cc) hand a call's tiles to the
// pool's threads: each column panel's row tiles in `splits` runs of consecutive tiles, enough tasks
// that the threads finish together. One task per panel left a thread idle for up to a panel's
// product at the end of each call (a quarter of a millisecond for the down projection of 500
// rows), some 120 times a pass.
#pragma once

#include <algorithm>
#include <cstdint>

namespace pjrt_score {

class MatmulSplit {
 public:
  MatmulSplit(int64_t panels, int64_t row_tiles, int threads)
      : panels_(panels), row_tiles_(row_tiles) {
    const int64_t want = kTasksPerThread * std::max(threads, 1);
    const int64_t splits = (want + panels - 1) / std::max<int64_t>(panels, 1);
    splits_ = std::max<int64_t>(1, std::min(splits, row_tiles / kMinTilesPerTask));
  }

  int64_t tasks() const { return panels_ * splits_; }

  // Task `i`: panel and its row tiles [tile0, tile1); a panel's runs are consecutive tasks.
  struct Task {
    int64_t panel, tile0, tile1;
  };
  Task At(int64_t i) const {
    const int64_t panel = i / splits_, run = i % splits_;
    return {panel, row_tiles_ * run / splits_, row_tiles_ * (run + 1) / splits_};
  }

 private:
  static constexpr int64_t kTasksPerThread = 32;
  static constexpr int64_t kMinTilesPerTask = 4;
  int64_t panels_, row_tiles_, splits_ = 1;
};

}  // namespace pjrt_score
