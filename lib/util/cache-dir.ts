import * as os from 'node:os';
import * as path from 'node:path';

/**
 * The directory that holds everything pjrt-score downloads or generates:
 * PJRT plugins, model files and serialized executables. Never inside git.
 * `PJRT_SCORE_CACHE` overrides the default `~/.cache/pjrt-score`.
 */
export function cacheDir(): string {
  const fromEnv = process.env.PJRT_SCORE_CACHE;
  if (fromEnv && fromEnv.trim() !== '') return path.resolve(fromEnv);
  const xdg = process.env.XDG_CACHE_HOME;
  const base = xdg && xdg.trim() !== '' ? xdg : path.join(os.homedir(), '.cache');
  return path.join(base, 'pjrt-score');
}
