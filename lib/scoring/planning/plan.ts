/**
 * The plan of a request, as data (docs/design.md "Plans"): the algorithm, its
 * buckets, and the list of device passes, each naming its program by a typed
 * key and the items (rows) it carries. `makePlan` (and, for several requests
 * in one pass, `makeBatchPlan` in batch-plan.ts) is the only place that
 * rounds sizes to buckets or splits items into chunks: the executor
 * (execution/run-plan.ts) runs exactly these passes, the selector costs them, warmup
 * compiles their programs and `explain()` returns them.
 *
 *   serial   one sequence per item (query ++ item, or item ++ query), batched
 *            through the fused program with an empty prefix; the reference,
 *            and the only plan for item_first
 *   packed   query and items in one fused pass (the factored layout): the
 *            query's tokens are computed once per pass
 *   prefix   prefill the query once (its K/V stay on the device, and may be
 *            kept across requests), then extend the items in chunks
 *
 * A plan depends on the shape of its own request and on the Scorer's fixed
 * sizing only, never on what else is in flight or cached: the same request
 * runs the same compiled programs with the same rows, so its scores are the
 * same bit for bit (docs/design.md "Batch invariance").
 */
import { bucketFor } from './buckets';
import type { Budget } from '../platform/profiles';

export type { Budget };

export type Algorithm = 'serial' | 'packed' | 'prefix';
export const ALGORITHMS: readonly Algorithm[] = ['serial', 'packed', 'prefix'];

/** A compiled decoder program and its bucket sizes: what the JIT cache is keyed by. */
export type ProgramKey =
  | {
      /**
       * Query [prefix] and items [items, itemLength] in one pass; label logprobs of the query's last token and of every
       * item.
       */
      readonly program: 'decoder_fused';
      /**
       * Queries in the pass, each with its own items and labels: 1 for one
       * request's plan; G > 1 for a cross-request batch (makeBatchPlan).
       * Every other size is per group.
       */
      readonly groups: number;
      readonly prefix: number;
      readonly items: number;
      readonly itemLength: number;
      readonly labels: number;
    }
  | {
      /** The query alone: its per-layer K/V and the label logprobs of its last token. */
      readonly program: 'decoder_prefill';
      readonly prefix: number;
      readonly labels: number;
    }
  | {
      /** Items [items, itemLength] against a prefilled query's K/V. */
      readonly program: 'decoder_extend';
      readonly prefix: number;
      readonly items: number;
      readonly itemLength: number;
      readonly labels: number;
    };

/** One execution: a program and the request's items in its rows (row r carries item `items[r]`). */
export interface Pass {
  readonly program: ProgramKey;
  /** Indices into the request's items; empty for the prefill. Rows past its length are padding. */
  readonly items: readonly number[];
}

export interface Plan {
  readonly algorithm: Algorithm;
  /** Query bucket P (1 for serial: the fused program with an empty prefix). */
  readonly prefixBucket: number;
  /** Label bucket B. */
  readonly labelBucket: number;
  readonly passes: readonly Pass[];
}

/** What a plan depends on: the sizes of one normalized request. */
export interface RequestShape {
  readonly queryLength: number;
  /** One length per item, in request order. */
  readonly itemLengths: readonly number[];
  readonly labelCount: number;
  readonly itemFirst: boolean;
}

export interface Ladders {
  /** Token-length buckets for whole sequences: serial S. */
  readonly tokens: readonly number[];
  /**
   * Token-length buckets for the query P and the items L: finer (steps of 1.25x), since every padded row
   * costs as much as a real one (a 300-token query pads to 320 here, to 384 on `tokens`).
   */
  readonly itemTokens: readonly number[];
  /**
   * Query-length buckets P of a one-request plan (packed, prefix); itemTokens where absent. Finer where a
   * platform says so (platform/profiles.ts, queryTokenSteps): the query's padded rows are computed like real ones.
   */
  readonly queryTokens?: readonly number[];
  /** Item-count buckets (rows per pass). */
  readonly counts: readonly number[];
  /** Label-count buckets B. */
  readonly labels: readonly number[];
}

/** The Scorer's fixed sizing: ladders, per-pass budget, and the model's query heads (score bytes). */
export interface Sizing {
  readonly ladders: Ladders;
  readonly budget: Budget;
  readonly numHeads: number;
}

/** The shape of a request in token space. */
export function shapeOf(request: {
  readonly queryTokens: readonly number[];
  readonly itemTokens: readonly (readonly number[])[];
  readonly labels: readonly number[];
  readonly itemFirst: boolean;
}): RequestShape {
  return {
    queryLength: request.queryTokens.length,
    itemLengths: request.itemTokens.map((t) => t.length),
    labelCount: request.labels.length,
    itemFirst: request.itemFirst,
  };
}

/** Item indices sorted by length (stable), so a chunk pads little. */
function byLength(lengths: readonly number[]): number[] {
  return lengths.map((_, i) => i).sort((a, b) => lengths[a] - lengths[b] || a - b);
}

/** Largest ladder value <= limit (at least the smallest rung). */
export function bucketAtMost(limit: number, ladder: readonly number[]): number {
  let best = ladder[0];
  for (const v of ladder) if (v <= limit) best = v;
  return best;
}

interface Chunk {
  readonly items: number[];
  /** Row bucket N. */
  readonly rows: number;
  /** Length bucket L. */
  readonly length: number;
}

/**
 * Splits items, sorted by length, into chunks of `rows` sequences of bucketed
 * length, each within the budget. The longest item of the request sets the
 * row count (so every chunk but the last has the same shape); `keys(L)` is
 * how many keys a row of length L attends to.
 */
function chunk(
  lengths: readonly number[],
  lengthLadder: readonly number[],
  sizing: Sizing,
  keys: (l: number) => number,
): Chunk[] {
  const { ladders, budget, numHeads } = sizing;
  const order = byLength(lengths);
  const chunks: Chunk[] = [];
  if (order.length === 0) return chunks;
  const longest = bucketFor(Math.max(1, lengths[order[order.length - 1]]), lengthLadder, 'item length');
  const fitRows = Math.max(
    1,
    Math.min(
      Math.floor(budget.tokensPerPass / longest),
      Math.floor(budget.scoreBytesPerPass / (numHeads * longest * keys(longest) * 4)),
    ),
  );
  for (let start = 0; start < order.length;) {
    const remaining = order.length - start;
    const rows =
      remaining >= fitRows ? bucketAtMost(fitRows, ladders.counts) : bucketFor(remaining, ladders.counts, 'item count');
    const items = order.slice(start, start + Math.min(rows, remaining));
    const length = bucketFor(Math.max(1, ...items.map((i) => lengths[i])), lengthLadder, 'item length');
    chunks.push({ items, rows, length });
    start += items.length;
  }
  return chunks;
}

/**
 * The plan of `algorithm` for a request of this shape. item_first requests
 * and requests with an empty query (each item its own sequence) have no
 * shared prefix: only serial is correct for them, and asking for another
 * algorithm is an error (the Scorer routes them to serial).
 */
export function makePlan(algorithm: Algorithm, shape: RequestShape, sizing: Sizing): Plan {
  if (shape.itemFirst && algorithm !== 'serial')
    throw new RangeError(`item_first requests run serial, not ${algorithm}`);
  if (shape.queryLength === 0 && algorithm !== 'serial')
    throw new RangeError(`a request with an empty query runs serial, not ${algorithm}`);
  const B = bucketFor(shape.labelCount, sizing.ladders.labels, 'label count');
  if (algorithm === 'serial') {
    const sequences = shape.itemLengths.map((l) => l + shape.queryLength);
    const passes = chunk(sequences, sizing.ladders.tokens, sizing, (l) => l).map((c): Pass => ({
      program: { program: 'decoder_fused', groups: 1, prefix: 1, items: c.rows, itemLength: c.length, labels: B },
      items: c.items,
    }));
    return { algorithm, prefixBucket: 1, labelBucket: B, passes };
  }
  const P = bucketFor(
    Math.max(1, shape.queryLength),
    sizing.ladders.queryTokens ?? sizing.ladders.itemTokens,
    'query length',
  );
  const chunks = chunk(shape.itemLengths, sizing.ladders.itemTokens, sizing, (l) => P + l);
  if (algorithm === 'packed') {
    const passes = chunks.map((c): Pass => ({
      program: { program: 'decoder_fused', groups: 1, prefix: P, items: c.rows, itemLength: c.length, labels: B },
      items: c.items,
    }));
    return { algorithm, prefixBucket: P, labelBucket: B, passes };
  }
  const prefill: Pass = { program: { program: 'decoder_prefill', prefix: P, labels: B }, items: [] };
  const extends_ = chunks.map((c): Pass => ({
    program: { program: 'decoder_extend', prefix: P, items: c.rows, itemLength: c.length, labels: B },
    items: c.items,
  }));
  return { algorithm, prefixBucket: P, labelBucket: B, passes: [prefill, ...extends_] };
}

/**
 * The canonical string of a program key (stable field order): for sets of programs and logs. G appears only when > 1.
 */
export function programKeyString(key: ProgramKey): string {
  if (key.program === 'decoder_prefill') return `${key.program}(P=${key.prefix},B=${key.labels})`;
  const groups = key.program === 'decoder_fused' && key.groups > 1 ? `G=${key.groups},` : '';
  return `${key.program}(${groups}P=${key.prefix},N=${key.items},L=${key.itemLength},B=${key.labels})`;
}
