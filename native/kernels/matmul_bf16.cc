#include "kernels/matmul_bf16.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "kernels/bf16_tiles_portable.h"
#include "kernels/isa_target.h"
#include "kernels/kernel_isa.h"
#include "kernels/matmul_prologue.h"
#include "kernels/matmul_rows.h"
#include "kernels/matmul_split.h"
#include "kernels/thread_pool.h"
#include "kernels/thread_scratch.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace pjrt_score {
namespace {

using attention::Bf16ToF32;
using attention::F32ToBf16;

// A tile of kRows rows of x by one panel of kCols columns of w: 16 accumulators of 16 floats.
constexpr int64_t kRows = 8;
constexpr int64_t kCols = kMatmulPanelColumns;
// Rows of x rounded per task.
constexpr int64_t kRoundRows = 64;

int64_t RoundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Its buffers (ThreadScratch; the f32 kernel takes 3-5).
constexpr int kPanel = 0, kRounded = 1, kRow = 2;

// What every path shares: the computed rows (t of them: matmul_rows.h) rounded to bf16 as rows of
// kp (K rounded up to pairs, the pad 0), and the packing of a panel: pairs of rows, [kp /
// 2][kCols][2], columns past N and the row past K 0.
struct Shape {
  const MatmulRows& rows;
  int64_t t, k, n, kp, tp;
  Shape(const MatmulArgs& a, const MatmulRows& r)
      : rows(r), t(r.count()), k(a.k), n(a.n), kp(RoundUp(a.k, 2)), tp(RoundUp(r.count(), kRows)) {}
};

uint16_t WeightBits(const MatmulArgs& a, int64_t row, int64_t col) {
  if (row >= a.k || col >= a.n) return 0;
  const int64_t i = row * a.n + col;
  return a.w_type == MatmulArgs::Weights::kF32 ? F32ToBf16(static_cast<const float*>(a.w)[i])
                                               : static_cast<const uint16_t*>(a.w)[i];
}

void PackPanelPortable(const MatmulArgs& a, const Shape& s, int64_t col0, uint16_t* panel) {
  for (int64_t p = 0; p < s.kp / 2; ++p)
    for (int64_t c = 0; c < kCols; ++c) {
      panel[(p * kCols + c) * 2] = WeightBits(a, 2 * p, col0 + c);
      panel[(p * kCols + c) * 2 + 1] = WeightBits(a, 2 * p + 1, col0 + c);
    }
}

void RoundRowsPortable(const MatmulArgs& a, const Shape& s, int64_t r0, int64_t r1, uint16_t* xa,
                       float* row) {
  for (int64_t r = r0; r < r1; ++r) {
    if (r < s.t) matmul::PrologueRowPortable(a, s.rows.Source(r), row);
    for (int64_t c = 0; c < s.kp; ++c)
      xa[r * s.kp + c] = r < s.t && c < s.k ? F32ToBf16(row[c]) : 0;
  }
}

// out[m][0, kCols) = row m of xa [kRows][kp] . panel, in f32, plus res[m][0, kCols) where res is
// given (the epilogue: res + product, one add).
void TilePortable(const uint16_t* xa, int64_t kp, const uint16_t* panel, float* const* out,
                  const float* const* res) {
  for (int64_t m = 0; m < kRows; ++m) {
    float acc[kCols] = {};
    for (int64_t p = 0; p < kp / 2; ++p) {
      const float a0 = Bf16ToF32(xa[m * kp + 2 * p]), a1 = Bf16ToF32(xa[m * kp + 2 * p + 1]);
      const uint16_t* b = panel + p * kCols * 2;
      for (int64_t c = 0; c < kCols; ++c)
        acc[c] += a0 * Bf16ToF32(b[2 * c]) + a1 * Bf16ToF32(b[2 * c + 1]);
    }
    if (res != nullptr)
      for (int64_t c = 0; c < kCols; ++c) acc[c] = res[m][c] + acc[c];
    std::memcpy(out[m], acc, sizeof(acc));
  }
}

struct PortablePath {
  static constexpr const char* kName = "portable";
  static void RoundRows(const MatmulArgs& a, const Shape& s, int64_t r0, int64_t r1, uint16_t* xa,
                        float* row) {
    RoundRowsPortable(a, s, r0, r1, xa, row);
  }
  static void PackPanel(const MatmulArgs& a, const Shape& s, int64_t col0, uint16_t* panel) {
    PackPanelPortable(a, s, col0, panel);
  }
  static void Tile(const uint16_t* xa, int64_t kp, const uint16_t* panel, float* const* out,
                   const float* const* res) {
    TilePortable(xa, kp, panel, out, res);
  }
};

#if defined(__x86_64__)
// GCC 12's avx512fintrin.h starts some intrinsics from _mm512_undefined_*(), which its own
// -Wuninitialized then reports (GCC bug 105593): quiet there only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

struct Avx512Bf16Path {
  static constexpr const char* kName = "avx512bf16";

  // Whole rows 16 floats at a time (vcvtneps2bf16: nearest even; f32 denormals read as 0).
  PJRT_SCORE_AVX512BF16 static void RoundRows(const MatmulArgs& a, const Shape& s, int64_t r0,
                                              int64_t r1, uint16_t* xa, float* row) {
    for (int64_t r = r0; r < std::min(r1, s.t); ++r) {
      const float* src = a.x + s.rows.Source(r) * s.k;
      if (a.prologue != MatmulArgs::Prologue::kNone) {
        matmul::PrologueRowAvx512(a, s.rows.Source(r), row);
        src = row;
      }
      uint16_t* dst = xa + r * s.kp;
      int64_t c = 0;
      for (; c + 16 <= s.k; c += 16) {
        const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + c));
        std::memcpy(dst + c, &h, sizeof(h));
      }
      for (; c < s.kp; ++c) dst[c] = c < s.k ? F32ToBf16(src[c]) : 0;
    }
    for (int64_t r = std::max(r0, s.t); r < r1; ++r) std::fill_n(xa + r * s.kp, s.kp, 0);
  }

  // Two rows of 16 columns -> 16 pairs: the rows' 32 values interleaved (a0 b0 a1 b1 ...).
  PJRT_SCORE_AVX512BF16 static __m512i Interleave(__m512i rows) {
    const __m512i order =
        _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(order, rows);
  }

  PJRT_SCORE_AVX512BF16 static void PackPanel(const MatmulArgs& a, const Shape& s, int64_t col0,
                                              uint16_t* panel) {
    if (col0 + kCols > s.n || s.k % 2 != 0) return PackPanelPortable(a, s, col0, panel);
    for (int64_t p = 0; p < s.kp / 2; ++p) {
      for (int64_t half = 0; half < kCols; half += 16) {
        const int64_t i0 = 2 * p * s.n + col0 + half, i1 = i0 + s.n;
        if (a.w_type == MatmulArgs::Weights::kF32) {
          const float* w = static_cast<const float*>(a.w);
          // Low 16 lanes from row 2p, high 16 from row 2p + 1.
          const __m512i rows =
              (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(w + i1), _mm512_loadu_ps(w + i0));
          _mm512_storeu_si512(panel + (p * kCols + half) * 2, Interleave(rows));
        } else {
          // Two 16-value rows straight into pairs: element 2c from row 2p's c, 2c + 1 from row 2p +
          // 1's.
          const uint16_t* w = static_cast<const uint16_t*>(a.w);
          const __m512i pairs =
              _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7,
                               38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
          const __m512i r0 = _mm512_maskz_loadu_epi16(0xffff, w + i0);
          const __m512i r1 = _mm512_maskz_loadu_epi16(0xffff, w + i1);
          _mm512_storeu_si512(panel + (p * kCols + half) * 2,
                              _mm512_permutex2var_epi16(r0, pairs, r1));
        }
      }
    }
  }

  PJRT_SCORE_AVX512BF16 static void Tile(const uint16_t* xa, int64_t kp, const uint16_t* panel,
                                         float* const* out, const float* const* res) {
    __m512 acc[kRows][2];
    for (int64_t m = 0; m < kRows; ++m) acc[m][0] = acc[m][1] = _mm512_setzero_ps();
    for (int64_t p = 0; p < kp / 2; ++p) {
      const __m512bh b0 = (__m512bh)_mm512_loadu_si512(panel + p * kCols * 2);
      const __m512bh b1 = (__m512bh)_mm512_loadu_si512(panel + p * kCols * 2 + 32);
      for (int64_t m = 0; m < kRows; ++m) {
        int32_t pair;
        std::memcpy(&pair, xa + m * kp + 2 * p, sizeof(pair));
        const __m512bh av = (__m512bh)_mm512_set1_epi32(pair);
        acc[m][0] = _mm512_dpbf16_ps(acc[m][0], av, b0);
        acc[m][1] = _mm512_dpbf16_ps(acc[m][1], av, b1);
      }
    }
    for (int64_t m = 0; m < kRows; ++m) {
      if (res != nullptr) {
        acc[m][0] = _mm512_add_ps(_mm512_loadu_ps(res[m]), acc[m][0]);
        acc[m][1] = _mm512_add_ps(_mm512_loadu_ps(res[m] + 16), acc[m][1]);
      }
      _mm512_storeu_ps(out[m], acc[m][0]);
      _mm512_storeu_ps(out[m] + 16, acc[m][1]);
    }
  }
};
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

template <class Path>
bool Run(const MatmulArgs& a, std::string* error) {
  if (a.t == 0 || a.n == 0) return true;
  if (a.k == 0) {
    if (a.residual != nullptr)
      std::copy_n(a.residual, a.t * a.n, a.out);
    else
      std::fill_n(a.out, a.t * a.n, 0.f);
    return true;
  }
  const MatmulRows computed(a);
  if (!computed.ok()) {
    *error = "could not allocate the map of " + std::to_string(a.t) + " rows";
    return false;
  }
  const Shape s(a, computed);
  if (s.t == 0) return true;
  uint16_t* xa = ThreadScratch<uint16_t, kRounded>(s.tp * s.kp);
  if (xa == nullptr) {
    *error = "could not allocate " + std::to_string(s.tp * s.kp * 2) + " bytes of rounded rows";
    return false;
  }
  ThreadPool& pool = ThreadPool::Shared();
  std::atomic<bool> ok{true};
  pool.ParallelFor((s.tp + kRoundRows - 1) / kRoundRows, [&](int64_t b) {
    float* row = ThreadScratch<float, kRow>(s.k);
    if (row == nullptr) {
      ok.store(false);
      return;
    }
    Path::RoundRows(a, s, b * kRoundRows, std::min(s.tp, (b + 1) * kRoundRows), xa, row);
  });
  if (!ok.load()) {
    *error = "could not allocate a row of " + std::to_string(s.k * 4) + " bytes";
    return false;
  }
  const bool packed = a.w_type == MatmulArgs::Weights::kPacked;
  const MatmulSplit split((s.n + kCols - 1) / kCols, s.tp / kRows, pool.threads());
  pool.ParallelFor(split.tasks(), [&](int64_t i) {
    const MatmulSplit::Task task = split.At(i);
    const int64_t col0 = task.panel * kCols, cols = std::min(kCols, s.n - col0);
    const uint16_t* panel = static_cast<const uint16_t*>(a.w) + task.panel * s.kp * kCols;
    if (!packed) {
      uint16_t* scratch = ThreadScratch<uint16_t, kPanel>(s.kp * kCols);
      if (scratch == nullptr) {
        ok.store(false);
        return;
      }
      Path::PackPanel(a, s, col0, scratch);
      panel = scratch;
    }
    // Each tile row's result goes straight to its row of out, the residual added as it is stored; a
    // narrow panel's and the rows past the last through a scratch tile (its residual added after).
    float tile[kRows * kCols] = {};
    float* dst[kRows];
    const float* res[kRows];
    const bool whole = cols == kCols, epilogue = whole && a.residual != nullptr;
    for (int64_t r0 = task.tile0 * kRows; r0 < task.tile1 * kRows; r0 += kRows) {
      const int64_t rows = std::min(kRows, s.t - r0);
      for (int64_t m = 0; m < kRows; ++m) {
        const bool direct = m < rows && whole;
        const int64_t at = direct ? computed.Source(r0 + m) * s.n + col0 : 0;
        dst[m] = direct ? a.out + at : tile + m * kCols;
        res[m] = direct && epilogue ? a.residual + at : tile + m * kCols;
      }
      Path::Tile(xa + r0 * s.kp, s.kp, panel, dst, epilogue ? res : nullptr);
      if (whole) continue;
      for (int64_t m = 0; m < rows; ++m)
        std::memcpy(a.out + computed.Source(r0 + m) * s.n + col0, tile + m * kCols,
                    cols * sizeof(float));
      computed.AddResidual(a, r0, r0 + rows, col0, cols);
    }
  });
  if (!ok.load())
    *error = "could not allocate a packed panel of " + std::to_string(s.kp * kCols * 2) + " bytes";
  return ok.load();
}

}  // namespace

const char* MatmulBf16Path() {
#if defined(__x86_64__)
  if (AllowedKernelIsa() >= KernelIsa::kAvx512Bf16) return Avx512Bf16Path::kName;
#endif
  return PortablePath::kName;
}

void PackMatmulWeights(const MatmulArgs& args, uint16_t* packed) {
  const MatmulRows every(MatmulArgs{});
  const Shape s(args, every);
  for (int64_t j = 0; j < (s.n + kCols - 1) / kCols; ++j)
    PackPanelPortable(args, s, j * kCols, packed + j * s.kp * kCols);
}

bool RunMatmulBf16(const MatmulArgs& args, std::string* error) {
#if defined(__x86_64__)
  if (std::strcmp(MatmulBf16Path(), Avx512Bf16Path::kName) == 0)
    return Run<Avx512Bf16Path>(args, error);
#endif
  return Run<PortablePath>(args, error);
}

}  // namespace pjrt_score
