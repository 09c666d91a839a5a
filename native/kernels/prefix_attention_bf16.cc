// The fused attention kernels in bf16 on the CPU's matrix units (prefix_attention.h,
// RunPrefixAttentionBf16): the f32 kernel's blocking and online softmax, with q, K and V rounded
// to bf16 (to nearest even), scores and the softmax statistics (shift, sum) in f32, the
// probabilities rounded to bf16 before the PV product, which accumulates in f32. The products
// go through a tile interface (bf16_tiles_portable.h) with three implementations: portable,
// AVX512_BF16 and AMX; only the tile product differs between them, and each matrix-unit one is
// checked once per process against the portable tiles before its first use (bf16_tiles_gate.h).
// Short items' own keys (row by row, see OwnRows) stay f32.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

#include "kernels/attention_blocking.h"
#include "kernels/attention_ops_avx512.h"
#include "kernels/attention_ops_portable.h"
#include "kernels/attention_units.h"
#include "kernels/bf16_tiles_amx.h"
#include "kernels/bf16_tiles_avx512.h"
#include "kernels/bf16_tiles_check.h"
#include "kernels/bf16_tiles_gate.h"
#include "kernels/bf16_tiles_portable.h"
#include "kernels/bf16_tiles_swapped.h"
#include "kernels/kernel_isa.h"
#include "kernels/prefix_attention.h"
#include "kernels/thread_pool.h"

namespace pjrt_score {
namespace {

using attention::Bf16ToF32;
using attention::F32ToBf16;
using attention::ItemLength;
using attention::kKeyBlock;
using attention::kRowByRowMaxTokens;
using attention::PrefixLength;
using attention::PrefixLimit;
using attention::RoundUp;
using attention::Unit;

// Rows per step: one tile of 16.
constexpr int64_t kRows = 16;
// Keys per strip of packed K (and per column tile of scores).
constexpr int64_t kStrip = 16;
// Depth per tile product: AMX's A tile is 16 rows x 32 bf16.
constexpr int64_t kDepth = 32;

// Keys packed per sequence in blocks of 256, D padded to Dp (a multiple of 32) with zeros:
// K in strips of 16 keys, each strip [Dp / 2][16][2] (the tile's B for scores); V in column
// strips of 16, each [256 / 2][16][2] (the tile's B for the PV product). Zeros past the valid keys.
struct PackedBf16 {
  int64_t blocks = 0, dp = 0;
  std::vector<uint16_t> k, v;  // [sequences][blocks][kKeyBlock * dp]
  int64_t BlockSize() const { return kKeyBlock * dp; }
};

// Short items' own keys and values as f32 rows of Dp (zeros past D), copied once per call: their
// own keys go row by row in f32, not rounded (a few keys a row; with no prefix, as in the serial
// plan's short sequences, they are all the row's keys, and bf16 there moved the real model's
// scores up to the accuracy gate), with the f32 row loops (Ops::Dot, Ops::Axpy).
struct OwnRows {
  std::vector<float> k, v;  // [N][L][Hkv][Dp]
};

// Packs keys and values [0, count) of one sequence (rows `row` floats apart) at block `k`, `v`.
void Pack(const float* keys, const float* values, int64_t row, int64_t count, int64_t d, int64_t dp,
          uint16_t* k, uint16_t* v) {
  for (int64_t key = 0; key < count; ++key) {
    const int64_t block = key / kKeyBlock, in = key % kKeyBlock;
    uint16_t* kb = k + block * kKeyBlock * dp + (in / kStrip) * kStrip * dp;
    uint16_t* vb = v + block * kKeyBlock * dp;
    for (int64_t x = 0; x < d; ++x) {
      // K strip: [x / 2][key % 16][x % 2]; V column strip x / 16: [in / 2][x % 16][in % 2].
      kb[(x / 2) * 32 + (in % kStrip) * 2 + (x % 2)] = F32ToBf16(keys[key * row + x]);
      vb[(x / 16) * kKeyBlock * 16 + (in / 2) * 32 + (x % 16) * 2 + (in % 2)] =
          F32ToBf16(values[key * row + x]);
    }
  }
}

// One work unit, as RunUnit of prefix_attention.cc; Ops gives the f32 row loops (RowMax, ExpSum,
// Scale) on rows of Dp floats.
template <class Tiles, class Ops>
void RunUnit(const PrefixAttentionArgs& a, const PackedBf16& pre, const PackedBf16& own,
             const OwnRows& own_rows, int64_t plen, const Unit& u) {
  const int64_t d = a.d, dp = pre.dp, l = a.l, hq = a.hq, hkv = a.hkv, group = hq / hkv, h = u.h;
  const bool blocked_own = own.blocks > 0;

  int64_t rows = 0;
  for (int64_t i = u.first; i < u.last; ++i) rows += u.Tokens(a, i) * group;
  const int64_t padded = RoundUp(std::max<int64_t>(rows, 1), kRows), steps = padded / kRows;
  std::vector<uint16_t> q(padded * dp, 0), probs(kRows * kKeyBlock, 0);
  std::vector<float> acc(padded * dp, 0.f), sum(padded, 0.f), scores(kRows * kKeyBlock, 0.f);
  std::vector<float> shift(padded, -std::numeric_limits<float>::infinity()), own_scores(l, 0.f);
  std::vector<float> q_row(dp, 0.f);
  std::vector<int64_t> limit(padded, 0), step_limit(steps, 0);
  std::vector<int64_t> own_limit(padded, 0), step_own_limit(steps, 0);

  int64_t r = 0;
  for (int64_t i = u.first; i < u.last; ++i) {
    for (int64_t j = u.j0; j < u.j0 + u.Tokens(a, i); ++j) {
      for (int64_t g = 0; g < group; ++g, ++r) {
        const float* src = a.item_q + ((i * l + j) * hq + h * group + g) * d;
        uint16_t* qr = q.data() + r * dp;
        for (int64_t x = 0; x < d; ++x) qr[x] = F32ToBf16(src[x]);
        limit[r] = PrefixLimit(a, plen, i);
        step_limit[r / kRows] = std::max(step_limit[r / kRows], limit[r]);
        if (blocked_own) {
          own_limit[r] = j + 1;
          step_own_limit[r / kRows] = std::max(step_own_limit[r / kRows], j + 1);
          continue;
        }
        // Short items: own keys row by row in f32, first.
        std::memcpy(q_row.data(), src, sizeof(float) * d);
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t k = 0; k <= j; ++k) {
          const float s =
              Ops::Dot(q_row.data(), own_rows.k.data() + ((i * l + k) * hkv + h) * dp, dp);
          own_scores[k] = s;
          m = std::max(m, s);
        }
        float total = 0.f;
        float* ar = acc.data() + r * dp;
        for (int64_t k = 0; k <= j; ++k) {
          const float w = std::exp(own_scores[k] - m);
          total += w;
          Ops::Axpy(w, own_rows.v.data() + ((i * l + k) * hkv + h) * dp, dp, ar);
        }
        shift[r] = m;
        sum[r] = total;
      }
    }
  }

  Tiles::Begin();
  auto attend = [&](const uint16_t* kb, const uint16_t* vb, int64_t k0, int64_t valid,
                    const std::vector<int64_t>& lim, const std::vector<int64_t>& step_lim) {
    for (int64_t t = 0; t < rows; t += kRows) {
      const int64_t seen = std::min(valid, step_lim[t / kRows] - k0);
      if (seen <= 0) continue;
      for (int64_t c = 0; c < seen; c += kStrip)
        Tiles::Dot(q.data() + t * dp, dp, kb + c * dp, dp, scores.data() + c, kKeyBlock, false);
      const int64_t depth = RoundUp(seen, kDepth);
      for (int64_t x = 0; x < kRows; ++x) {
        float* s = scores.data() + x * kKeyBlock;
        uint16_t* p = probs.data() + x * kKeyBlock;
        if (t + x >= rows) {
          std::memset(p, 0, sizeof(uint16_t) * depth);
          continue;
        }
        for (int64_t c = std::max<int64_t>(lim[t + x] - k0, 0); c < seen; ++c)
          s[c] = -std::numeric_limits<float>::infinity();
        const float m = std::max(shift[t + x], Ops::RowMax(s, seen));
        if (m > shift[t + x]) {
          const float c = std::exp(shift[t + x] - m);
          sum[t + x] *= c;
          float* ar = acc.data() + (t + x) * dp;
          Ops::Scale(c, ar, dp, ar);
          shift[t + x] = m;
        }
        sum[t + x] += Ops::ExpSum(s, seen, m);
        Tiles::Round(s, seen, p);
        for (int64_t c = seen; c < depth; ++c) p[c] = 0;
      }
      for (int64_t j = 0; j < dp; j += kStrip)
        Tiles::Dot(probs.data(), kKeyBlock, vb + j * kKeyBlock, depth, acc.data() + t * dp + j, dp,
                   true);
    }
  };
  if (blocked_own && rows > 0) {
    const int64_t i = u.first, len = ItemLength(a, i);
    for (int64_t b = 0; b * kKeyBlock < u.j0 + u.Tokens(a, i); ++b) {
      const int64_t at = ((h * a.n + i) * own.blocks + b) * own.BlockSize();
      attend(own.k.data() + at, own.v.data() + at, b * kKeyBlock,
             std::min(kKeyBlock, len - b * kKeyBlock), own_limit, step_own_limit);
    }
  }
  for (int64_t b = 0; b < pre.blocks; ++b) {
    const int64_t at = (h * pre.blocks + b) * pre.BlockSize();
    attend(pre.k.data() + at, pre.v.data() + at, b * kKeyBlock,
           std::min(kKeyBlock, plen - b * kKeyBlock), limit, step_limit);
  }
  Tiles::End();

  r = 0;
  for (int64_t i = u.first; i < u.last; ++i) {
    for (int64_t j = u.j0; j < std::min(u.j1, l); ++j) {
      for (int64_t g = 0; g < group; ++g) {
        float* dst = a.out + ((i * l + j) * hq + h * group + g) * d;
        if (j >= ItemLength(a, i)) {
          std::memset(dst, 0, sizeof(float) * d);
          continue;
        }
        const float inv = 1.f / sum[r];
        for (int64_t x = 0; x < d; ++x) dst[x] = inv * acc[r * dp + x];
        ++r;
      }
    }
  }
}

template <class Tiles, class Ops>
bool Run(const PrefixAttentionArgs& a, std::string* error) {
  const int64_t d = a.d, l = a.l, hkv = a.hkv, n = a.n;
  const int64_t plen = PrefixLength(a);
  ThreadPool& pool = ThreadPool::Shared();
  PackedBf16 pre, own;
  OwnRows own_rows;
  try {
    pre.dp = own.dp = RoundUp(d, kDepth);
    pre.blocks = (plen + kKeyBlock - 1) / kKeyBlock;
    pre.k.assign(hkv * pre.blocks * pre.BlockSize(), 0);
    pre.v.assign(pre.k.size(), 0);
    if (l > kRowByRowMaxTokens) {
      own.blocks = (l + kKeyBlock - 1) / kKeyBlock;
      own.k.assign(hkv * n * own.blocks * own.BlockSize(), 0);
      own.v.assign(own.k.size(), 0);
    } else {
      own_rows.k.assign(n * l * hkv * pre.dp, 0.f);
      own_rows.v.assign(own_rows.k.size(), 0.f);
    }
  } catch (const std::bad_alloc&) {
    *error = "out of memory for the packed keys";
    return false;
  }
  // A task a head and key block (blocks are packed apart): a few kv heads still fill every thread.
  pool.ParallelFor(hkv * pre.blocks, [&](int64_t x) {
    const int64_t h = x / pre.blocks, b = x % pre.blocks, first = b * kKeyBlock;
    const int64_t at = (h * pre.blocks + b) * pre.BlockSize(), off = first * hkv * d + h * d;
    Pack(a.prefix_k + off, a.prefix_v + off, hkv * d, std::min(kKeyBlock, plen - first), d, pre.dp,
         pre.k.data() + at, pre.v.data() + at);
  });
  if (own.blocks > 0) {
    pool.ParallelFor(hkv * n, [&](int64_t x) {
      const int64_t h = x / n, i = x % n;
      const int64_t at = (h * n + i) * own.blocks * own.BlockSize();
      Pack(a.item_k + (i * l * hkv + h) * d, a.item_v + (i * l * hkv + h) * d, hkv * d,
           ItemLength(a, i), d, own.dp, own.k.data() + at, own.v.data() + at);
    });
  }

  if (!own_rows.k.empty()) {
    pool.ParallelFor(n, [&](int64_t i) {
      for (int64_t row = i * l * hkv; row < (i + 1) * l * hkv; ++row) {
        for (int64_t x = 0; x < d; ++x) {
          own_rows.k[row * pre.dp + x] = a.item_k[row * d + x];
          own_rows.v[row * pre.dp + x] = a.item_v[row * d + x];
        }
      }
    });
  }

  return attention::RunUnits(
      a, pool, [&](const Unit& u) { RunUnit<Tiles, Ops>(a, pre, own, own_rows, plen, u); }, error);
}

// Tiles' self-check against the portable tiles; where PJRT_SCORE_TILES_CHECK_WRONG names Tiles'
// path (a test hook, docs/performance.md), the check of a deliberately wrong product instead: that
// path then fails and is not taken. It can only disable a path, never change an output.
template <class Tiles>
bool CheckTiles(std::string* detail) {
  const char* wrong = std::getenv("PJRT_SCORE_TILES_CHECK_WRONG");
  if (wrong != nullptr && std::strcmp(wrong, Tiles::kName) == 0)
    return attention::CheckBf16Tiles<attention::SwappedPairsBf16Tiles,
                                     attention::PortableBf16Tiles>(detail);
  return attention::CheckBf16Tiles<Tiles, attention::PortableBf16Tiles>(detail);
}

#if defined(__x86_64__)
bool CheckAmx(std::string* detail) {
  if (const char* why = attention::AmxBf16Tiles::Unusable()) {
    *detail = why;
    return false;
  }
  return CheckTiles<attention::AmxBf16Tiles>(detail);
}

attention::Bf16TilesGate& AmxGate() {
  static attention::Bf16TilesGate gate(&CheckAmx);
  return gate;
}

attention::Bf16TilesGate& Avx512Bf16Gate() {
  static attention::Bf16TilesGate gate(&CheckTiles<attention::Avx512Bf16Tiles>);
  return gate;
}
#endif

// The real tiles named `path` (CheckBf16TilePath) against the portable tiles.
bool CheckNamedTiles(const std::string& path, std::string* detail) {
  using attention::PortableBf16Tiles;
  if (path == PortableBf16Tiles::kName)
    return attention::CheckBf16Tiles<PortableBf16Tiles, PortableBf16Tiles>(detail);
  if (path == attention::SwappedPairsBf16Tiles::kName)
    return attention::CheckBf16Tiles<attention::SwappedPairsBf16Tiles, PortableBf16Tiles>(detail);
#if defined(__x86_64__)
  if (path == attention::Avx512Bf16Tiles::kName && CpuKernelIsa() >= KernelIsa::kAvx512Bf16)
    return attention::CheckBf16Tiles<attention::Avx512Bf16Tiles, PortableBf16Tiles>(detail);
  if (path == attention::AmxBf16Tiles::kName && CpuKernelIsa() >= KernelIsa::kAmx) {
    if (const char* why = attention::AmxBf16Tiles::Unusable()) {
      *detail = why;
      return false;
    }
    return attention::CheckBf16Tiles<attention::AmxBf16Tiles, PortableBf16Tiles>(detail);
  }
#endif
  return false;
}

// Returns `path`, the one dispatch takes; *note: the paths that failed their check first (`failed`)
// and that `path` runs instead, or empty.
const char* Chosen(const std::string& failed, const char* path, std::string* note) {
  if (note != nullptr) *note = failed.empty() ? std::string() : failed + "; using " + path;
  return path;
}

}  // namespace

// The bf16 tiles where the CPU has bf16 dot units and they passed their self-check; on AVX2 and
// AVX-512 CPUs without them the f32 kernel (the portable tiles run 8x slower than the AVX2 f32
// path there, and f32 is more exact); the portable tiles where the allowed ISA is portable (a CPU
// without AVX2, or PJRT_SCORE_KERNEL_ISA=portable: how tests run them on any CPU).
const char* PrefixAttentionBf16Path(int64_t d, std::string* note) {
  const KernelIsa isa = AllowedKernelIsa();
  std::string failed;  // the paths that failed their check, and why
#if defined(__x86_64__)
  if (isa >= KernelIsa::kAmx) {
    const std::string& why = AmxGate().Failure();
    if (why.empty()) return Chosen(failed, attention::AmxBf16Tiles::kName, note);
    failed = std::string(attention::AmxBf16Tiles::kName) + " " + why;
  }
  if (isa >= KernelIsa::kAvx512Bf16) {
    const std::string& why = Avx512Bf16Gate().Failure();
    if (why.empty()) return Chosen(failed, attention::Avx512Bf16Tiles::kName, note);
    failed +=
        (failed.empty() ? "" : "; ") + std::string(attention::Avx512Bf16Tiles::kName) + " " + why;
  }
#endif
  if (isa == KernelIsa::kPortable) return Chosen(failed, attention::PortableBf16Tiles::kName, note);
  const char* f32 = PrefixAttentionPath(d);
  if (std::strcmp(f32, "avx512") == 0) return Chosen(failed, "f32 avx512", note);
  if (std::strcmp(f32, "avx2") == 0) return Chosen(failed, "f32 avx2", note);
  return Chosen(failed, "f32 portable", note);
}

bool CheckBf16TilePath(const std::string& path, std::string* detail) {
  detail->clear();
  try {
    return CheckNamedTiles(path, detail);
  } catch (const std::bad_alloc&) {
    *detail = "could not allocate its self-check";
    return false;
  }
}

bool RunPrefixAttentionBf16(const PrefixAttentionArgs& args, std::string* error) {
  if (args.n == 0 || args.l == 0 || args.hq == 0 || args.d == 0) return true;  // nothing to write
  const char* path = PrefixAttentionBf16Path(args.d);
#if defined(__x86_64__)
  if (std::strcmp(path, attention::AmxBf16Tiles::kName) == 0)
    return Run<attention::AmxBf16Tiles, attention::Avx512Ops>(args, error);
  if (std::strcmp(path, attention::Avx512Bf16Tiles::kName) == 0)
    return Run<attention::Avx512Bf16Tiles, attention::Avx512Ops>(args, error);
#endif
  if (std::strcmp(path, attention::PortableBf16Tiles::kName) == 0)
    return Run<attention::PortableBf16Tiles, attention::PortableOps>(args, error);
  return RunPrefixAttention(args, error);  // "f32 ...": the f32 kernel's own choice of path
}

}  // namespace pjrt_score
