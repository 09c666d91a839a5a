#include "prefix_attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <vector>

#include "thread_pool.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define PJRT_SCORE_HAVE_AVX2_PATH 1
#endif

namespace pjrt_score {
namespace {

// Prefix keys per block: K^T and V of one block of one kv head are
// 2 * 256 * D * 4 bytes (128 KB at D = 64), in L2 with the rows' state.
constexpr int64_t kKeyBlock = 256;
// Query rows per register tile: 6 rows x 16 keys of scores are 12 AVX2 registers (see Tile6x16).
constexpr int64_t kRowTile = 6;
constexpr int64_t kColTile = 16;
// Query rows per step: two register tiles read each strip of keys (or of values) in turn, so
// the second reads it from L1 (a strip of K^T is 4 KB, a strip of V 16 KB) instead of L2.
constexpr int64_t kStepRows = 2 * kRowTile;
// Rows of one work unit (items of one chunk x their tokens x the group's heads):
// their state (D + 2 floats a row) stays in L2 beside the key block.
constexpr int64_t kRowsPerUnit = 384;

int64_t RoundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// ---- the inner loops, portable -------------------------------------------

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

// ---- the inner loops, AVX2 + FMA (D a multiple of 16) ---------------------

#ifdef PJRT_SCORE_HAVE_AVX2_PATH
struct Avx2Ops {
  // c[r][0:16] (+)= sum over k of a[r * a_row + k] * b[k * b_row + 0:16], for rows r = 0..5: the
  // one register tile both products use (6 rows x 16 columns: 12 accumulators, 2 loads of b and
  // one broadcast at a time, 15 of the 16 YMM registers). Per k it issues 12 FMAs against 8 loads;
  // a 4-row tile (8 FMAs, 6 loads) left the two FMA pipes waiting on loads and on the FMA latency
  // (8 chains for 2 pipes x 4 cycles). `add`: onto c's values.
  __attribute__((target("avx2,fma"))) static inline void Tile6x16(const float* a, int64_t a_row,
                                                                  const float* b, int64_t b_row,
                                                                  int64_t depth, float* c,
                                                                  int64_t c_row, bool add) {
    static_assert(kRowTile == 6, "Tile6x16 is written out for 6 rows");
    // Named accumulators, not an array: GCC keeps an array of __m256 on the stack.
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    if (add) {
      c00 = _mm256_loadu_ps(c), c01 = _mm256_loadu_ps(c + 8);
      c10 = _mm256_loadu_ps(c + c_row), c11 = _mm256_loadu_ps(c + c_row + 8);
      c20 = _mm256_loadu_ps(c + 2 * c_row), c21 = _mm256_loadu_ps(c + 2 * c_row + 8);
      c30 = _mm256_loadu_ps(c + 3 * c_row), c31 = _mm256_loadu_ps(c + 3 * c_row + 8);
      c40 = _mm256_loadu_ps(c + 4 * c_row), c41 = _mm256_loadu_ps(c + 4 * c_row + 8);
      c50 = _mm256_loadu_ps(c + 5 * c_row), c51 = _mm256_loadu_ps(c + 5 * c_row + 8);
    }
    for (int64_t k = 0; k < depth; ++k) {
      const __m256 b0 = _mm256_loadu_ps(b + k * b_row);
      const __m256 b1 = _mm256_loadu_ps(b + k * b_row + 8);
      __m256 x = _mm256_broadcast_ss(a + k);
      c00 = _mm256_fmadd_ps(x, b0, c00);
      c01 = _mm256_fmadd_ps(x, b1, c01);
      x = _mm256_broadcast_ss(a + a_row + k);
      c10 = _mm256_fmadd_ps(x, b0, c10);
      c11 = _mm256_fmadd_ps(x, b1, c11);
      x = _mm256_broadcast_ss(a + 2 * a_row + k);
      c20 = _mm256_fmadd_ps(x, b0, c20);
      c21 = _mm256_fmadd_ps(x, b1, c21);
      x = _mm256_broadcast_ss(a + 3 * a_row + k);
      c30 = _mm256_fmadd_ps(x, b0, c30);
      c31 = _mm256_fmadd_ps(x, b1, c31);
      x = _mm256_broadcast_ss(a + 4 * a_row + k);
      c40 = _mm256_fmadd_ps(x, b0, c40);
      c41 = _mm256_fmadd_ps(x, b1, c41);
      x = _mm256_broadcast_ss(a + 5 * a_row + k);
      c50 = _mm256_fmadd_ps(x, b0, c50);
      c51 = _mm256_fmadd_ps(x, b1, c51);
    }
    _mm256_storeu_ps(c, c00);
    _mm256_storeu_ps(c + 8, c01);
    _mm256_storeu_ps(c + c_row, c10);
    _mm256_storeu_ps(c + c_row + 8, c11);
    _mm256_storeu_ps(c + 2 * c_row, c20);
    _mm256_storeu_ps(c + 2 * c_row + 8, c21);
    _mm256_storeu_ps(c + 3 * c_row, c30);
    _mm256_storeu_ps(c + 3 * c_row + 8, c31);
    _mm256_storeu_ps(c + 4 * c_row, c40);
    _mm256_storeu_ps(c + 4 * c_row + 8, c41);
    _mm256_storeu_ps(c + 5 * c_row, c50);
    _mm256_storeu_ps(c + 5 * c_row + 8, c51);
  }

  // Scores of the step's query rows against `cols` keys: K^T strips of 16 keys, [D][16] each.
  __attribute__((target("avx2,fma"))) static void QkStep(const float* q, int64_t d, const float* kt,
                                                         int64_t cols, float* s) {
    for (int64_t c = 0; c < cols; c += kColTile)
      for (int64_t t = 0; t < kStepRows; t += kRowTile)
        Tile6x16(q + t * d, d, kt + c * d, kColTile, d, s + t * kKeyBlock + c, kKeyBlock, false);
  }

  // D a multiple of 16.
  __attribute__((target("avx2,fma"))) static float Dot(const float* a, const float* b, int64_t d) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    for (int64_t x = 0; x < d; x += 16) {
      s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + x), _mm256_loadu_ps(b + x), s0);
      s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + x + 8), _mm256_loadu_ps(b + x + 8), s1);
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, _mm256_add_ps(s0, s1));
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
           ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  }

  // y += w * x and y = c * x, D floats (a multiple of 16).
  __attribute__((target("avx2,fma"))) static void Axpy(float w, const float* x, int64_t d,
                                                       float* y) {
    const __m256 wv = _mm256_set1_ps(w);
    for (int64_t j = 0; j < d; j += 16) {
      _mm256_storeu_ps(y + j, _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + j), _mm256_loadu_ps(y + j)));
      _mm256_storeu_ps(y + j + 8,
                       _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + j + 8), _mm256_loadu_ps(y + j + 8)));
    }
  }
  __attribute__((target("avx2,fma"))) static void Scale(float c, const float* x, int64_t d,
                                                        float* y) {
    const __m256 cv = _mm256_set1_ps(c);
    for (int64_t j = 0; j < d; j += 16) {
      _mm256_storeu_ps(y + j, _mm256_mul_ps(cv, _mm256_loadu_ps(x + j)));
      _mm256_storeu_ps(y + j + 8, _mm256_mul_ps(cv, _mm256_loadu_ps(x + j + 8)));
    }
  }

  __attribute__((target("avx2,fma"))) static float RowMax(const float* s, int64_t n) {
    __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    int64_t c = 0;
    for (; c + 8 <= n; c += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(s + c));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, m);
    float out = lanes[0];
    for (int i = 1; i < 8; ++i) out = std::max(out, lanes[i]);
    for (; c < n; ++c) out = std::max(out, s[c]);
    return out;
  }

  // exp(s - shift) for s <= shift, as 2^t with t = s * log2(e) - shift * log2(e) (one FMA):
  // 2^t = 2^n * 2^f, n = round(t), f = t - n in [-1/2, 1/2], 2^f a degree-5 polynomial fitted for
  // relative error (under 1e-7 in exact arithmetic, 3e-7 in f32). Below t = -127 the result is
  // exactly 0: t is clamped there, and n = -127 makes 2^n's exponent bits 0. The shared rounding
  // of shift * log2(e) scales a row's weights alike, so it cancels in the softmax.
  __attribute__((target("avx2,fma"))) static __m256 Exp2(__m256 t) {
    t = _mm256_max_ps(t, _mm256_set1_ps(-127.f));
    const __m256 n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 f = _mm256_sub_ps(t, n);
    __m256 p = _mm256_set1_ps(1.327645150e-03f);
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.675540961e-03f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.550713465e-02f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.402212024e-01f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.931469440e-01f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.000000119e+00f));
    const __m256i bits =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  }

  __attribute__((target("avx2,fma"))) static float ExpSum(float* s, int64_t n, float shift) {
    const float kLog2e = 1.44269504088896341f;
    const __m256 log2e = _mm256_set1_ps(kLog2e), sh = _mm256_set1_ps(shift * kLog2e);
    __m256 sum0 = _mm256_setzero_ps(), sum1 = sum0;
    int64_t c = 0;
    for (; c + 16 <= n; c += 16) {
      const __m256 e0 = Exp2(_mm256_fmsub_ps(_mm256_loadu_ps(s + c), log2e, sh));
      const __m256 e1 = Exp2(_mm256_fmsub_ps(_mm256_loadu_ps(s + c + 8), log2e, sh));
      _mm256_storeu_ps(s + c, e0);
      _mm256_storeu_ps(s + c + 8, e1);
      sum0 = _mm256_add_ps(sum0, e0);
      sum1 = _mm256_add_ps(sum1, e1);
    }
    for (; c + 8 <= n; c += 8) {
      const __m256 e = Exp2(_mm256_fmsub_ps(_mm256_loadu_ps(s + c), log2e, sh));
      _mm256_storeu_ps(s + c, e);
      sum0 = _mm256_add_ps(sum0, e);
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, _mm256_add_ps(sum0, sum1));
    float out = 0.f;
    for (int i = 0; i < 8; ++i) out += lanes[i];
    for (; c < n; ++c) {
      s[c] = std::exp(s[c] - shift);
      out += s[c];
    }
    return out;
  }

  __attribute__((target("avx2,fma"))) static void PvStep(const float* w, const float* v,
                                                         int64_t v_row, int64_t keys, int64_t d,
                                                         float* acc) {
    for (int64_t j = 0; j < d; j += 16)
      for (int64_t t = 0; t < kStepRows; t += kRowTile)
        Tile6x16(w + t * kKeyBlock, kKeyBlock, v + j, v_row, keys, acc + t * d + j, d, true);
  }
};

// AVX2 and FMA from CPUID, and the OS saving the YMM registers (XCR0 bits 1
// and 2). Not __builtin_cpu_supports: it reads the runtime library's
// __cpu_model, which the prebuild's toolchain (zig c++, compiler-rt) cannot
// link into a shared object.
bool DetectAvx2Fma() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
  if (!(fma && osxsave && avx)) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 6u) != 6u) return false;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (b >> 5) & 1;  // AVX2
}

bool CpuHasAvx2() {
  static const bool has = DetectAvx2Fma();
  return has;
}
#endif

bool ForcedPortable() {
  const char* env = std::getenv("PJRT_SCORE_KERNEL_PORTABLE");
  return env != nullptr && std::strcmp(env, "1") == 0;
}

// The prefix keys of one call, packed per kv head: K^T in blocks of 256 keys,
// each in strips of 16 keys [D][16] that the QK tile reads front to back (zero
// columns past the valid keys). V is read where it lies ([P][Hkv][D]: a kv
// head's rows Hkv * D floats apart): the prefix kernel alone ran 4% faster
// than with a packed copy of it.
struct PackedPrefix {
  int64_t blocks = 0;
  std::vector<float> kt;  // [Hkv][blocks][kKeyBlock / 16 strips][D][16]
};

// One work unit: kv head `h`, items [first, last). Its rows are (item,
// token < length, head of the group), state per row: shift, sum, acc[D].
template <class Ops>
void RunUnit(const PrefixAttentionArgs& a, const PackedPrefix& pre, int64_t plen, int64_t h,
             int64_t first, int64_t last) {
  const int64_t d = a.d, l = a.l, hq = a.hq, hkv = a.hkv, group = hq / hkv;
  auto length = [&](int64_t i) {
    return std::min<int64_t>(std::max<int32_t>(a.item_lengths[i], 0), l);
  };
  // The prefix keys item i sees: all valid ones, or fewer where the call limits them per item.
  auto prefix_limit = [&](int64_t i) {
    if (a.item_prefix_lengths == nullptr) return plen;
    return std::min<int64_t>(std::max<int32_t>(a.item_prefix_lengths[i], 0), plen);
  };

  int64_t rows = 0;
  for (int64_t i = first; i < last; ++i) rows += length(i) * group;
  const int64_t padded = RoundUp(std::max<int64_t>(rows, 1), kStepRows);
  std::vector<float> q(padded * d, 0.f), acc(padded * d, 0.f), shift(padded, 0.f), sum(padded, 0.f);
  std::vector<float> scores(kStepRows * kKeyBlock, 0.f), own(l, 0.f);
  // Per row its prefix-key limit; per step the largest of its rows' (padding rows: 0), past
  // which the step skips keys altogether.
  std::vector<int64_t> limit(padded, 0), step_limit(padded / kStepRows, 0);

  // Gather the rows; their own keys first: every row sees its own first key,
  // so the shift is finite from the start.
  int64_t r = 0;
  for (int64_t i = first; i < last; ++i) {
    for (int64_t j = 0; j < length(i); ++j) {
      for (int64_t g = 0; g < group; ++g, ++r) {
        const float* src = a.item_q + ((i * l + j) * hq + h * group + g) * d;
        float* qr = q.data() + r * d;
        std::memcpy(qr, src, sizeof(float) * d);
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t k = 0; k <= j; ++k) {
          const float* key = a.item_k + ((i * l + k) * hkv + h) * d;
          const float s = Ops::Dot(qr, key, d);
          own[k] = s;
          m = std::max(m, s);
        }
        float total = 0.f;
        float* ar = acc.data() + r * d;
        for (int64_t k = 0; k <= j; ++k) {
          const float w = std::exp(own[k] - m);
          total += w;
          Ops::Axpy(w, a.item_v + ((i * l + k) * hkv + h) * d, d, ar);
        }
        shift[r] = m;
        sum[r] = total;
        limit[r] = prefix_limit(i);
        step_limit[r / kStepRows] = std::max(step_limit[r / kStepRows], limit[r]);
      }
    }
  }

  // Prefix keys block by block (outer), all steps of the unit (inner):
  // the block stays in cache while every row of the unit reads it.
  for (int64_t b = 0; b < pre.blocks; ++b) {
    const int64_t k0 = b * kKeyBlock;
    const int64_t valid = std::min(kKeyBlock, plen - k0);
    const float* kt = pre.kt.data() + (h * pre.blocks + b) * d * kKeyBlock;
    const float* v = a.prefix_v + (k0 * hkv + h) * d;
    for (int64_t t = 0; t < rows; t += kStepRows) {
      // Keys of this block that some row of the step sees (all `valid` without per-item limits).
      const int64_t seen = std::min(valid, step_limit[t / kStepRows] - k0);
      if (seen <= 0) continue;
      Ops::QkStep(q.data() + t * d, d, kt, RoundUp(seen, kColTile), scores.data());
      for (int64_t x = 0; x < kStepRows; ++x) {
        float* s = scores.data() + x * kKeyBlock;
        if (t + x >= rows) {
          std::memset(s, 0, sizeof(float) * kKeyBlock);
          continue;
        }
        // Keys past the row's limit: -inf, so weight exactly 0 on both Exp paths. The shift stays
        // finite even when the row sees none of them: its own first key came before.
        for (int64_t c = std::max<int64_t>(limit[t + x] - k0, 0); c < seen; ++c)
          s[c] = -std::numeric_limits<float>::infinity();
        const float m = std::max(shift[t + x], Ops::RowMax(s, seen));
        if (m > shift[t + x]) {
          const float c = std::exp(shift[t + x] - m);
          sum[t + x] *= c;
          float* ar = acc.data() + (t + x) * d;
          Ops::Scale(c, ar, d, ar);
          shift[t + x] = m;
        }
        sum[t + x] += Ops::ExpSum(s, seen, m);
      }
      Ops::PvStep(scores.data(), v, hkv * d, seen, d, acc.data() + t * d);
    }
  }

  // Rows out; padding tokens (j >= length) of these items and heads get 0.
  r = 0;
  for (int64_t i = first; i < last; ++i) {
    for (int64_t j = 0; j < l; ++j) {
      for (int64_t g = 0; g < group; ++g) {
        float* dst = a.out + ((i * l + j) * hq + h * group + g) * d;
        if (j >= length(i)) {
          std::memset(dst, 0, sizeof(float) * d);
          continue;
        }
        Ops::Scale(1.f / sum[r], acc.data() + r * d, d, dst);
        ++r;
      }
    }
  }
}

template <class Ops>
bool Run(const PrefixAttentionArgs& a, std::string* error) {
  const int64_t d = a.d, hkv = a.hkv;
  const int64_t plen = std::min<int64_t>(std::max<int32_t>(a.prefix_length, 0), a.p);
  ThreadPool& pool = ThreadPool::Shared();
  PackedPrefix pre;
  try {
    pre.blocks = (plen + kKeyBlock - 1) / kKeyBlock;
    pre.kt.assign(hkv * pre.blocks * d * kKeyBlock, 0.f);
  } catch (const std::bad_alloc&) {
    *error = "out of memory for the packed prefix";
    return false;
  }
  pool.ParallelFor(hkv, [&](int64_t h) {
    for (int64_t k = 0; k < plen; ++k) {
      const float* key = a.prefix_k + (k * hkv + h) * d;
      const int64_t in_block = k % kKeyBlock;
      float* kt = pre.kt.data() + (h * pre.blocks + k / kKeyBlock) * d * kKeyBlock +
                  (in_block / kColTile) * d * kColTile + in_block % kColTile;
      for (int64_t x = 0; x < d; ++x) kt[x * kColTile] = key[x];
    }
  });

  // Items per unit: enough rows to share each key block, and at least two
  // units per thread so that uneven item lengths even out.
  const int64_t group = a.hq / hkv;
  int64_t per_unit = std::max<int64_t>(1, kRowsPerUnit / std::max<int64_t>(1, a.l * group));
  const int64_t want_units = 2 * pool.threads();
  while (per_unit > 1 && hkv * ((a.n + per_unit - 1) / per_unit) < want_units)
    per_unit = (per_unit + 1) / 2;
  const int64_t chunks = (a.n + per_unit - 1) / per_unit;
  std::atomic<bool> failed{false};
  // Causal calls give later units more keys; handing them out biggest first was no faster at the
  // prefill's shape (wall median equal over 40 alternating rounds; units are small and handed out
  // one by one), so units go in order.
  pool.ParallelFor(hkv * chunks, [&](int64_t unit) {
    const int64_t h = unit % hkv, c = unit / hkv;
    try {
      RunUnit<Ops>(a, pre, plen, h, c * per_unit, std::min(a.n, (c + 1) * per_unit));
    } catch (const std::bad_alloc&) {
      failed.store(true);
    }
  });
  if (failed.load()) {
    *error = "out of memory for a work unit's scratch";
    return false;
  }
  return true;
}

}  // namespace

const char* PrefixAttentionPath(int64_t d) {
#ifdef PJRT_SCORE_HAVE_AVX2_PATH
  if (!ForcedPortable() && CpuHasAvx2() && d % 16 == 0) return "avx2";
#else
  (void)d;
#endif
  return "portable";
}

bool RunPrefixAttention(const PrefixAttentionArgs& args, std::string* error) {
  if (args.n == 0 || args.l == 0 || args.hq == 0 || args.d == 0) return true;  // nothing to write
#ifdef PJRT_SCORE_HAVE_AVX2_PATH
  if (std::strcmp(PrefixAttentionPath(args.d), "avx2") == 0) return Run<Avx2Ops>(args, error);
#endif
  return Run<PortableOps>(args, error);
}

bool RunCausalAttention(const CausalAttentionArgs& args, std::string* error) {
  const int64_t t = args.t;
  const int32_t valid =
      static_cast<int32_t>(std::min<int64_t>(std::max<int32_t>(args.valid_length, 0), t));
  std::vector<int32_t> item_lengths, item_prefix_lengths;
  try {
    item_lengths.resize(t);
    item_prefix_lengths.resize(t);
  } catch (const std::bad_alloc&) {
    *error = "out of memory for the row lengths";
    return false;
  }
  // Row i is an item of one token (none past the valid length) whose prefix is keys 0..i-1 of
  // the same sequence, and its own key is key i: together exactly the causal keys 0..i.
  for (int64_t i = 0; i < t; ++i) {
    item_lengths[i] = i < valid ? 1 : 0;
    item_prefix_lengths[i] = static_cast<int32_t>(std::min<int64_t>(i, valid));
  }
  PrefixAttentionArgs a;
  a.n = t;
  a.l = 1;
  a.hq = args.hq;
  a.hkv = args.hkv;
  a.d = args.d;
  a.p = t;
  a.item_q = args.q;
  a.item_k = args.k;
  a.item_v = args.v;
  a.item_lengths = item_lengths.data();
  a.prefix_k = args.k;
  a.prefix_v = args.v;
  a.prefix_length = valid;
  a.item_prefix_lengths = item_prefix_lengths.data();
  a.out = args.out;
  return RunPrefixAttention(a, error);
}

}  // namespace pjrt_score
