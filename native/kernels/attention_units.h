// The work units of the fused attention kernels (prefix_attention.cc, prefix_attention_bf16.cc):
// how a call's rows are cut into units, which tokens and keys a unit's rows have, and the
// parallel run of the units on the pool with its out-of-memory handling.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/attention_args.h"
#include "kernels/thread_pool.h"

namespace pjrt_score {
namespace attention {

// The call's valid prefix keys: prefix_length clamped to [0, P].
inline int64_t PrefixLength(const PrefixAttentionArgs& a) {
  return std::min<int64_t>(std::max<int32_t>(a.prefix_length, 0), a.p);
}

// Item i's tokens that are not padding: item_lengths[i] clamped to [0, L].
inline int64_t ItemLength(const PrefixAttentionArgs& a, int64_t i) {
  return std::min<int64_t>(std::max<int32_t>(a.item_lengths[i], 0), a.l);
}

// The prefix keys item i sees: all `plen` valid ones, or fewer where the call limits them per item.
inline int64_t PrefixLimit(const PrefixAttentionArgs& a, int64_t plen, int64_t i) {
  if (a.item_prefix_lengths == nullptr) return plen;
  return std::min<int64_t>(std::max<int32_t>(a.item_prefix_lengths[i], 0), plen);
}

// One work unit: kv head `h` and tokens [j0, j1) of items [first, last). Items
// of at most kRowByRowMaxTokens come whole, several to a unit; a longer item
// comes alone, in segments of its tokens.
struct Unit {
  int64_t h = 0, first = 0, last = 0, j0 = 0, j1 = 0;

  // The unit's tokens of item i that are not padding.
  int64_t Tokens(const PrefixAttentionArgs& a, int64_t i) const {
    return std::max<int64_t>(0, std::min(ItemLength(a, i), j1) - j0);
  }
};

// The call's units for a pool of `threads`; throws std::bad_alloc.
std::vector<Unit> PlanUnits(const PrefixAttentionArgs& a, int threads);

// Plans the call's units and runs run_unit on each on the pool. run_unit may throw
// std::bad_alloc (its scratch) and nothing else. Returns false with `error` set where memory ran
// out (the plan or a unit's scratch); never throws.
bool RunUnits(const PrefixAttentionArgs& a, ThreadPool& pool,
              const std::function<void(const Unit&)>& run_unit, std::string* error);

}  // namespace attention
}  // namespace pjrt_score
