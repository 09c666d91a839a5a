/**
 * Which PJRT plugin file a client loads: an explicit path (or the name
 * `cuda`: the cached set of `pjrt-score fetch --plugin cuda`, else an
 * installed jax CUDA plugin), else `PJRT_PLUGIN_PATH` (the same),
 * else the cached CPU plugin, which the assets room
 * fetches on first use (unless PJRT_SCORE_OFFLINE=1).
 */
import { PjrtScoreError } from '../util/errors';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CPU_PLUGIN, FETCH_PLUGIN_COMMAND, ensureCpuPlugin } from '../assets/plugin';
import { isOffline } from '../assets/wheel-fetch';
import { CUDA_PLUGIN_NAME, findInstalledCudaPlugin } from '../assets/installed-cuda-plugin';
import { CUDA13_PLUGIN_FILE, isCuda13Fetched } from '../assets/cuda-plugin-wheels';

export { CPU_PLUGIN, FETCH_PLUGIN_COMMAND, fetchCpuPlugin } from '../assets/plugin';
/** The wheel version of a loaded jax CUDA plugin file (its version.py), or undefined. */
export { cudaPluginWheelVersion } from '../assets/installed-cuda-plugin';

export class PluginNotFoundError extends PjrtScoreError {
  declare readonly code: 'PLUGIN_NOT_FOUND';
  constructor(message: string) {
    super(message, 'PLUGIN_NOT_FOUND');
    this.name = 'PluginNotFoundError';
  }
}

function explicitPluginPath(explicit?: string): string | undefined {
  const chosen = explicit ?? (process.env.PJRT_PLUGIN_PATH || undefined);
  if (chosen === undefined) return undefined;
  if (chosen === CUDA_PLUGIN_NAME) {
    // The set `pjrt-score fetch --plugin cuda` put in the cache, else an installed jax CUDA plugin.
    if (isCuda13Fetched()) return CUDA13_PLUGIN_FILE;
    const found = findInstalledCudaPlugin();
    if ('why' in found) throw new PluginNotFoundError(`plugin "${CUDA_PLUGIN_NAME}": ${found.why}`);
    return found.path;
  }
  const resolved = path.resolve(chosen);
  if (!fs.existsSync(resolved)) {
    throw new PluginNotFoundError(
      `PJRT plugin not found at ${resolved} (from ` +
        `${explicit !== undefined ? 'the plugin option' : 'PJRT_PLUGIN_PATH'})`,
    );
  }
  return resolved;
}

function missingCpuPlugin(why: string): PluginNotFoundError {
  return new PluginNotFoundError(
    `The XLA CPU PJRT plugin is not in the cache (${CPU_PLUGIN.destination})${why}.\n` +
      `Fetch it with:  ${FETCH_PLUGIN_COMMAND}\n` +
      `or point PJRT_PLUGIN_PATH at a PJRT plugin (.so).`,
  );
}

/**
 * Which plugin file to load, without fetching: an explicit path, else
 * `PJRT_PLUGIN_PATH`, else the cached CPU plugin. A missing file is an error
 * that names the fix.
 */
export function resolvePluginPath(explicit?: string): string {
  const chosen = explicitPluginPath(explicit);
  if (chosen !== undefined) return chosen;
  if (!fs.existsSync(CPU_PLUGIN.destination)) throw missingCpuPlugin('');
  return CPU_PLUGIN.destination;
}

/**
 * Like resolvePluginPath, but a missing cached CPU plugin is fetched now
 * (progress on stderr), except with PJRT_SCORE_OFFLINE=1.
 */
export async function ensurePluginPath(explicit?: string): Promise<string> {
  const chosen = explicitPluginPath(explicit);
  if (chosen !== undefined) return chosen;
  if (fs.existsSync(CPU_PLUGIN.destination)) return CPU_PLUGIN.destination;
  if (isOffline()) throw missingCpuPlugin(' and PJRT_SCORE_OFFLINE=1 forbids fetching it now');
  return ensureCpuPlugin();
}
