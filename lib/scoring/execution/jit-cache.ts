/**
 * The JIT cache (docs/design.md "Static shapes, buckets, the JIT cache"): one compiled executable per
 * (program, model, bucket dims), shared by all requests.
 *
 * - The program text is produced only on a miss (building a transformer's
 *   StableHLO is not free), then looked up on disk by its hash, then compiled.
 * - Single flight: concurrent lookups of a key being loaded wait for the one
 *   load. A failed load rejects every waiter and leaves nothing cached, so
 *   the next lookup tries again.
 * - LRU with a cap on entries and on bytes. Entries in use (acquired and not
 *   yet released) are never evicted or disposed: an execute in flight keeps
 *   its executable alive. The caps are therefore soft while entries are in
 *   use, and are enforced again on release.
 * - Generic over the compiler, so the cache logic is tested without a device.
 */
import { JitKey, LoadSource, ProgramCompiler, ProgramSource, jitKeyString } from './compiler';
import { ExecutableDiskCache, defaultExecutableDir, errorMessage, executableKey } from './disk-cache';
import { WarmupItem, WarmupOptions, WarmupResult, runWarmup } from './warmup';

/**
 * Compiled programs a Scorer keeps by default: the cache evicts the least
 * recently used executable at this cap, so it bounds the memory the Scorer
 * holds beyond its weights (what one entry costs: docs/service.md, "Memory").
 */
export const DEFAULT_JIT_CACHE_ENTRIES = 48;

export interface JitCacheOptions<E> {
  /** Most executables kept; default DEFAULT_JIT_CACHE_ENTRIES. */
  maxEntries?: number;
  /** Most bytes kept (by the size estimate); default unlimited. */
  maxBytes?: number;
  /**
   * Size estimate of an executable in bytes. Default: its serialized size
   * when known (serialized anyway for the disk cache, or only to measure it
   * when maxBytes is set), else 0.
   */
  sizeOf?: (executable: E) => number;
  /**
   * On-disk cache: a directory, true for <cacheDir>/executables/<namespace>/,
   * false for none. Default true when the compiler can serialize and deserialize.
   */
  disk?: boolean | string;
  /** Where warnings go (corrupt cache files, failed writes, disposal errors); default process.emitWarning. */
  warn?: (message: string) => void;
}

export interface JitCacheCounters {
  /** Lookups answered by a ready entry. */
  hits: number;
  /** Lookups that had to wait for a load (their own or one already in flight). */
  misses: number;
  /** Programs compiled. */
  compiles: number;
  /** Seconds spent compiling, summed. */
  compileSeconds: number;
  /** Executables loaded from disk instead of compiled. */
  diskHits: number;
  /** Executables written to disk. */
  diskWrites: number;
  /** Disk entries that failed to deserialize (removed, then compiled). */
  diskErrors: number;
  /** Entries removed to respect the caps. */
  evictions: number;
  /** Entries now cached, their bytes, and loads in flight. */
  entries: number;
  bytes: number;
  inFlight: number;
}

/** A hold on a cached executable: it is not evicted or disposed until released. */
export interface JitLease<E> {
  readonly executable: E;
  readonly key: string;
  /** Idempotent. */
  release(): void;
  [Symbol.dispose](): void;
}

interface Entry<E> {
  readonly key: string;
  readonly executable: E;
  readonly bytes: number;
  refs: number;
  /** Out of the map (cleared); disposed when the last lease is released. */
  detached: boolean;
  disposed: boolean;
}

interface Flight<E> {
  promise: Promise<Entry<E>>;
  /** Leases promised to waiters; the entry starts with this many refs so no eviction can slip in before they pin it. */
  pins: number;
  /** Where the load found the executable (reported to the lookup that started it). */
  source: LoadSource;
}

interface Loaded<E> {
  readonly entry: Entry<E>;
  readonly source: LoadSource;
}

export class JitCache<E> {
  private readonly compiler: ProgramCompiler<E>;
  private readonly maxEntries: number;
  private readonly maxBytes: number;
  private readonly sizeOf: ((executable: E) => number) | undefined;
  private readonly warn: (message: string) => void;
  private readonly disk: ExecutableDiskCache | null;
  /** Map order is recency order: the first entry is the least recently used. */
  private readonly entries = new Map<string, Entry<E>>();
  private readonly flights = new Map<string, Flight<E>>();
  private readonly pendingWrites = new Set<Promise<void>>();
  private totalBytes = 0;
  private disposed = false;
  private readonly stats = {
    hits: 0,
    misses: 0,
    compiles: 0,
    compileSeconds: 0,
    diskHits: 0,
    diskWrites: 0,
    diskErrors: 0,
    evictions: 0,
  };

  constructor(compiler: ProgramCompiler<E>, options: JitCacheOptions<E> = {}) {
    if (typeof compiler?.compile !== 'function' || typeof compiler.dispose !== 'function') {
      throw new TypeError('JitCache needs a compiler with compile(text) and dispose(executable)');
    }
    if (typeof compiler.cacheNamespace !== 'string' || compiler.cacheNamespace === '') {
      throw new TypeError('JitCache needs compiler.cacheNamespace (the plugin platform and version)');
    }
    this.compiler = compiler;
    this.maxEntries = options.maxEntries ?? DEFAULT_JIT_CACHE_ENTRIES;
    this.maxBytes = options.maxBytes ?? Infinity;
    if (!Number.isInteger(this.maxEntries) || this.maxEntries < 1) {
      throw new RangeError(`maxEntries must be a positive integer, got ${options.maxEntries}`);
    }
    if (!(this.maxBytes > 0)) throw new RangeError(`maxBytes must be positive, got ${options.maxBytes}`);
    this.sizeOf = options.sizeOf;
    this.warn = options.warn ?? ((message) => process.emitWarning(message, 'PjrtScoreWarning'));
    const canPersist = typeof compiler.serialize === 'function' && typeof compiler.deserialize === 'function';
    const disk = options.disk ?? canPersist;
    if (disk !== false && !canPersist)
      throw new TypeError('an on-disk JIT cache needs compiler.serialize and compiler.deserialize');
    this.disk =
      disk === false
        ? null
        : new ExecutableDiskCache(disk === true ? defaultExecutableDir(compiler.cacheNamespace) : disk, this.warn);
  }

  /** The on-disk directory, or null when the disk cache is off. */
  get diskDirectory(): string | null {
    return this.disk?.directory ?? null;
  }

  /**
   * Looks up (loading on a miss) and holds the executable until the lease is
   * released: use this around execute().
   */
  async acquire(key: JitKey, source: ProgramSource): Promise<JitLease<E>> {
    const { entry } = await this.lookup(jitKeyString(key), source, true);
    return this.lease(entry);
  }

  /** acquire + fn + release, the release guaranteed. */
  async use<T>(key: JitKey, source: ProgramSource, fn: (executable: E) => T | Promise<T>): Promise<T> {
    const lease = await this.acquire(key, source);
    try {
      return await fn(lease.executable);
    } finally {
      lease.release();
    }
  }

  /**
   * Looks up (loading on a miss) without holding: the executable may be
   * evicted and disposed by later lookups. Use acquire() to execute it.
   */
  async get(key: JitKey, source: ProgramSource): Promise<E> {
    const { entry } = await this.lookup(jitKeyString(key), source, false);
    return entry.executable;
  }

  /** Whether the key is compiled and cached in memory (not in flight). */
  has(key: JitKey): boolean {
    return this.entries.has(jitKeyString(key));
  }

  /** Cached keys, least recently used first. */
  keys(): string[] {
    return [...this.entries.keys()];
  }

  counters(): JitCacheCounters {
    return { ...this.stats, entries: this.entries.size, bytes: this.totalBytes, inFlight: this.flights.size };
  }

  /**
   * Loads every item in order (compile or disk), drawing a progress bar.
   * All items are tried; if any failed, throws an Error listing them (with
   * `.failures`) after the last one, so startup never goes on half-warm
   * without saying so.
   */
  warmup(items: readonly WarmupItem[], options: WarmupOptions = {}): Promise<WarmupResult> {
    return runWarmup(items, options, {
      maxEntries: this.maxEntries,
      warn: this.warn,
      load: async (key, source) => (await this.lookup(key, source, false)).source,
    });
  }

  /** Waits for background disk writes (tests, shutdown). */
  async flush(): Promise<void> {
    while (this.pendingWrites.size > 0) await Promise.all([...this.pendingWrites]);
  }

  /** Drops every cached entry; idle ones are disposed now, leased ones on release. */
  clear(): void {
    for (const entry of this.entries.values()) {
      entry.detached = true;
      if (entry.refs === 0) this.disposeEntry(entry);
    }
    this.entries.clear();
    this.totalBytes = 0;
  }

  /** clear(), and refuse further lookups; loads in flight are disposed when they finish. Idempotent. */
  dispose(): void {
    this.disposed = true;
    this.clear();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  private async lookup(key: string, source: ProgramSource, pin: boolean): Promise<Loaded<E>> {
    if (this.disposed) throw new Error('JitCache is disposed');
    const ready = this.entries.get(key);
    if (ready) {
      this.stats.hits++;
      this.entries.delete(key); // re-insert: most recently used goes last
      this.entries.set(key, ready);
      if (pin) ready.refs++;
      return { entry: ready, source: 'memory' };
    }
    this.stats.misses++;
    const inFlight = this.flights.get(key);
    if (inFlight) {
      if (pin) inFlight.pins++;
      return { entry: await inFlight.promise, source: 'inflight' };
    }
    // Registered before load() starts, so even a synchronous failure finds (and clears) its own flight.
    const flight: Flight<E> = {
      pins: pin ? 1 : 0,
      source: 'compile',
      promise: undefined as unknown as Promise<Entry<E>>,
    };
    this.flights.set(key, flight);
    flight.promise = this.load(key, source, flight);
    const entry = await flight.promise;
    return { entry, source: flight.source };
  }

  private async load(key: string, source: ProgramSource, flight: Flight<E>): Promise<Entry<E>> {
    try {
      const text = await source();
      if (typeof text !== 'string' || text === '')
        throw new TypeError(`the program source for ${key} returned no program text`);
      const fileKey = this.disk ? executableKey(this.compiler.cacheNamespace, text) : '';
      let executable: E | undefined;
      let serialized: Uint8Array | undefined;
      if (this.disk) {
        const bytes = await this.disk.read(fileKey);
        if (bytes) {
          try {
            executable = await this.compiler.deserialize!(bytes);
            serialized = bytes;
            this.stats.diskHits++;
            flight.source = 'disk';
          } catch (error) {
            // Bytes that pass the checksum but do not load (e.g. a plugin that changed without a version bump).
            this.stats.diskErrors++;
            this.warn(`cached executable for ${key} did not load (${errorMessage(error)}); recompiling`);
            await this.disk.remove(fileKey);
          }
        }
      }
      if (executable === undefined) {
        const t0 = performance.now();
        executable = await this.compiler.compile(text);
        this.stats.compiles++;
        this.stats.compileSeconds += (performance.now() - t0) / 1000;
        if (this.disk) serialized = await this.persist(key, fileKey, executable);
      }
      const bytes = await this.estimateBytes(executable, serialized);
      return this.insert(key, executable, bytes, flight);
    } finally {
      if (this.flights.get(key) === flight) this.flights.delete(key);
    }
  }

  /** Serializes for the disk cache; the write itself runs in the background. */
  private async persist(key: string, fileKey: string, executable: E): Promise<Uint8Array | undefined> {
    let bytes: Uint8Array;
    try {
      bytes = await this.compiler.serialize!(executable);
    } catch (error) {
      this.warn(`could not serialize the executable for ${key}: ${errorMessage(error)}`);
      return undefined;
    }
    const write = this.disk!.write(fileKey, bytes).then((written) => {
      if (written) this.stats.diskWrites++;
    });
    this.pendingWrites.add(write);
    void write.finally(() => this.pendingWrites.delete(write));
    return bytes;
  }

  /** Never throws: a failure here must not leak the executable just loaded. */
  private async estimateBytes(executable: E, serialized: Uint8Array | undefined): Promise<number> {
    if (this.sizeOf) {
      try {
        const size = this.sizeOf(executable);
        if (Number.isFinite(size) && size >= 0) return size;
        this.warn(`sizeOf returned ${size}; counting the executable as 0 bytes`);
      } catch (error) {
        this.warn(`sizeOf failed: ${errorMessage(error)}; counting the executable as 0 bytes`);
      }
      return 0;
    }
    if (serialized) return serialized.byteLength;
    // Serializing only to measure is worth it when a byte cap must be honoured.
    if (this.maxBytes !== Infinity && this.compiler.serialize) {
      try {
        return (await this.compiler.serialize(executable)).byteLength;
      } catch (error) {
        this.warn(`could not measure the executable size: ${errorMessage(error)}`);
      }
    }
    return 0;
  }

  private insert(key: string, executable: E, bytes: number, flight: Flight<E>): Entry<E> {
    const entry: Entry<E> = { key, executable, bytes, refs: flight.pins, detached: false, disposed: false };
    if (this.disposed) {
      this.disposeEntry(entry);
      throw new Error(`JitCache was disposed while loading ${key}`);
    }
    this.entries.set(key, entry);
    this.totalBytes += bytes;
    // The new entry is protected even when unpinned: get() is about to hand it out.
    this.enforceCaps(entry);
    return entry;
  }

  private enforceCaps(protectedEntry?: Entry<E>): void {
    for (const entry of this.entries.values()) {
      if (this.entries.size <= this.maxEntries && this.totalBytes <= this.maxBytes) return;
      if (entry.refs > 0 || entry === protectedEntry) continue;
      this.entries.delete(entry.key);
      this.totalBytes -= entry.bytes;
      this.stats.evictions++;
      this.disposeEntry(entry);
    }
  }

  private lease(entry: Entry<E>): JitLease<E> {
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      entry.refs--;
      if (entry.refs > 0) return;
      if (entry.detached) this.disposeEntry(entry);
      else this.enforceCaps();
    };
    return { executable: entry.executable, key: entry.key, release, [Symbol.dispose]: release };
  }

  private disposeEntry(entry: Entry<E>): void {
    if (entry.disposed) return;
    entry.disposed = true;
    try {
      this.compiler.dispose(entry.executable);
    } catch (error) {
      this.warn(`disposing the executable for ${entry.key} failed: ${errorMessage(error)}`);
    }
  }
}
