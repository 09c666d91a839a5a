/**
 * lib/util: small helpers below every other room: the cache directory, the
 * element-type table, static-shape helpers, the RoPE frequencies, the
 * pinned CUDA plugin release, the base error class.
 * May import: nothing in lib/.
 */
export { cacheDir } from './cache-dir';
export { elementCount } from './dims';
export { ropeFrequencies } from './rope';
export { PjrtScoreError } from './errors';
