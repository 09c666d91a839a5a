/**
 * Static-shape buckets (docs/design.md "Static shapes, buckets, the JIT cache"). XLA compiles one program per
 * shape, so real sizes are rounded up to a small ladder of sizes: few enough
 * that warmup can compile them, fine enough that padding wastes little.
 * A ladder is a plain ascending array of positive integers.
 */
import { PjrtScoreError } from '../../util/errors';

export interface BucketLadderOptions {
  /** Smallest bucket. */
  min: number;
  /** Largest bucket; always included, even when it is not on the geometric ladder. */
  max: number;
  /**
   * Extra rungs between consecutive powers of two, as multipliers in (1, 2):
   * [] gives min, 2min, 4min, ...; [1.5] adds 1.5min, 3min, ... (at most 1.33x padding instead of 2x).
   */
  steps?: readonly number[];
  /** Every bucket except `max` is rounded up to a multiple of this; default 1. */
  align?: number;
}

/**
 * Token-length buckets for whole sequences (serial S): 16, 24, 32, 48, ... (the Scorer's start at 8 and end at the
 * context: ladders.ts).
 */
export const DEFAULT_TOKEN_BUCKETS: Readonly<BucketLadderOptions> = Object.freeze({
  min: 16,
  max: 8192,
  steps: Object.freeze([1.5]),
  align: 8,
});

/** Thrown when a size is larger than the largest bucket: the caller must chunk or reject. */
export class BucketOverflowError extends PjrtScoreError {
  declare readonly code: 'BUCKET_OVERFLOW';
  readonly value: number;
  readonly largest: number;
  constructor(what: string, value: number, largest: number) {
    super(`${what} ${value} is above the largest bucket ${largest}`, 'BUCKET_OVERFLOW');
    this.name = 'BucketOverflowError';
    this.value = value;
    this.largest = largest;
  }
}

/** The ladder min, min*steps..., 2min, ..., capped at (and ending with) max. */
export function bucketLadder(options: BucketLadderOptions): number[] {
  const { min, max } = options;
  const steps = [...(options.steps ?? [])].sort((a, b) => a - b);
  const align = options.align ?? 1;
  if (!Number.isInteger(min) || min < 1) throw new RangeError(`bucket min must be a positive integer, got ${min}`);
  if (!Number.isInteger(max) || max < min)
    throw new RangeError(`bucket max must be an integer >= min ${min}, got ${max}`);
  if (!Number.isInteger(align) || align < 1)
    throw new RangeError(`bucket align must be a positive integer, got ${align}`);
  for (const step of steps) {
    if (!(step > 1 && step < 2)) throw new RangeError(`bucket steps must lie in (1, 2), got ${step}`);
  }
  const sizes: number[] = [];
  const add = (size: number): void => {
    if (size <= max && (sizes.length === 0 || size > sizes[sizes.length - 1])) sizes.push(size);
  };
  for (let base = min; base <= max; base *= 2) {
    add(base);
    for (const step of steps) add(Math.ceil((base * step) / align) * align);
  }
  add(max);
  return sizes;
}

/** The smallest bucket >= n; BucketOverflowError above the largest. */
export function bucketFor(n: number, ladder: readonly number[], what = 'size'): number {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`${what} must be a non-negative integer, got ${n}`);
  if (ladder.length === 0) throw new RangeError('empty bucket ladder');
  // Ladders are short (tens of rungs): a linear scan is fastest and obviously right.
  for (const size of ladder) if (size >= n) return size;
  throw new BucketOverflowError(what, n, ladder[ladder.length - 1]);
}

/** Parses a ladder written as a list ("16,32,64") into ascending unique sizes. */
export function parseBucketList(text: string): number[] {
  const sizes = text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((part) => {
      const size = Number(part);
      if (!Number.isInteger(size) || size < 1)
        throw new RangeError(`bucket sizes must be positive integers, got "${part}"`);
      return size;
    });
  if (sizes.length === 0) throw new RangeError(`no bucket sizes in "${text}"`);
  return [...new Set(sizes)].sort((a, b) => a - b);
}
