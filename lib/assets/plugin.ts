/**
 * The PJRT plugins pjrt-score can fetch: the official XLA CPU plugin (the
 * default) and the CUDA 12 one, each a member of a pinned PyPI wheel.
 */
import * as path from 'node:path';
import { cacheDir } from '../util/cache-dir';
import { FetchError, FetchOptions, WheelAsset, ensureWheelAsset, fetchWheelAsset } from './wheel-fetch';

/**
 * The Linux architectures PyPI's xla-cpu-pjrt 0.0.1 (PJRT C API 0.81) has a
 * wheel for, by Node's process.arch, each pinned by its own sha256. Both
 * wheels are manylinux_2_27 (glibc >= 2.27); there is none for macOS,
 * Windows or musl. docs/install.md's platforms table lists the same.
 */
const CPU_PLUGIN_WHEELS: Readonly<
  Record<string, { readonly machine: string; readonly sha256: string; readonly folder: string }>
> = {
  x64: {
    machine: 'x86_64',
    sha256: '55837b6b7b47daa717f2d9a5a03563ea0ceaa338d06a81a1e2d3f060d960decc',
    folder: 'xla-cpu-pjrt-0.0.1',
  },
  arm64: {
    machine: 'aarch64',
    sha256: '8f613be6e891858f40d64f9799319502fff42689661944fc18a6ffd8210b30c9',
    folder: 'xla-cpu-pjrt-0.0.1-aarch64',
  },
};

/** The CPU plugin's wheel for each architecture of CPU_PLUGIN_WHEELS (process.arch names). */
export const CPU_PLUGINS: Readonly<Record<string, WheelAsset>> = Object.fromEntries(
  Object.entries(CPU_PLUGIN_WHEELS).map(([arch, w]) => [
    arch,
    {
      label: `XLA CPU PJRT plugin (linux-${arch})`,
      requirement: 'xla-cpu-pjrt==0.0.1',
      wheelFile: `xla_cpu_pjrt-0.0.1-py3-none-manylinux_2_27_${w.machine}.whl`,
      wheelSha256: w.sha256,
      member: 'xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so',
      destination: path.join(cacheDir(), 'plugins', w.folder, 'xla_cpu_pjrt.so'),
      pipArgs: ['--only-binary=:all:', '--platform', `manylinux_2_27_${w.machine}`, '--python-version', '3.11'],
    },
  ]),
);

/** True on a Linux whose C library is musl (Node's report has no glibc version there). */
function isMusl(): boolean {
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return header !== undefined && header.glibcVersionRuntime === undefined;
}

/**
 * The CPU plugin's wheel for a platform and architecture (default: this
 * machine's); a FetchError that names both where PyPI has none.
 */
export function cpuPluginFor(platform: string = process.platform, arch: string = process.arch): WheelAsset {
  const asset = CPU_PLUGINS[arch];
  const musl = platform === 'linux' && platform === process.platform && arch === process.arch && isMusl();
  if (platform !== 'linux' || asset === undefined || musl) {
    throw new FetchError(
      `no XLA CPU PJRT plugin for ${platform}-${arch}${musl ? ' (musl)' : ''}: ` +
        `PyPI's xla-cpu-pjrt 0.0.1 has wheels for ` +
        `${Object.keys(CPU_PLUGINS)
          .map((a) => `linux-${a}`)
          .join(' and ')} (glibc >= 2.27) only, none for macOS, Windows or musl; ` +
        'point PJRT_PLUGIN_PATH at a PJRT plugin built for this machine',
    );
  }
  return asset;
}

/**
 * The official CPU plugin for this machine's architecture (PyPI wheel
 * xla-cpu-pjrt 0.0.1). On a platform without a wheel: the linux-x64 entry,
 * and fetching through cpuPluginFor names the platform.
 */
export const CPU_PLUGIN: WheelAsset = CPU_PLUGINS[process.arch] ?? CPU_PLUGINS.x64;

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
export async function fetchCpuPlugin(options?: FetchOptions): Promise<string> {
  return fetchWheelAsset(cpuPluginFor(), options);
}

/** First use: the cached CPU plugin, fetched now if missing (silent when cached). */
export async function ensureCpuPlugin(options?: FetchOptions): Promise<string> {
  return ensureWheelAsset(cpuPluginFor(), options);
}
