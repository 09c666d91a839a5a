#include "kernels/matmul_f32.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "kernels/kernel_isa.h"
#include "kernels/matmul_prologue.h"
#include "kernels/matmul_rows.h"
#include "kernels/matmul_split.h"
#include "kernels/thread_pool.h"
#include "kernels/thread_scratch.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/attention_ops_avx512.h"
#include "kernels/isa_target.h"
#endif

namespace pjrt_score {
namespace {

// A tile: kRows rows of x by kCols columns of w (the attention kernels' 12 x 32 register tile).
constexpr int64_t kRows = 12;
constexpr int64_t kCols = 32;
// Rows computed by the prologue per task.
constexpr int64_t kPrologueRows = 64;

// Its buffers (the bf16 kernel takes 0-2).
constexpr int kRowsScratch = 3, kTailRows = 4, kTailPanel = 5, kTaskSums = 6;

// The depth of one pass over a panel where K is deeper: a task runs its tiles over each block of
// K in turn, each tile's sums carried from block to block in f32 (Tile's `add`), the same FMA chain
// for every output, bit for bit the unblocked sums. A block's panel (512 KiB of f32) and a tile's
// rows (192 KiB) stay in L2 together; Gemma-2B's down projection (K = 16,384: a 2 MiB panel) did
// not. PR requests, highest, alternating processes (docs/performance.md, "By model"): Gemma-2B
// 7.18-7.20 -> 6.70-6.73 s, Qwen2-1.5B (K = 8,960) 4.52-4.62 -> 4.40-4.53 s.
constexpr int64_t kDepthBlock = 4096;

// c [kRows][kCols] (stride c_row) = a [kRows][k] (stride a_row) . b [k][kCols] (stride b_row).
struct PortablePath {
  static constexpr const char* kName = "portable";
  static void Tile(const float* a, int64_t a_row, const float* b, int64_t b_row, int64_t k,
                   float* c, int64_t c_row, bool add = false) {
    for (int64_t m = 0; m < kRows; ++m) {
      float acc[kCols] = {};
      if (add) std::memcpy(acc, c + m * c_row, sizeof(acc));
      for (int64_t j = 0; j < k; ++j) {
        const float x = a[m * a_row + j];
        for (int64_t n = 0; n < kCols; ++n) acc[n] = std::fma(x, b[j * b_row + n], acc[n]);
      }
      std::memcpy(c + m * c_row, acc, sizeof(acc));
    }
  }
  static void PrologueRow(const MatmulArgs& a, int64_t r, float* row) {
    matmul::PrologueRowPortable(a, r, row);
  }
  // The epilogue of a whole tile written to out (stride n): out = res + out, one add each.
  static void AddResidual(float* out, const float* res, int64_t n, int64_t rows) {
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t c = 0; c < kCols; ++c) out[m * n + c] = res[m * n + c] + out[m * n + c];
  }
  // A bf16 pair panel [ceil(k / 2)][kCols][2] -> the f32 panel [k][kCols]: each value exactly, its
  // bits the high half of the float's.
  static void WidenPanel(const uint16_t* bits, int64_t k, float* panel) {
    for (int64_t r = 0; r < k; ++r) {
      const uint16_t* pair = bits + (r / 2) * kCols * 2 + r % 2;
      for (int64_t c = 0; c < kCols; ++c) {
        const uint32_t wide = static_cast<uint32_t>(pair[2 * c]) << 16;
        std::memcpy(panel + r * kCols + c, &wide, sizeof(wide));
      }
    }
  }
};

#if defined(__x86_64__)
struct Avx512Path {
  static constexpr const char* kName = "avx512";
  static void Tile(const float* a, int64_t a_row, const float* b, int64_t b_row, int64_t k,
                   float* c, int64_t c_row, bool add = false) {
    attention::Avx512Ops::Tile12x32(a, a_row, b, b + 16, b_row, k, c, c_row, add);
  }
  static void PrologueRow(const MatmulArgs& a, int64_t r, float* row) {
    matmul::PrologueRowAvx512(a, r, row);
  }
  PJRT_SCORE_AVX512F static void AddResidual(float* out, const float* res, int64_t n,
                                             int64_t rows) {
    for (int64_t m = 0; m < rows; ++m) {
      for (int64_t c = 0; c < kCols; c += 16) {
        const __m512 sum =
            _mm512_add_ps(_mm512_loadu_ps(res + m * n + c), _mm512_loadu_ps(out + m * n + c));
        _mm512_storeu_ps(out + m * n + c, sum);
      }
    }
  }
  // PortablePath::WidenPanel: a pair of rows from each 16 dwords (row 2p in the low halves, 2p + 1
  // in the high ones), one shift and one mask (the shift masked: GCC warns of the plain one's
  // undefined pass-through).
  PJRT_SCORE_AVX512F static void WidenPanel(const uint16_t* bits, int64_t k, float* panel) {
    const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
    for (int64_t r = 0; r < k; r += 2) {
      const uint16_t* pairs = bits + (r / 2) * kCols * 2;
      for (int64_t c = 0; c < kCols; c += 16) {
        const __m512i v = _mm512_loadu_si512(pairs + 2 * c);
        _mm512_storeu_ps(panel + r * kCols + c,
                         _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, v, 16)));
        if (r + 1 < k)
          _mm512_storeu_ps(panel + (r + 1) * kCols + c,
                           _mm512_castsi512_ps(_mm512_and_si512(v, high)));
      }
    }
  }
};
#endif

// One task of a call whose K passes the depth block: its tiles' sums in a buffer of its own, the
// panel taken (widened, or its last columns copied) one depth block at a time, each block run over
// every tile before the next; then each tile's rows go out as the tail tiles' do (matmul_rows.h).
template <class Path>
bool RunDeepTask(const MatmulArgs& a, const MatmulRows& computed, const float* x,
                 const MatmulSplit::Task& task, int64_t t) {
  const int64_t k = a.k, n = a.n;
  const int64_t col0 = task.panel * kCols, cols = std::min(kCols, n - col0);
  const bool pairs = a.w_type == MatmulArgs::Weights::kPacked;
  const bool packed = pairs || a.w_type == MatmulArgs::Weights::kPackedF32;
  const int64_t tiles = task.tile1 - task.tile0;
  float* sums = ThreadScratch<float, kTaskSums>(tiles * kRows * kCols);
  float* panel = ThreadScratch<float, kTailPanel>(kDepthBlock * kCols);
  float* tail = ThreadScratch<float, kTailRows>(kRows * kDepthBlock);
  if (sums == nullptr || panel == nullptr || tail == nullptr) return false;
  const float* w = static_cast<const float*>(a.w);
  for (int64_t k0 = 0; k0 < k; k0 += kDepthBlock) {
    const int64_t depth = std::min(kDepthBlock, k - k0);
    // The panel's rows k0 .. k0 + depth: packed, as they lie; pairs, widened (k0 is even); plain,
    // in the matrix's rows, or copied with zero columns past N for the last, narrow panel.
    const float* b = packed ? w + (task.panel * k + k0) * kCols : w + k0 * n + col0;
    int64_t b_row = packed ? kCols : n;
    if (pairs) {
      const auto* bits = static_cast<const uint16_t*>(a.w) + task.panel * ((k + 1) / 2) * kCols * 2;
      Path::WidenPanel(bits + (k0 / 2) * kCols * 2, depth, panel);
      b = panel;
    } else if (!packed && cols < kCols) {
      for (int64_t r = 0; r < depth; ++r) {
        std::memcpy(panel + r * kCols, w + (k0 + r) * n + col0, cols * sizeof(float));
        std::fill_n(panel + r * kCols + cols, kCols - cols, 0.f);
      }
      b = panel;
      b_row = kCols;
    }
    for (int64_t j = 0; j < tiles; ++j) {
      const int64_t r0 = (task.tile0 + j) * kRows, rows = std::min(kRows, t - r0);
      const float* rows_at = x + r0 * k + k0;
      int64_t a_row = k;
      if (rows < kRows) {  // the last rows, zero rows past T
        for (int64_t m = 0; m < rows; ++m)
          std::memcpy(tail + m * depth, x + (r0 + m) * k + k0, depth * sizeof(float));
        std::fill_n(tail + rows * depth, (kRows - rows) * depth, 0.f);
        rows_at = tail;
        a_row = depth;
      }
      Path::Tile(rows_at, a_row, b, b_row, depth, sums + j * kRows * kCols, kCols, k0 > 0);
    }
  }
  for (int64_t j = 0; j < tiles; ++j) {
    const int64_t r0 = (task.tile0 + j) * kRows, rows = std::min(kRows, t - r0);
    for (int64_t m = 0; m < rows; ++m)
      std::memcpy(a.out + computed.Source(r0 + m) * n + col0, sums + (j * kRows + m) * kCols,
                  cols * sizeof(float));
    computed.AddResidual(a, r0, r0 + rows, col0, cols);
  }
  return true;
}

template <class Path>
bool Run(const MatmulArgs& a, std::string* error) {
  const int64_t k = a.k, n = a.n;
  if (a.t == 0 || n == 0) return true;
  if (k == 0) {
    if (a.residual != nullptr)
      std::copy_n(a.residual, a.t * n, a.out);
    else
      std::fill_n(a.out, a.t * n, 0.f);
    return true;
  }
  const MatmulRows computed(a);
  if (!computed.ok()) {
    *error = "could not allocate the map of " + std::to_string(a.t) + " rows";
    return false;
  }
  const int64_t t = computed.count();
  if (t == 0) return true;
  ThreadPool& pool = ThreadPool::Shared();
  std::atomic<bool> ok{true};
  const float* x = a.x;
  // The computed rows, packed, where a prologue computes them or some rows are skipped.
  if (a.prologue != MatmulArgs::Prologue::kNone || !computed.all()) {
    float* rows = ThreadScratch<float, kRowsScratch>(t * k);
    if (rows == nullptr) {
      *error = "could not allocate " + std::to_string(t * k * 4) + " bytes of computed rows";
      return false;
    }
    pool.ParallelFor((t + kPrologueRows - 1) / kPrologueRows, [&](int64_t b) {
      for (int64_t r = b * kPrologueRows; r < std::min(t, (b + 1) * kPrologueRows); ++r) {
        if (a.prologue == MatmulArgs::Prologue::kNone)
          std::memcpy(rows + r * k, a.x + computed.Source(r) * k, k * sizeof(float));
        else
          Path::PrologueRow(a, computed.Source(r), rows + r * k);
      }
    });
    x = rows;
  }
  const float* w = static_cast<const float*>(a.w);
  // kPacked: the bf16 kernel's pair panels, each widened to an f32 panel by the task that reads it.
  const bool pairs = a.w_type == MatmulArgs::Weights::kPacked;
  const bool packed = pairs || a.w_type == MatmulArgs::Weights::kPackedF32;
  const MatmulSplit split((n + kCols - 1) / kCols, (t + kRows - 1) / kRows, pool.threads());
  if (k > kDepthBlock) {
    pool.ParallelFor(split.tasks(), [&](int64_t i) {
      if (!RunDeepTask<Path>(a, computed, x, split.At(i), t)) ok.store(false);
    });
    if (!ok.load()) *error = "could not allocate a task's sums and panel block";
    return ok.load();
  }
  pool.ParallelFor(split.tasks(), [&](int64_t i) {
    const MatmulSplit::Task task = split.At(i);
    const int64_t col0 = task.panel * kCols, cols = std::min(kCols, n - col0);
    // Packed: the panel as it lies (zero columns past N). Plain: its columns in the matrix's rows,
    // a panel narrower than kCols (the matrix's last) copied with zero columns past N.
    const float* b = packed ? w + task.panel * k * kCols : w + col0;
    int64_t b_row = packed ? kCols : n;
    if (pairs) {
      float* panel = ThreadScratch<float, kTailPanel>(k * kCols);
      if (panel == nullptr) {
        ok.store(false);
        return;
      }
      Path::WidenPanel(static_cast<const uint16_t*>(a.w) + task.panel * ((k + 1) / 2) * kCols * 2,
                       k, panel);
      b = panel;
    } else if (!packed && cols < kCols) {
      float* panel = ThreadScratch<float, kTailPanel>(k * kCols);
      if (panel == nullptr) {
        ok.store(false);
        return;
      }
      for (int64_t i = 0; i < k; ++i) {
        std::memcpy(panel + i * kCols, w + i * n + col0, cols * sizeof(float));
        std::fill_n(panel + i * kCols + cols, kCols - cols, 0.f);
      }
      b = panel;
      b_row = kCols;
    }
    for (int64_t r0 = task.tile0 * kRows; r0 < std::min(t, task.tile1 * kRows); r0 += kRows) {
      const int64_t rows = std::min(kRows, t - r0);
      // A whole tile whose rows are one run of out's (every row, or live rows with no padding
      // between them) goes straight there.
      if (rows == kRows && cols == kCols &&
          computed.Source(r0 + kRows - 1) - computed.Source(r0) == kRows - 1) {
        const int64_t at = computed.Source(r0) * n + col0;
        Path::Tile(x + r0 * k, k, b, b_row, k, a.out + at, n);
        if (a.residual != nullptr) Path::AddResidual(a.out + at, a.residual + at, n, kRows);
        continue;
      }
      // Rows whose results are not one run (a narrow panel, skipped rows) into a tile of their own,
      // its valid part copied out; the last rows (zero rows past T) with their input copied too.
      float* tail = ThreadScratch<float, kTailRows>(kRows * k + kRows * kCols);
      if (tail == nullptr) {
        ok.store(false);
        return;
      }
      float* c = tail + kRows * k;
      if (rows == kRows) {
        Path::Tile(x + r0 * k, k, b, b_row, k, c, kCols);
      } else {
        std::memcpy(tail, x + r0 * k, rows * k * sizeof(float));
        std::fill_n(tail + rows * k, (kRows - rows) * k, 0.f);
        Path::Tile(tail, k, b, b_row, k, c, kCols);
      }
      for (int64_t m = 0; m < rows; ++m)
        std::memcpy(a.out + computed.Source(r0 + m) * n + col0, c + m * kCols,
                    cols * sizeof(float));
      computed.AddResidual(a, r0, r0 + rows, col0, cols);
    }
  });
  if (!ok.load()) *error = "could not allocate a tail tile of " + std::to_string(k * 4) + " bytes";
  return ok.load();
}

}  // namespace

const char* MatmulF32Path() {
#if defined(__x86_64__)
  if (AllowedKernelIsa() >= KernelIsa::kAvx512) return Avx512Path::kName;
#endif
  return PortablePath::kName;
}

bool RunMatmulF32(const MatmulArgs& args, std::string* error) {
#if defined(__x86_64__)
  if (std::strcmp(MatmulF32Path(), Avx512Path::kName) == 0) return Run<Avx512Path>(args, error);
#endif
  return Run<PortablePath>(args, error);
}

}  // namespace pjrt_score
