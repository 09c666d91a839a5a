/**
 * Warmup: compile (or load from disk) a list of programs at startup, with a
 * progress bar, so the first requests do not pay for compiles (docs/design.md
 * "Static shapes, buckets, the JIT cache").
 */
import { JitKey, LoadSource, ProgramSource, jitKeyString } from './compiler';
import { ProgressBar, ProgressStream } from './progress';

export interface WarmupItem {
  readonly key: JitKey;
  readonly source: ProgramSource;
}

export interface WarmupProgress {
  readonly done: number;
  readonly total: number;
  readonly key: string;
  readonly source: LoadSource | 'failed';
  readonly seconds: number;
  readonly error?: Error;
}

export interface WarmupOptions {
  onProgress?: (progress: WarmupProgress) => void;
  /** Progress bar stream; default process.stderr; false for none. */
  progress?: ProgressStream | false;
}

export interface WarmupResult {
  readonly total: number;
  readonly compiled: number;
  readonly fromDisk: number;
  readonly alreadyCached: number;
  readonly seconds: number;
}

/** What warmup needs from the cache. */
interface WarmupTarget {
  readonly maxEntries: number;
  warn(message: string): void;
  /** Loads one program (unpinned) and says where it came from. */
  load(key: string, source: ProgramSource): Promise<LoadSource>;
}

/**
 * Loads every item in order (compile or disk), drawing a progress bar.
 * All items are tried; if any failed, throws an Error listing them (with
 * `.failures`) after the last one, so startup never goes on half-warm
 * without saying so.
 */
export async function runWarmup(
  items: readonly WarmupItem[],
  options: WarmupOptions,
  cache: WarmupTarget,
): Promise<WarmupResult> {
  const started = performance.now();
  const total = items.length;
  if (total > cache.maxEntries) {
    cache.warn(
      `warmup has ${total} programs but the JIT cache keeps at most ${cache.maxEntries}: ` +
        `the first ones will be evicted`,
    );
  }
  const stream = options.progress === undefined ? process.stderr : options.progress;
  const bar = stream === false ? null : new ProgressBar(total, stream, 'warmup');
  const counts = { compile: 0, disk: 0, cached: 0 };
  const failures: { key: string; error: Error }[] = [];
  for (let i = 0; i < total; i++) {
    const key = jitKeyString(items[i].key);
    const t0 = performance.now();
    let source: WarmupProgress['source'];
    let error: Error | undefined;
    try {
      source = await cache.load(key, items[i].source);
      if (source === 'compile') counts.compile++;
      else if (source === 'disk') counts.disk++;
      else counts.cached++;
    } catch (caught) {
      source = 'failed';
      error = caught instanceof Error ? caught : new Error(String(caught));
      failures.push({ key, error });
    }
    const seconds = (performance.now() - t0) / 1000;
    const what =
      source === 'failed'
        ? `FAILED: ${error?.message}`
        : source === 'compile'
          ? 'compiled'
          : source === 'disk'
            ? 'from disk'
            : 'cached';
    bar?.update(i + 1, `${key} ${what} (${seconds.toFixed(1)}s)`);
    options.onProgress?.({ done: i + 1, total, key, source, seconds, ...(error ? { error } : {}) });
  }
  const seconds = (performance.now() - started) / 1000;
  bar?.finish(
    `${total} programs in ${seconds.toFixed(1)}s: ${counts.compile} compiled, ` +
      `${counts.disk} from disk, ${counts.cached} cached` +
      (failures.length ? `, ${failures.length} FAILED` : ''),
  );
  if (failures.length > 0) {
    const error = new Error(
      `warmup failed for ${failures.length} of ${total} programs: ` +
        failures.map((f) => `${f.key} (${f.error.message})`).join('; '),
    );
    (error as Error & { failures: typeof failures }).failures = failures;
    throw error;
  }
  return { total, compiled: counts.compile, fromDisk: counts.disk, alreadyCached: counts.cached, seconds };
}
