import * as path from 'node:path';
import { binding, NativeClient, NativeDevice, NativeOptionValue } from './binding';
import { DeviceBuffer } from './device-buffer';
import { dimsProblem } from '../util/dims';
import { arrayName, DType, DTYPES, elementCount, inferDType, isDType } from './dtype';
import { DisposedError, fromNative } from './errors';
import { hostMemoryBytes } from './host-memory';
import { unpackEnvelope } from './envelope';
import { Executable } from './executable';
import { assertProgramNesting } from './nesting';
import { CPU_PLUGIN, ensurePluginPath } from './plugin-path';
import { parseMainSignature } from './signature';
import { checkXlaOptions, XlaOptions } from './xla-options';

export interface ClientOptions {
  /** Path of a PJRT plugin (.so). Default: PJRT_PLUGIN_PATH, else the cached CPU plugin (fetched on first use). */
  readonly plugin?: string;
  /** Plugin-specific client options (PJRT named values). */
  readonly options?: Readonly<Record<string, NativeOptionValue>>;
}

export type DeviceInfo = NativeDevice;

export interface CompileOptions {
  /**
   * XLA options for this compile only (docs/gpu.md, 'XLA options'): DebugOptions
   * fields by name, e.g. { xla_allow_excess_precision: false }. Integers go to
   * XLA as int64, other numbers as double. A name XLA does not know rejects the
   * compile with the plugin's error.
   */
  readonly xlaOptions?: XlaOptions;
}

function isCpuPlugin(pluginPath: string): boolean {
  return pluginPath === CPU_PLUGIN.destination || /cpu/i.test(path.basename(pluginPath));
}

/** The jax CUDA plugin's file name (jax-cuda12-pjrt and jax-cuda13-pjrt alike). */
const CUDA_PLUGIN_FILE = 'xla_cuda_plugin.so';

/**
 * The client options a plugin gets unless the caller sets them: the CPU plugin
 * one device; the CUDA plugin a device allocator that grows with use instead
 * of preallocating most of the card. A preallocated BFC region comes with a
 * host-side table of 8 bytes per 256 bytes of it, written when the region is
 * made (at the first upload): about 2 GB of host memory for 60 GB of an H100,
 * 3.3 GB on an H200 (docs/gpu.md, 'Host memory').
 */
export function defaultClientOptions(pluginPath: string): Record<string, NativeOptionValue> {
  if (isCpuPlugin(pluginPath)) return { cpu_device_count: 1 };
  if (path.basename(pluginPath) === CUDA_PLUGIN_FILE) return { preallocate: false };
  return {};
}

/** A PJRT client: one plugin, its devices, and what runs on them. */
export class Client implements Disposable {
  /** @internal */
  readonly native: NativeClient;
  /** The plugin file this client loaded. */
  readonly pluginPath: string;

  private constructor(native: NativeClient, pluginPath: string) {
    this.native = native;
    this.pluginPath = pluginPath;
  }

  /**
   * Loads the plugin (once per process), initializes it and creates a client.
   * The options given go over the plugin's defaults (defaultClientOptions:
   * one device on the CPU plugin, a growing allocator on the CUDA plugin).
   */
  static async create(options: ClientOptions = {}): Promise<Client> {
    if (options === null || typeof options !== 'object') throw new TypeError('Client.create() takes an options object');
    if (options.plugin !== undefined && typeof options.plugin !== 'string')
      throw new TypeError('options.plugin must be a string path');
    const extra = options.options ?? {};
    for (const [name, value] of Object.entries(extra)) {
      if (!['number', 'string', 'boolean'].includes(typeof value)) {
        throw new TypeError(`client option ${name} must be a number, string or boolean, got ${typeof value}`);
      }
    }
    // The cached CPU plugin is fetched here on first use (not with PJRT_SCORE_OFFLINE=1).
    const pluginPath = await ensurePluginPath(options.plugin);
    // XLA logs INFO lines to stderr on every client creation; keep warnings
    // and errors. A value the user set wins.
    if (process.env.TF_CPP_MIN_LOG_LEVEL === undefined) process.env.TF_CPP_MIN_LOG_LEVEL = '1';
    const named: Record<string, NativeOptionValue> = { ...defaultClientOptions(pluginPath), ...extra };
    const native = await fromNative('Client.create', binding().Client.create(pluginPath, named));
    return new Client(native, pluginPath);
  }

  get disposed(): boolean {
    return this.native.disposed;
  }

  /** e.g. 'cpu', 'cuda'. */
  get platformName(): string {
    this.assertLive();
    return this.native.platformName;
  }

  get platformVersion(): string {
    this.assertLive();
    return this.native.platformVersion;
  }

  /** The PJRT C API version the plugin implements. */
  get apiVersion(): { major: number; minor: number } {
    this.assertLive();
    return { ...this.native.apiVersion };
  }

  /**
   * Whether programs on this client may call the addon's fused attention
   * kernels: custom calls `pjrt_score_prefix_attention` (prefix-attention form
   * `ffi`) and `pjrt_score_causal_attention` (causal-attention form `ffi`),
   * registered together with CPU plugins whose FFI extension can register handlers.
   */
  get prefixAttentionKernel(): boolean {
    this.assertLive();
    return this.native.prefixAttentionKernel;
  }

  get devices(): DeviceInfo[] {
    this.assertLive();
    return this.native.devices;
  }

  /**
   * The memory the first device can hold: the plugin's memory limit (on CUDA,
   * after the client's memory fraction), else the host's memory (the CPU
   * plugin's device memory is host memory), within any cgroup limit.
   */
  get deviceMemoryBytes(): number {
    return this.devices[0]?.memoryLimit ?? hostMemoryBytes();
  }

  /** Compiles StableHLO text (off the JS thread), with the XLA options given, if any. */
  async compile(mlir: string, options: CompileOptions = {}): Promise<Executable> {
    this.assertLive();
    if (typeof mlir !== 'string')
      throw new TypeError(`compile() takes StableHLO text (a string), got ${arrayName(mlir)}`);
    if (mlir.trim() === '') throw new TypeError('compile() was given an empty program');
    if (options === null || typeof options !== 'object')
      throw new TypeError('compile() options must be an object { xlaOptions }');
    const xlaOptions =
      options.xlaOptions === undefined ? undefined : checkXlaOptions(options.xlaOptions, 'compile() xlaOptions');
    assertProgramNesting(mlir);
    const native = await fromNative(
      'compile',
      xlaOptions === undefined || Object.keys(xlaOptions).length === 0
        ? this.native.compile(mlir)
        : this.native.compile(mlir, xlaOptions),
    );
    return new Executable(native, parseMainSignature(mlir), this.platform());
  }

  /**
   * Copies a typed array to the device as an array of shape `dims`. The dtype
   * defaults from the array class (Float32Array -> f32, ...); f16 and bf16
   * take a Uint16Array of raw bits; pred takes a Uint8Array of 0/1. The
   * plugin copies the array before this returns its promise (on the calling
   * thread): the caller may change or reuse it at once.
   */
  async upload(data: ArrayBufferView, dims: readonly number[], dtype?: DType): Promise<DeviceBuffer> {
    this.assertLive();
    if (!ArrayBuffer.isView(data) || data instanceof DataView) {
      throw new TypeError(`upload() takes a typed array, got ${arrayName(data)}`);
    }
    const problem = dimsProblem(dims);
    if (problem !== undefined) throw new TypeError(`dims ${problem}, got ${JSON.stringify(dims)}`);
    if (dtype !== undefined && !isDType(dtype)) {
      throw new TypeError(`unknown dtype ${JSON.stringify(dtype)} (known: ${Object.keys(DTYPES).join(', ')})`);
    }
    const type = dtype ?? inferDType(data);
    if (type === undefined) {
      throw new TypeError(`give a dtype for a ${arrayName(data)} (for Uint16Array: 'f16', 'bf16' or 'u16')`);
    }
    const info = DTYPES[type];
    const expectedLength = elementCount(dims);
    const ok = data instanceof info.array && (data as unknown as { length: number }).length === expectedLength;
    if (!ok) {
      const length = (data as unknown as { length?: number }).length ?? data.byteLength;
      throw new TypeError(
        `Expected a ${info.array.name} of length ${expectedLength} for dtype ${type} and dims [${dims.join(', ')}], ` +
          `got ${arrayName(data)} of length ${length}`,
      );
    }
    const native = await fromNative('upload', this.native.upload(data, [...dims], type));
    return new DeviceBuffer(native);
  }

  /** Loads an executable saved by `executable.serialize()` with the same plugin version. */
  async deserialize(bytes: Uint8Array): Promise<Executable> {
    this.assertLive();
    if (!(bytes instanceof Uint8Array))
      throw new TypeError(`deserialize() takes a Uint8Array, got ${arrayName(bytes)}`);
    const { header, payload } = unpackEnvelope(bytes);
    const platform = this.platform();
    if (header.platform !== platform.name || header.platformVersion !== platform.version) {
      throw new TypeError(
        `executable was serialized by ${header.platform} ${header.platformVersion}, ` +
          `this client is ${platform.name} ${platform.version}`,
      );
    }
    const native = await fromNative('deserialize', this.native.deserialize(payload));
    return new Executable(native, header.signature, platform);
  }

  /** Disposes every executable and buffer of this client, then the client. Idempotent. */
  dispose(): void {
    this.native.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  private platform(): { name: string; version: string } {
    return { name: this.native.platformName, version: this.native.platformVersion };
  }

  private assertLive(): void {
    if (this.native.disposed) throw new DisposedError('Client');
  }
}
