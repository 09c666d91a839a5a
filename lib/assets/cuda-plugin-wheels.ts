/**
 * `pjrt-score fetch --plugin cuda`: the CUDA PJRT plugin of the pinned
 * release (CUDA_PLUGIN_PIN, lib/util/cuda-plugin-pin.ts: the version
 * docs/gpu.md documents and the cuDNN attention form is pinned to) and the
 * NVIDIA runtime wheels its RPATH expects, each pinned by version and
 * sha256, unpacked into one folder laid out as site-packages:
 *
 *   <cache>/plugins/jax-cuda13-pjrt-<version>/jax_plugins/xla_cuda13/xla_cuda_plugin.so
 *   <cache>/plugins/jax-cuda13-pjrt-<version>/nvidia/{cu13,cudnn,nccl,...}/lib
 *
 * The plugin's RPATH ($ORIGIN/../../nvidia/cu13/lib, .../nvidia/cudnn/lib,
 * .../nvidia/nccl/lib) then finds the libraries it opens without
 * LD_LIBRARY_PATH, and a GPU machine with a driver needs no Python
 * environment of its own (pip is used only to download).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { cacheDir } from '../util/cache-dir';
import { CUDA_PLUGIN_PIN } from '../util/cuda-plugin-pin';
import { withFileLock } from './file-lock';
import { FetchOptions, defaultLog, hasMarker, writeMarker } from './cached-file';
import { FetchError, WheelSpec, downloadVerifiedWheel, runToStderr } from './wheel-fetch';

export const CUDA13_PLUGIN_VERSION = CUDA_PLUGIN_PIN.version;

/** The folder the wheels unpack into, and the plugin file inside it. */
export const CUDA13_SITE = path.join(cacheDir(), 'plugins', `${CUDA_PLUGIN_PIN.wheel}-${CUDA13_PLUGIN_VERSION}`);
export const CUDA13_PLUGIN_FILE = path.join(CUDA13_SITE, 'jax_plugins', 'xla_cuda13', 'xla_cuda_plugin.so');

const wheel = (name: string, version: string, file: string, sha256: string): WheelSpec =>
  Object.freeze({
    label: `${name} ${version}`,
    requirement: `${name}==${version}`,
    wheelFile: file,
    wheelSha256: sha256,
    pipArgs: ['--only-binary=:all:'],
  });

/**
 * The plugin wheel first (its sha256 is that of the pinned version), then the NVIDIA runtime
 * wheels that release of jax-cuda13-plugin names (its `with-cuda` extra), each at the lowest
 * version it accepts: the CUDA 13.0 release it was built against, which a CUDA 13.0 driver (580)
 * runs. nvidia-nvvm carries libdevice, which XLA links into
 * every program that takes an exp or a log; nvidia-cuda-nvcc carries ptxas.
 */
export const CUDA13_WHEELS: readonly WheelSpec[] = Object.freeze([
  wheel(
    CUDA_PLUGIN_PIN.wheel,
    CUDA13_PLUGIN_VERSION,
    `jax_cuda13_pjrt-${CUDA13_PLUGIN_VERSION}-py3-none-manylinux_2_27_x86_64.whl`,
    'e5ff589d43064913bb74027682d89639c7ea48f9f81c2bae6fc75117e913f93e',
  ),
  wheel(
    'nvidia-cublas',
    '13.0.0.19',
    'nvidia_cublas-13.0.0.19-py3-none-manylinux_2_27_x86_64.whl',
    'f6723af2e8e2600a11dc384037d90d9bf93070e346c24ef2e8f9001658c99896',
  ),
  wheel(
    'nvidia-cuda-cupti',
    '13.0.48',
    'nvidia_cuda_cupti-13.0.48-py3-none-manylinux_2_25_x86_64.whl',
    '417699e216b23d81bc0bbcb7032352f81b9c5372ef73c097a01abb83125a3d09',
  ),
  wheel(
    'nvidia-cuda-nvcc',
    '13.0.48',
    'nvidia_cuda_nvcc-13.0.48-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
    'd529c52d30c403cbf6fb17a3009530a48d94ea3ad99c990ad0301d9c744eb866',
  ),
  wheel(
    'nvidia-cuda-nvrtc',
    '13.0.48',
    'nvidia_cuda_nvrtc-13.0.48-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl',
    '87e13d186905a35e7c04ad553a2abded0fba22f93b43d02e5da6f6cf73fb4d0a',
  ),
  wheel(
    'nvidia-cuda-runtime',
    '13.0.48',
    'nvidia_cuda_runtime-13.0.48-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
    '5b54d12087a1abff81a4cbfa6556876e3afea1fc60da2e0816da374619810c89',
  ),
  wheel(
    'nvidia-cudnn-cu13',
    '9.12.0.46',
    'nvidia_cudnn_cu13-9.12.0.46-py3-none-manylinux_2_27_x86_64.whl',
    'f3befad533e234069eb61ae0d12cb7aa8af0ccf36f28c1d4273cc0005d990de0',
  ),
  wheel(
    'nvidia-cufft',
    '12.0.0.15',
    'nvidia_cufft-12.0.0.15-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
    '9f160b1f018e80bcb0d7c0fa50564b042fa26b13edc1b1ff14b6375a9edd2812',
  ),
  wheel(
    'nvidia-cusolver',
    '12.0.3.29',
    'nvidia_cusolver-12.0.3.29-py3-none-manylinux_2_27_x86_64.whl',
    '6f54c2eed5edab54c224dd1852dde80ba76b2b78e6d3ce7344fef5dfc66d16ab',
  ),
  wheel(
    'nvidia-cusparse',
    '12.6.2.49',
    'nvidia_cusparse-12.6.2.49-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
    'efcf0b01e3a0827c144feff5391456b8a06e9ce63dcd51c0943e32e605251952',
  ),
  wheel(
    'nvidia-nccl-cu13',
    '2.27.7',
    'nvidia_nccl_cu13-2.27.7-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
    'b28a524abd8389b76a4a3f133c76a7aaa7005e47fcaa9d9603b90103927a3f93',
  ),
  wheel(
    'nvidia-nvjitlink',
    '13.0.39',
    'nvidia_nvjitlink-13.0.39-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl',
    'bc3179be558329ef9687884c6faa27cdc0659bdbc642432ec8cc6cc00d182627',
  ),
  wheel(
    'nvidia-nvshmem-cu13',
    '3.3.20',
    'nvidia_nvshmem_cu13-3.3.20-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
    'e9d4bd6a01e6a2745903b5b7347fce5b0dddee0db95950fba313dd47c6990b5b',
  ),
  wheel(
    'nvidia-nvvm',
    '13.0.48',
    'nvidia_nvvm-13.0.48-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl',
    'a7cf76afc14682c46d43d5cdc370fc1da69cb84270e6854c6b3869584ecbd483',
  ),
]);

/** Where the marker of one unpacked wheel lives: its sha256, written after the whole wheel is in place. */
function markerOf(spec: WheelSpec): string {
  return path.join(CUDA13_SITE, '.wheels', `${spec.wheelFile}.sha256`);
}

function isUnpacked(spec: WheelSpec): boolean {
  return hasMarker(markerOf(spec), spec.wheelSha256);
}

/** True when every wheel of the set is unpacked (verified by its marker) and the plugin file is there. */
export function isCuda13Fetched(): boolean {
  return fs.existsSync(CUDA13_PLUGIN_FILE) && CUDA13_WHEELS.every(isUnpacked);
}

// Unpacks a whole wheel, keeping each member's permission bits (ptxas must stay executable).
const UNPACK_PY = `
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for info in z.infolist():
        out = z.extract(info, sys.argv[2])
        mode = (info.external_attr >> 16) & 0o777
        if mode and not info.is_dir():
            os.chmod(out, mode)
`;

/**
 * Puts the plugin and its runtime wheels in the cache unless they are there;
 * returns the plugin file. Each wheel is downloaded, checked against its
 * sha256, unpacked and marked in turn, so an interrupted fetch resumes at the
 * first unmarked wheel. Safe when several processes call it at once.
 */
export async function fetchCuda13Plugin(options: FetchOptions = {}): Promise<string> {
  const log = options.log ?? defaultLog;
  if (isCuda13Fetched()) {
    log(`[pjrt-score] CUDA plugin ${CUDA13_PLUGIN_VERSION}: already in ${CUDA13_SITE}`);
    return CUDA13_PLUGIN_FILE;
  }
  fs.mkdirSync(path.join(CUDA13_SITE, '.wheels'), { recursive: true });
  return withFileLock(
    `${CUDA13_SITE}.lock`,
    async () => {
      for (const spec of CUDA13_WHEELS) {
        if (isUnpacked(spec)) continue;
        const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-fetch-'));
        try {
          const file = await downloadVerifiedWheel(spec, work, { log });
          log(`[pjrt-score] ${spec.label}: unpacking into ${CUDA13_SITE}`);
          const code = await runToStderr('python3', ['-c', UNPACK_PY, file, CUDA13_SITE]);
          if (code !== 0) throw new FetchError(`${spec.label}: could not unpack ${spec.wheelFile}`);
          writeMarker(markerOf(spec), spec.wheelSha256);
        } finally {
          fs.rmSync(work, { recursive: true, force: true });
        }
      }
      if (!fs.existsSync(CUDA13_PLUGIN_FILE))
        throw new FetchError(`the plugin wheel did not give ${CUDA13_PLUGIN_FILE}`);
      log(`[pjrt-score] CUDA plugin ${CUDA13_PLUGIN_VERSION}: ready at ${CUDA13_PLUGIN_FILE}`);
      return CUDA13_PLUGIN_FILE;
    },
    () => log('[pjrt-score] CUDA plugin: another process is fetching it; waiting'),
  );
}
