/**
 * What the JIT cache compiles with, and how its entries are named. Kept
 * apart from the cache so the runtime adapter and the key format can be
 * read (and reused by plans and warmup lists) without the LRU machinery.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { hostCpu } from '../../runtime/host-cpu';
import { XlaOptions, xlaOptionsLine } from '../../runtime/xla-options';

/** What the cache needs from a runtime: compile, optionally (de)serialize, dispose. */
export interface ProgramCompiler<E> {
  /** Names the plugin build, device and host CPU (executableNamespace): executables never cross namespaces. */
  readonly cacheNamespace: string;
  compile(programText: string): Promise<E>;
  serialize?(executable: E): Promise<Uint8Array>;
  deserialize?(bytes: Uint8Array): Promise<E>;
  dispose(executable: E): void;
}

/** Identifies one compiled program. */
export interface JitKey {
  /** Program name ('packed-dense', 'lm-head-gather', ...). */
  readonly program: string;
  /** Model identity (name + weights revision): programs embed model shapes. */
  readonly model: string;
  /** Bucket dims, e.g. { T: 1024, K: 64 }; order does not matter. */
  readonly dims: Readonly<Record<string, number>>;
}

/** Produces the program text; called only on a miss. */
export type ProgramSource = () => string | Promise<string>;

/** The canonical string of a key: `program|model|A=1,B=2` with dims sorted by name. */
export function jitKeyString(key: JitKey): string {
  if (typeof key !== 'object' || key === null)
    throw new TypeError('a JIT key must be an object { program, model, dims }');
  if (typeof key.program !== 'string' || key.program === '')
    throw new TypeError('JIT key program must be a non-empty string');
  if (typeof key.model !== 'string') throw new TypeError('JIT key model must be a string');
  const dims = Object.keys(key.dims ?? {})
    .sort()
    .map((name) => {
      const value = key.dims[name];
      if (!Number.isInteger(value) || value < 0)
        throw new TypeError(`JIT key dim ${name} must be a non-negative integer, got ${value}`);
      return `${name}=${value}`;
    });
  return `${key.program}|${key.model}|${dims.join(',')}`;
}

/** Where a lookup's executable came from. */
export type LoadSource = 'memory' | 'inflight' | 'disk' | 'compile';

/** The runtime shape the compiler adapter needs (lib/runtime's Client fits). */
export interface CompilingClient<E extends { serialize(): Promise<Uint8Array>; dispose(): void }> {
  readonly platformName: string;
  readonly platformVersion: string;
  /** The plugin file: its size and mtime name the build when the version string does not. */
  readonly pluginPath?: string;
  /** Device kinds (e.g. "cpu", "NVIDIA H100 80GB HBM3"). */
  readonly devices?: readonly { readonly kind: string }[];
  compile(programText: string, options?: { readonly xlaOptions?: XlaOptions }): Promise<E>;
  deserialize(bytes: Uint8Array): Promise<E>;
}

interface CompilerOptions {
  /** The host CPU identity in the namespace; default this machine's (hostCpu().id). Tests pass another. */
  readonly hostCpuId?: string;
  /** XLA_FLAGS in the namespace; default process.env.XLA_FLAGS. */
  readonly xlaFlags?: string;
  /** XLA options every program compiles with (lib/runtime/xla-options.ts); in the namespace too. Default none. */
  readonly xlaOptions?: XlaOptions;
}

/** Identifies the plugin build, so a disk cache never feeds one plugin another's executables. */
function pluginFingerprint(pluginPath: string | undefined): string {
  if (pluginPath === undefined) return 'unknown';
  try {
    const st = fs.statSync(pluginPath);
    return shortHash(`${pluginPath}:${st.size}:${st.mtimeMs}`);
  } catch {
    return 'unknown';
  }
}

function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}

/**
 * The namespace of a client's executables (docs/design.md "Platforms and precision"): platform,
 * plugin version and build, device kind, the host CPU's identity (XLA
 * compiles for the host's instruction set) and the compile environment
 * (XLA_FLAGS and the per-compile XLA options, names sorted). Executables never
 * cross namespaces.
 */
export function executableNamespace(
  client: Omit<CompilingClient<never>, 'compile' | 'deserialize'>,
  options: CompilerOptions = {},
): string {
  const kinds = [...new Set((client.devices ?? []).map((d) => d.kind))].join(',');
  const cpu = options.hostCpuId ?? hostCpu().id;
  const flags = options.xlaFlags ?? process.env.XLA_FLAGS ?? '';
  const xla = xlaOptionsLine(options.xlaOptions ?? {});
  return [
    client.platformName,
    client.platformVersion,
    pluginFingerprint(client.pluginPath),
    shortHash(kinds),
    `cpu${cpu}`,
    flags === '' ? 'noflags' : `flags${shortHash(flags)}`,
    ...(xla === '' ? [] : [`xla${shortHash(xla)}`]),
  ].join('-');
}

/** The one ProgramCompiler over a runtime client (JIT cache, Scorer, tests). */
export function clientCompiler<E extends { serialize(): Promise<Uint8Array>; dispose(): void }>(
  client: CompilingClient<E>,
  options: CompilerOptions = {},
): ProgramCompiler<E> {
  const xlaOptions = options.xlaOptions ?? {};
  const compileOptions = Object.keys(xlaOptions).length === 0 ? undefined : { xlaOptions };
  return {
    cacheNamespace: executableNamespace(client, options),
    compile: (text) => (compileOptions === undefined ? client.compile(text) : client.compile(text, compileOptions)),
    serialize: (executable) => executable.serialize(),
    deserialize: (bytes) => client.deserialize(bytes),
    dispose: (executable) => executable.dispose(),
  };
}
