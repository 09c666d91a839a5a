import * as fs from 'node:fs';
import * as path from 'node:path';
import { cacheDir } from '../util/cache-dir';
import { fetchWheelAsset, FetchOptions, WheelAsset } from '../util/wheel-fetch';

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

export const FETCH_PLUGIN_COMMAND = 'npx pjrt-score fetch --plugin cpu';

export class PluginNotFoundError extends Error {
  readonly code = 'PLUGIN_NOT_FOUND';
  constructor(message: string) {
    super(message);
    this.name = 'PluginNotFoundError';
  }
}

/**
 * Which plugin file to load: an explicit path, else `PJRT_PLUGIN_PATH`, else
 * the cached CPU plugin. A missing file is an error that names the fix.
 */
export function resolvePluginPath(explicit?: string): string {
  const chosen = explicit ?? (process.env.PJRT_PLUGIN_PATH || undefined);
  if (chosen !== undefined) {
    const resolved = path.resolve(chosen);
    if (!fs.existsSync(resolved)) {
      throw new PluginNotFoundError(`PJRT plugin not found at ${resolved} (from ${explicit !== undefined ? 'the plugin option' : 'PJRT_PLUGIN_PATH'})`);
    }
    return resolved;
  }
  if (!fs.existsSync(CPU_PLUGIN.destination)) {
    throw new PluginNotFoundError(
      `The XLA CPU PJRT plugin is not in the cache (${CPU_PLUGIN.destination}).\n` +
        `Fetch it with:  ${FETCH_PLUGIN_COMMAND}\n` +
        `or point PJRT_PLUGIN_PATH at a PJRT plugin (.so).`,
    );
  }
  return CPU_PLUGIN.destination;
}

export function fetchCpuPlugin(options?: FetchOptions): string {
  return fetchWheelAsset(CPU_PLUGIN, options);
}
