/**
 * What the JIT cache compiles with, and how its entries are named. Kept
 * apart from the cache so the runtime adapter and the key format can be
 * read (and reused by plans and warmup lists) without the LRU machinery.
 */

/** What the cache needs from a runtime: compile, optionally (de)serialize, dispose. */
export interface ProgramCompiler<E> {
  /** Names the plugin (platform + version): executables never cross namespaces. */
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
  if (typeof key !== 'object' || key === null) throw new TypeError('a JIT key must be an object { program, model, dims }');
  if (typeof key.program !== 'string' || key.program === '') throw new TypeError('JIT key program must be a non-empty string');
  if (typeof key.model !== 'string') throw new TypeError('JIT key model must be a string');
  const dims = Object.keys(key.dims ?? {})
    .sort()
    .map((name) => {
      const value = key.dims[name];
      if (!Number.isInteger(value) || value < 0) throw new TypeError(`JIT key dim ${name} must be a non-negative integer, got ${value}`);
      return `${name}=${value}`;
    });
  return `${key.program}|${key.model}|${dims.join(',')}`;
}

/** Where a lookup's executable came from. */
export type LoadSource = 'memory' | 'inflight' | 'disk' | 'compile';

/** The runtime shape the default compiler adapter needs (lib/runtime's Client fits). */
export interface CompilingClient<E extends { serialize(): Promise<Uint8Array>; dispose(): void }> {
  readonly platformName: string;
  readonly platformVersion: string;
  compile(programText: string): Promise<E>;
  deserialize(bytes: Uint8Array): Promise<E>;
}

/** A ProgramCompiler over a runtime client; the namespace is the plugin's platform and version. */
export function clientCompiler<E extends { serialize(): Promise<Uint8Array>; dispose(): void }>(
  client: CompilingClient<E>,
): ProgramCompiler<E> {
  return {
    cacheNamespace: `${client.platformName}-${client.platformVersion}`,
    compile: (text) => client.compile(text),
    serialize: (executable) => executable.serialize(),
    deserialize: (bytes) => client.deserialize(bytes),
    dispose: (executable) => executable.dispose(),
  };
}
