'use strict';
/**
 * The Scorer options every GPU bench process loads with (pjrt-run.js,
 * scripts/lab/gpu/profile-pass.js): the model, plugin, precision and weights
 * asked for, the prefix cache off (every request pays its query), limits
 * high enough for the workloads, and the disk cache given or the default.
 */
function benchScorerOptions(a) {
  return {
    model: a.model,
    plugin: a.plugin,
    precision: a.precision,
    weights: a.weights,
    prefixCacheBytes: 0,
    maxItems: 100000,
    maxRequestTokens: 1e8,
    diskCache: a.diskCache ?? true,
  };
}

module.exports = { benchScorerOptions };
