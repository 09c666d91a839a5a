/**
 * The plugin name `cuda`: the CUDA PJRT plugin of an installed jax CUDA wheel
 * (`jax-cuda13-pjrt`, else `jax-cuda12-pjrt`), found through the Python that
 * has it. Its RPATH finds the NVIDIA runtime wheels installed beside it
 * (nvidia/cu13/lib, nvidia/cudnn/lib, ...), so loading it by path needs no
 * LD_LIBRARY_PATH. Which Python: PJRT_SCORE_PYTHON, else python3.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The jax plugin packages tried, newest CUDA first, and the file each ships. */
const JAX_CUDA_PLUGINS = ['jax_plugins.xla_cuda13', 'jax_plugins.xla_cuda12'];
const PLUGIN_FILE = 'xla_cuda_plugin.so';

export const CUDA_PLUGIN_NAME = 'cuda';

/** The path of the installed jax CUDA plugin, or an explanation of why there is none. */
export function findInstalledCudaPlugin(): { path: string } | { why: string } {
  const python = process.env.PJRT_SCORE_PYTHON || 'python3';
  const script = [
    'import importlib.util, pathlib, sys',
    `for name in ${JSON.stringify(JAX_CUDA_PLUGINS)}:`,
    '    try:',
    '        spec = importlib.util.find_spec(name)',
    '    except ModuleNotFoundError:',
    '        spec = None',
    '    if spec and spec.origin:',
    `        so = pathlib.Path(spec.origin).parent / ${JSON.stringify(PLUGIN_FILE)}`,
    '        if so.is_file():',
    '            print(so)',
    '            sys.exit(0)',
    'sys.exit(3)',
  ].join('\n');
  const r = spawnSync(python, ['-c', script], { encoding: 'utf8', timeout: 30_000 });
  if (r.error)
    return {
      why:
        `${python} could not run (${r.error.message}); ` +
        `set PJRT_SCORE_PYTHON to the Python that has jax's CUDA plugin`,
    };
  const found = r.stdout.trim().split('\n').pop() ?? '';
  if (r.status === 0 && found) return { path: found };
  return {
    why:
      `${python} has no jax CUDA plugin (${JAX_CUDA_PLUGINS.join(' or ')}): ` +
      `install one (pip install "jax[cuda13]") or give the plugin's path`,
  };
}

/**
 * The wheel version of a jax CUDA plugin file: the `_version = "x.y.z"` of the `version.py` the
 * wheel ships beside `xla_cuda_plugin.so` (the pinned jax-cuda13-pjrt does). Undefined for a plugin
 * file with no such neighbour (a plugin given by a path from elsewhere): its version is unknown.
 */
export function cudaPluginWheelVersion(pluginPath: string): string | undefined {
  try {
    const text = readFileSync(join(dirname(pluginPath), 'version.py'), 'utf8');
    return /^_version\s*(?::\s*str\s*)?=\s*["']([^"']+)["']/m.exec(text)?.[1];
  } catch {
    return undefined;
  }
}
