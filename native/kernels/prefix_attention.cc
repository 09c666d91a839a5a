#include "kernels/prefix_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

#include "kernels/attention_blocking.h"
#include "kernels/attention_ops_avx2.h"
#include "kernels/attention_ops_avx512.h"
#include "kernels/attention_ops_portable.h"
#include "kernels/attention_units.h"
#include "kernels/kernel_isa.h"
#include "kernels/thread_pool.h"

namespace pjrt_score {
namespace {

using attention::ItemLength;
using attention::kColTile;
using attention::kKeyBlock;
using attention::kRowByRowMaxTokens;
using attention::kStepRows;
using attention::PrefixLength;
using attention::PrefixLimit;
using attention::RoundUp;
using attention::Unit;

// Keys packed per kv head (the prefix's) or per kv head and item (long
// items' own keys): K^T in blocks of 256 keys, each in strips of 16 keys
// [D][16] that the QK tile reads front to back (zero columns past the valid
// keys). V is read where it lies (a kv head's rows Hkv * D floats apart): the
// prefix kernel alone ran 4% faster than with a packed copy of it.
struct PackedKeys {
  int64_t blocks = 0;
  std::vector<float> kt;  // [sequences][blocks][kKeyBlock / 16 strips][D][16]
};

// Packs keys [0, count) of one sequence (rows `row` floats apart) into its blocks at `kt`.
void PackKeys(const float* keys, int64_t row, int64_t count, int64_t d, float* kt) {
  for (int64_t k = 0; k < count; ++k) {
    const float* key = keys + k * row;
    const int64_t in_block = k % kKeyBlock;
    float* dst = kt + (k / kKeyBlock) * d * kKeyBlock + (in_block / kColTile) * d * kColTile +
                 in_block % kColTile;
    for (int64_t x = 0; x < d; ++x) dst[x * kColTile] = key[x];
  }
}

// Runs one unit. Its rows are (item, token, head of the group); state per
// row: shift, sum, acc[D] of an online softmax over the keys the row sees.
// `own` holds long items' own keys packed (blocks == 0: own keys row by row).
template <class Ops>
void RunUnit(const PrefixAttentionArgs& a, const PackedKeys& pre, const PackedKeys& own,
             int64_t plen, const Unit& u) {
  const int64_t d = a.d, l = a.l, hq = a.hq, hkv = a.hkv, group = hq / hkv, h = u.h;
  const bool blocked_own = own.blocks > 0;

  int64_t rows = 0;
  for (int64_t i = u.first; i < u.last; ++i) rows += u.Tokens(a, i) * group;
  const int64_t padded = RoundUp(std::max<int64_t>(rows, 1), kStepRows);
  const int64_t steps = padded / kStepRows;
  std::vector<float> q(padded * d, 0.f), acc(padded * d, 0.f), sum(padded, 0.f);
  std::vector<float> shift(padded, -std::numeric_limits<float>::infinity());
  std::vector<float> scores(kStepRows * kKeyBlock, 0.f), own_scores(l, 0.f);
  // Per row its key limits (prefix keys; own keys when blocked: token j sees own keys 0..j);
  // per step the largest of its rows' (padding rows: 0), past which the step skips keys.
  std::vector<int64_t> limit(padded, 0), step_limit(steps, 0);
  std::vector<int64_t> own_limit(padded, 0), step_own_limit(steps, 0);

  int64_t r = 0;
  for (int64_t i = u.first; i < u.last; ++i) {
    for (int64_t j = u.j0; j < u.j0 + u.Tokens(a, i); ++j) {
      for (int64_t g = 0; g < group; ++g, ++r) {
        const float* src = a.item_q + ((i * l + j) * hq + h * group + g) * d;
        float* qr = q.data() + r * d;
        std::memcpy(qr, src, sizeof(float) * d);
        limit[r] = PrefixLimit(a, plen, i);
        step_limit[r / kStepRows] = std::max(step_limit[r / kStepRows], limit[r]);
        if (blocked_own) {
          own_limit[r] = j + 1;
          step_own_limit[r / kStepRows] = std::max(step_own_limit[r / kStepRows], j + 1);
          continue;
        }
        // Short items: own keys row by row, first, so the shift is finite from the start.
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t k = 0; k <= j; ++k) {
          const float* key = a.item_k + ((i * l + k) * hkv + h) * d;
          const float s = Ops::Dot(qr, key, d);
          own_scores[k] = s;
          m = std::max(m, s);
        }
        float total = 0.f;
        float* ar = acc.data() + r * d;
        for (int64_t k = 0; k <= j; ++k) {
          const float w = std::exp(own_scores[k] - m);
          total += w;
          Ops::Axpy(w, a.item_v + ((i * l + k) * hkv + h) * d, d, ar);
        }
        shift[r] = m;
        sum[r] = total;
      }
    }
  }

  // One block of keys [k0, k0 + valid) (K^T packed at kt, V rows v_row floats apart from v) for
  // every step of the unit: the block stays in cache while every row of the unit reads it. Row x
  // sees keys below lim[x]. A row must have a finite shift once the block is done: it saw a key
  // before, or sees one here (a long item's own block 0 comes first: key 0 is every row's).
  auto attend = [&](const float* kt, const float* v, int64_t v_row, int64_t k0, int64_t valid,
                    const std::vector<int64_t>& lim, const std::vector<int64_t>& step_lim) {
    for (int64_t t = 0; t < rows; t += kStepRows) {
      const int64_t seen = std::min(valid, step_lim[t / kStepRows] - k0);
      if (seen <= 0) continue;
      Ops::QkStep(q.data() + t * d, d, kt, RoundUp(seen, kColTile), scores.data());
      for (int64_t x = 0; x < kStepRows; ++x) {
        float* s = scores.data() + x * kKeyBlock;
        if (t + x >= rows) {
          std::memset(s, 0, sizeof(float) * kKeyBlock);
          continue;
        }
        // Keys past the row's limit: -inf, so weight exactly 0 on every Exp path.
        for (int64_t c = std::max<int64_t>(lim[t + x] - k0, 0); c < seen; ++c)
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
      Ops::PvStep(scores.data(), v, v_row, seen, d, acc.data() + t * d);
    }
  };

  if (blocked_own && rows > 0) {
    const int64_t i = u.first, len = ItemLength(a, i);
    for (int64_t b = 0; b * kKeyBlock < u.j0 + u.Tokens(a, i); ++b) {
      const int64_t k0 = b * kKeyBlock;
      attend(own.kt.data() + ((h * a.n + i) * own.blocks + b) * d * kKeyBlock,
             a.item_v + ((i * l + k0) * hkv + h) * d, hkv * d, k0, std::min(kKeyBlock, len - k0),
             own_limit, step_own_limit);
    }
  }
  for (int64_t b = 0; b < pre.blocks; ++b) {
    const int64_t k0 = b * kKeyBlock;
    attend(pre.kt.data() + (h * pre.blocks + b) * d * kKeyBlock, a.prefix_v + (k0 * hkv + h) * d,
           hkv * d, k0, std::min(kKeyBlock, plen - k0), limit, step_limit);
  }

  // Rows out; padding tokens (j >= length) of these items and heads get 0.
  r = 0;
  for (int64_t i = u.first; i < u.last; ++i) {
    for (int64_t j = u.j0; j < std::min(u.j1, l); ++j) {
      for (int64_t g = 0; g < group; ++g) {
        float* dst = a.out + ((i * l + j) * hq + h * group + g) * d;
        if (j >= ItemLength(a, i)) {
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
  const int64_t d = a.d, l = a.l, hkv = a.hkv, n = a.n;
  const int64_t plen = PrefixLength(a);
  ThreadPool& pool = ThreadPool::Shared();
  PackedKeys pre, own;
  try {
    pre.blocks = (plen + kKeyBlock - 1) / kKeyBlock;
    pre.kt.assign(hkv * pre.blocks * d * kKeyBlock, 0.f);
    if (l > kRowByRowMaxTokens) {
      own.blocks = (l + kKeyBlock - 1) / kKeyBlock;
      own.kt.assign(hkv * n * own.blocks * d * kKeyBlock, 0.f);
    }
  } catch (const std::bad_alloc&) {
    *error = "out of memory for the packed keys";
    return false;
  }
  // A task a head and key block (blocks are packed apart): a few kv heads still fill every thread.
  pool.ParallelFor(hkv * pre.blocks, [&](int64_t x) {
    const int64_t h = x / pre.blocks, b = x % pre.blocks, first = b * kKeyBlock;
    PackKeys(a.prefix_k + first * hkv * d + h * d, hkv * d, std::min(kKeyBlock, plen - first), d,
             pre.kt.data() + (h * pre.blocks + b) * d * kKeyBlock);
  });
  if (own.blocks > 0) {
    pool.ParallelFor(hkv * n, [&](int64_t unit) {
      const int64_t h = unit / n, i = unit % n;
      PackKeys(a.item_k + (i * l * hkv + h) * d, hkv * d, ItemLength(a, i), d,
               own.kt.data() + (h * n + i) * own.blocks * d * kKeyBlock);
    });
  }

  return attention::RunUnits(
      a, pool, [&](const Unit& u) { RunUnit<Ops>(a, pre, own, plen, u); }, error);
}

}  // namespace

const char* PrefixAttentionPath(int64_t d) {
  const KernelIsa isa = AllowedKernelIsa();
#if defined(__x86_64__)
  if (isa >= KernelIsa::kAvx512 && d % 16 == 0) return "avx512";
  if (isa >= KernelIsa::kAvx2 && d % 16 == 0) return "avx2";
#else
  (void)isa;
  (void)d;
#endif
  return "portable";
}

bool RunPrefixAttention(const PrefixAttentionArgs& args, std::string* error) {
  if (args.n == 0 || args.l == 0 || args.hq == 0 || args.d == 0) return true;  // nothing to write
#if defined(__x86_64__)
  const char* path = PrefixAttentionPath(args.d);
  if (std::strcmp(path, "avx512") == 0) return Run<attention::Avx512Ops>(args, error);
  if (std::strcmp(path, "avx2") == 0) return Run<attention::Avx2Ops>(args, error);
#endif
  return Run<attention::PortableOps>(args, error);
}

namespace {
bool RunCausal(const CausalAttentionArgs& args, std::string* error,
               bool (*run)(const PrefixAttentionArgs&, std::string*)) {
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
  return run(a, error);
}
}  // namespace

bool RunCausalAttention(const CausalAttentionArgs& args, std::string* error) {
  return RunCausal(args, error, RunPrefixAttention);
}

bool RunCausalAttentionBf16(const CausalAttentionArgs& args, std::string* error) {
  return RunCausal(args, error, RunPrefixAttentionBf16);
}

}  // namespace pjrt_score
