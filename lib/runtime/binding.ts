/**
 * The raw native binding, typed in one place, and its loader. Nothing outside
 * lib/runtime touches these objects: the facade classes validate every input
 * first, so the binding's own checks are a safety net, not the interface.
 */
import * as path from 'node:path';
import { DisposedError, PjrtError } from './errors';
import { applyKernelProbe, KernelProbeVerdict } from './kernel-probe';
import type { KernelIsa } from './kernel-isas';

export type NativeOptionValue = number | string | boolean;

export interface NativeDevice {
  readonly id: number;
  readonly kind: string;
  readonly description: string;
  /**
   * Bytes the plugin lets us allocate on the device (its memory stats), or null where it does not say (the CPU plugin).
   */
  readonly memoryLimit: number | null;
}

export interface NativeClient {
  readonly platformName: string;
  readonly platformVersion: string;
  readonly apiVersion: { readonly major: number; readonly minor: number };
  readonly prefixAttentionKernel: boolean;
  readonly devices: NativeDevice[];
  readonly disposed: boolean;
  /** xlaOptions: XLA DebugOptions overrides for this compile (names [a-z0-9_]; a TypeError otherwise). */
  compile(text: string, xlaOptions?: Readonly<Record<string, NativeOptionValue>>): Promise<NativeExecutable>;
  upload(data: ArrayBufferView, dims: number[], dtype: string): Promise<NativeBuffer>;
  deserialize(bytes: Uint8Array): Promise<NativeExecutable>;
  dispose(): void;
}

export interface NativeExecutable {
  readonly numOutputs: number;
  readonly outputTypes: string[];
  readonly outputDims: number[][];
  readonly disposed: boolean;
  execute(args: NativeBuffer[]): Promise<NativeBuffer[]>;
  serialize(): Promise<Uint8Array>;
  dispose(): void;
}

export interface NativeBuffer {
  readonly dims: number[];
  readonly dtype: string;
  readonly byteLength: number;
  readonly disposed: boolean;
  toHost(): Promise<ArrayBuffer>;
  dispose(): void;
}

interface NativeBinding {
  Client: {
    create(pluginPath: string, options?: Record<string, NativeOptionValue>): Promise<NativeClient>;
  };
  Executable: new (...args: never[]) => NativeExecutable;
  DeviceBuffer: new (...args: never[]) => NativeBuffer;
  /** Bytes of live device buffers reported to V8 as external memory. */
  externalBytes(): number;
  /** true begins a span whose changes to externalBytes reach V8 once, when it ends (false); returns the depth. */
  deferExternalMemory(on: boolean): number;
  /** malloc_trim(0) on a worker thread; resolves whether memory was given back. */
  releaseFreeHeap(): Promise<boolean>;
  /** The classes the addon makes its errors from (called once, at load). */
  setErrorClasses(pjrtError: typeof PjrtError, disposedError: typeof DisposedError): void;
  /** Which paths the fused attention kernels take on this CPU for a head dim (native/kernels/kernel_isa.h). */
  attentionKernelPaths(headDim: number): NativeKernelPaths;
  /**
   * The inner loop the bf16 matmul kernel takes now: "avx512bf16" or "portable"; with "f32", the f32
   * kernel's: "avx512" or "portable" (PJRT_SCORE_KERNEL_ISA caps both).
   */
  matmulKernelPath(kernel?: 'f32'): string;
  /**
   * The kernels' thread pool size and what set it, and the CPUs the process may use now (native/kernels/thread_pool.h,
   * native/kernels/usable_cpus.h).
   */
  kernelThreads(): KernelThreads;
  /**
   * A bf16 tile path's self-check against the portable tiles, run now (native/kernels/bf16_tiles_check.h): 'portable',
   * 'avx512bf16', 'amx' where the CPU has it, 'test-swapped-pairs' (a deliberately wrong product).
   */
  checkBf16Tiles(path: string): { readonly ok: boolean; readonly detail: string };
  /**
   * The CPU's best instruction set, the probe's ceiling and what the kernels take now; runs nothing
   * (native/kernels/kernel_isa.h).
   */
  kernelIsas(): { readonly cpu: KernelIsa; readonly tried: KernelIsa; readonly allowed: KernelIsa };
  /** The probe's verdict: the highest instruction set shown to run here (kernel-probe.ts). */
  setTriedKernelIsa(isa: KernelIsa): void;
  /** One instruction set's trial (native/kernels/kernel_probe.h): only in the probe's child process. */
  probeKernelIsa(isa: KernelIsa): { readonly ok: boolean; readonly detail: string };
}

/** The fused attention kernels' own thread pool (docs/design.md, 'Threads'). */
export interface KernelThreads {
  /** Threads the pool runs the kernels on (sized once, at first use). */
  readonly threads: number;
  /** What set `threads`: 'affinity', 'cgroup quota (<file>)' or 'PJRT_SCORE_KERNEL_THREADS'. */
  readonly source: string;
  /** CPUs in the process's affinity mask now (sched_getaffinity). */
  readonly affinity: number;
  /** CPUs the cgroup CPU quota allows now, rounded up; 0 where there is none. */
  readonly quota: number;
}

export { KERNEL_ISAS, type KernelIsa } from './kernel-isas';

export interface NativeKernelPaths {
  /** The CPU's best (CPUID, XCR0; AMX once the kernel granted tile state). */
  readonly cpu: KernelIsa;
  /**
   * The CPU's best capped by the kernel probe's verdict and by PJRT_SCORE_KERNEL_ISA (or PJRT_SCORE_KERNEL_PORTABLE=1).
   */
  readonly allowed: KernelIsa;
  /** The inner loops an f32 call takes: 'avx512', 'avx2' or 'portable'. */
  readonly f32: string;
  /** The tiles a bf16 call takes: 'amx', 'avx512bf16' or 'portable' (absent before the bf16 kernel). */
  readonly bf16?: string;
  /**
   * Present when a matrix-unit bf16 path failed its once-per-process self-check and `bf16` is what dispatch fell back
   * to: which, why, and the path used.
   */
  readonly bf16Note?: string;
}

const packageRoot = path.join(__dirname, '..', '..');
let loaded: NativeBinding | undefined;

let addonFile = '';

/**
 * Loads the addon: build/Release where a build made one (node-gyp-build looks there first: a checkout
 * that ran `npm run build:native`), else the prebuild for this platform; then applies the kernel
 * probe's verdict (kernel-probe.ts) before anything can run a kernel.
 */
export function binding(): NativeBinding {
  if (loaded) return loaded;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const gypBuild = require('node-gyp-build') as { resolve(dir: string): string };
    addonFile = gypBuild.resolve(packageRoot);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    loaded = require(addonFile) as NativeBinding;
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new Error(
      `pjrt-score could not load its native addon for ${process.platform}-${process.arch} ` +
        `(Node ${process.versions.node}, N-API ${process.versions.napi}).\n` +
        `  Reason: ${reason}\n` +
        '  Fixes, in order:\n' +
        '    1. reinstall so the prebuilt binary is used: npm install pjrt-score\n' +
        '    2. or build from source (needs cmake and a C++17 compiler): allow its install script\n' +
        '       (npm install-scripts approve pjrt-score), then npm rebuild pjrt-score;\n' +
        '       in a checkout of pjrt-score itself: npm run build:native\n' +
        '  Prebuilt binaries ship for linux-x64 and linux-arm64 (glibc >= 2.17); macOS, Windows and musl\n' +
        '  are not supported (PyPI has no XLA CPU plugin for them): see README.md, Platforms.',
      { cause: err },
    );
  }
  // Errors the addon throws or rejects with are instances of the exported classes.
  loaded.setErrorClasses(PjrtError, DisposedError);
  applyKernelProbe(loaded, addonFile);
  return loaded;
}

/** The kernel probe's verdict in this process (loads the addon first). */
export function kernelProbe(): KernelProbeVerdict {
  return applyKernelProbe(binding(), addonFile);
}
