#include "kernels/attention_units.h"

#include <atomic>
#include <new>

#include "kernels/attention_blocking.h"

namespace pjrt_score {
namespace attention {

std::vector<Unit> PlanUnits(const PrefixAttentionArgs& a, int threads) {
  const int64_t l = a.l, hkv = a.hkv, n = a.n, group = a.hq / hkv;
  std::vector<Unit> units;
  if (l > kRowByRowMaxTokens) {
    // A long item alone, in segments of its tokens: their rows share each key block.
    const int64_t seg = std::max<int64_t>(1, kRowsPerUnit / group);
    for (int64_t h = 0; h < hkv; ++h)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j0 = 0; j0 < l; j0 += seg) units.push_back({h, i, i + 1, j0, j0 + seg});
    return units;
  }
  // Items per unit: enough rows to share each key block, and at least two units per thread so
  // that uneven item lengths even out.
  int64_t per_unit = std::max<int64_t>(1, kRowsPerUnit / std::max<int64_t>(1, l * group));
  const int64_t want_units = 2 * static_cast<int64_t>(threads);
  while (per_unit > 1 && hkv * ((n + per_unit - 1) / per_unit) < want_units)
    per_unit = (per_unit + 1) / 2;
  const int64_t chunks = (n + per_unit - 1) / per_unit;
  // Causal calls give later units more keys; handing them out biggest first was no faster at the
  // prefill's shape (wall median equal over 40 alternating rounds; units are small and handed out
  // one by one), so units go in order.
  for (int64_t c = 0; c < chunks; ++c)
    for (int64_t h = 0; h < hkv; ++h)
      units.push_back({h, c * per_unit, std::min(n, (c + 1) * per_unit), 0, l});
  return units;
}

bool RunUnits(const PrefixAttentionArgs& a, ThreadPool& pool,
              const std::function<void(const Unit&)>& run_unit, std::string* error) {
  std::vector<Unit> units;
  try {
    units = PlanUnits(a, pool.threads());
  } catch (const std::bad_alloc&) {
    *error = "out of memory for the work units";
    return false;
  }
  std::atomic<bool> failed{false};
  pool.ParallelFor(static_cast<int64_t>(units.size()), [&](int64_t k) {
    try {
      run_unit(units[k]);
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

}  // namespace attention
}  // namespace pjrt_score
