/**
 * The PJRT plugins pjrt-score can fetch: the official XLA CPU plugin (the
 * default) and the CUDA 12 one, each a member of a pinned PyPI wheel.
 */
import * as path from 'node:path';
import { cacheDir } from '../util/cache-dir';
import { FetchOptions, WheelAsset, ensureWheelAsset, fetchWheelAsset } from './wheel-fetch';

/** The official CPU plugin: PyPI wheel xla-cpu-pjrt 0.0.1 (PJRT C API 0.81). */
export const CPU_PLUGIN: WheelAsset = {
  label: 'XLA CPU PJRT plugin',
  requirement: 'xla-cpu-pjrt==0.0.1',
  wheelFile: 'xla_cpu_pjrt-0.0.1-py3-none-manylinux_2_27_x86_64.whl',
  wheelSha256: '55837b6b7b47daa717f2d9a5a03563ea0ceaa338d06a81a1e2d3f060d960decc',
  member: 'xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so',
  destination: path.join(cacheDir(), 'plugins', 'xla-cpu-pjrt-0.0.1', 'xla_cpu_pjrt.so'),
  pipArgs: ['--only-binary=:all:', '--platform', 'manylinux_2_27_x86_64', '--python-version', '3.11'],
};

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

export const FETCH_PLUGIN_COMMAND = 'npx pjrt-score fetch --plugin cpu';

/** `pjrt-score fetch --plugin cpu`: fetch, or say it is already there. */
export function fetchCpuPlugin(options?: FetchOptions): Promise<string> {
  return fetchWheelAsset(CPU_PLUGIN, options);
}

/** First use: the cached CPU plugin, fetched now if missing (silent when cached). */
export function ensureCpuPlugin(options?: FetchOptions): Promise<string> {
  return ensureWheelAsset(CPU_PLUGIN, options);
}
