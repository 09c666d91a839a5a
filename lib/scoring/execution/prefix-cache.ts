/**
 * Query K/V kept on the device across requests (prefix reuse): an LRU keyed
 * by the query's tokens and its bucket, bounded in bytes. Entries are only
 * touched under the device lock, so none is disposed while a plan uses it.
 */
import { createHash } from 'node:crypto';
import { DeviceBuffer } from '../../runtime/device-buffer';

/** How many queries the doorkeeper remembers (a hash each, about 100 bytes). */
const SEEN_QUERIES = 4096;

export interface PrefixEntry {
  readonly kCache: DeviceBuffer;
  readonly vCache: DeviceBuffer;
  /** Bucket P the caches were computed at. */
  readonly prefixBucket: number;
  readonly prefixLength: number;
  readonly bytes: number;
  /** Label logprobs at the query's last token, for the labels they were computed with. */
  prefixLogprobs?: { labelsKey: string; values: Float32Array };
}

export interface PrefixCacheCounters {
  hits: number;
  misses: number;
  evictions: number;
  entries: number;
  bytes: number;
}

export class PrefixCache {
  private readonly entries = new Map<string, PrefixEntry>();
  private bytes = 0;
  private hits = 0;
  private misses = 0;
  private evictions = 0;

  /**
   * The doorkeeper: hashes of the queries of recent requests, least recently
   * seen first. A query's K/V are worth keeping from its second request on
   * (docs/design.md, the cache rule), so its first request pays nothing for
   * the cache.
   */
  private readonly seenQueries = new Map<string, true>();

  constructor(private readonly maxBytes: number) {}

  /** Whether a request with this query ran before, as far as the doorkeeper remembers (a look). */
  seen(queryTokens: readonly number[]): boolean {
    return this.maxBytes > 0 && this.seenQueries.has(queryHash(queryTokens));
  }

  /** Notes that a request with this query is about to run. */
  noteSeen(queryTokens: readonly number[]): void {
    if (this.maxBytes <= 0) return;
    const hash = queryHash(queryTokens);
    this.seenQueries.delete(hash);
    this.seenQueries.set(hash, true);
    if (this.seenQueries.size > SEEN_QUERIES) this.seenQueries.delete(this.seenQueries.keys().next().value as string);
  }

  static key(queryTokens: readonly number[], prefixBucket: number): string {
    return `${prefixBucket}:${queryTokens.join(',')}`;
  }

  /** Whether an entry of this many bytes would be kept (the cache is on and the entry fits in it). */
  keeps(bytes: number): boolean {
    return this.maxBytes > 0 && bytes <= this.maxBytes;
  }

  /** Whether an entry exists (does not count as a use). */
  has(key: string): boolean {
    return this.entries.has(key);
  }

  get(key: string): PrefixEntry | undefined {
    const entry = this.entries.get(key);
    if (entry) {
      this.hits++;
      this.entries.delete(key); // re-insert: most recently used last
      this.entries.set(key, entry);
    } else {
      this.misses++;
    }
    return entry;
  }

  /** Stores an entry (if it fits at all), evicting least recently used ones. */
  set(key: string, entry: PrefixEntry): boolean {
    if (this.maxBytes <= 0 || entry.bytes > this.maxBytes) return false;
    const old = this.entries.get(key);
    if (old) this.remove(key, old);
    while (this.bytes + entry.bytes > this.maxBytes && this.entries.size) {
      const [oldestKey, oldest] = this.entries.entries().next().value as [string, PrefixEntry];
      this.remove(oldestKey, oldest);
      this.evictions++;
    }
    this.entries.set(key, entry);
    this.bytes += entry.bytes;
    return true;
  }

  counters(): PrefixCacheCounters {
    return {
      hits: this.hits,
      misses: this.misses,
      evictions: this.evictions,
      entries: this.entries.size,
      bytes: this.bytes,
    };
  }

  clear(): void {
    for (const [key, entry] of [...this.entries]) this.remove(key, entry);
    this.seenQueries.clear();
  }

  private remove(key: string, entry: PrefixEntry): void {
    this.entries.delete(key);
    this.bytes -= entry.bytes;
    entry.kCache.dispose();
    entry.vCache.dispose();
  }
}

/** A query's identity for the doorkeeper: sha1 of its token ids. */
function queryHash(queryTokens: readonly number[]): string {
  return createHash('sha1')
    .update(new Uint8Array(Int32Array.from(queryTokens).buffer))
    .digest('base64');
}
