/**
 * What the Scorer keeps across requests by default: compiled programs and
 * query K/V. Both caches evict least recently used entries at these caps, so
 * they bound the memory the Scorer holds beyond its weights. Kept apart (no
 * imports) so the service's option help can name them without loading the
 * native addon. What one entry costs in memory, as measured: docs/service.md
 * ("Memory").
 */
export const DEFAULT_JIT_CACHE_ENTRIES = 48;
export const DEFAULT_PREFIX_CACHE_BYTES = 512 * 2 ** 20;
