/**
 * The scoring plans (SPEC.md section 6). Each turns a normalized request into
 * label log-probabilities per item, [N][Lb] in request order:
 *
 *   serial   one sequence per item (query ++ item, or item ++ query), batched;
 *            the reference, and the only plan for item_first
 *   packed   query and items in one pass (the factored layout): the query's
 *            tokens are computed once per pass
 *   prefix   prefill the query once (its K/V stay on the device, and may be
 *            kept across requests), then extend the items in chunks
 *
 * Every pass is sized by a memory budget and padded to buckets; items are
 * sorted by length first so a chunk pads little. Padding never changes a real
 * output: masks hide it and readouts skip it.
 */
import { DeviceBuffer } from '../runtime/device-buffer';
import { bucketFor } from './buckets';
import { DecoderRunner, ProgramRef, s32, s32Scalar } from './decoder-runner';
import { throwIfAborted } from './device-lock';
import { PrefixCache, PrefixEntry } from './prefix-cache';

export type Algorithm = 'serial' | 'packed' | 'prefix';
export const ALGORITHMS: readonly Algorithm[] = ['serial', 'packed', 'prefix'];

export interface Ladders {
  /** Token-length buckets for whole sequences: the query P, serial S. */
  readonly tokens: readonly number[];
  /** Item-length buckets L: finer, since item padding is paid once per item. */
  readonly itemTokens: readonly number[];
  /** Item-count buckets (N, C, serial B). */
  readonly counts: readonly number[];
  /** Label-count buckets (B). */
  readonly labels: readonly number[];
}

export interface Budget {
  /** Most item token rows in one pass (activations scale with it; a fused pass adds the query's rows). */
  readonly tokensPerPass: number;
  /** Most bytes of attention scores in one pass (heads x rows x keys x 4). */
  readonly scoreBytesPerPass: number;
}

export interface PlanInput {
  readonly queryTokens: readonly number[];
  readonly itemTokens: readonly (readonly number[])[];
  readonly labels: readonly number[];
  readonly itemFirst: boolean;
}

export interface PlanContext {
  readonly runner: DecoderRunner;
  readonly ladders: Ladders;
  readonly budget: Budget;
  readonly prefixCache: PrefixCache;
  readonly signal?: AbortSignal;
}

/** One pass of a plan: which program, and which items it covers. */
export interface Pass {
  readonly ref: ProgramRef;
  readonly items: readonly number[];
}

/** Largest ladder value <= limit (at least the smallest rung). */
function bucketAtMost(limit: number, ladder: readonly number[]): number {
  let best = ladder[0];
  for (const v of ladder) if (v <= limit) best = v;
  return best;
}

/** Item indices sorted by length (stable), so chunks pad little. */
function byLength(items: readonly (readonly number[])[]): number[] {
  return items.map((_, i) => i).sort((a, b) => items[a].length - items[b].length || a - b);
}

/**
 * Splits sorted items into chunks of `rows` sequences of bucketed length,
 * each within the budget. `keys(L)` is how many keys a row of length L sees.
 */
function chunk(
  order: readonly number[],
  lengthOf: (i: number) => number,
  lengthLadder: readonly number[],
  ladders: Ladders,
  budget: Budget,
  heads: number,
  keys: (l: number) => number,
): { items: number[]; rows: number; length: number }[] {
  const chunks: { items: number[]; rows: number; length: number }[] = [];
  let start = 0;
  while (start < order.length) {
    // Longest item decides the bucket; grow the chunk while it fits.
    const remaining = order.length - start;
    const longest = lengthOf(order[order.length - 1]);
    const lengthCap = bucketFor(Math.max(1, longest), lengthLadder, 'item length');
    const fitRows = Math.max(1, Math.min(Math.floor(budget.tokensPerPass / lengthCap), Math.floor(budget.scoreBytesPerPass / (heads * lengthCap * keys(lengthCap) * 4))));
    const rows = remaining >= fitRows ? bucketAtMost(fitRows, ladders.counts) : bucketFor(remaining, ladders.counts, 'item count');
    const take = Math.min(rows, remaining);
    const items = order.slice(start, start + take);
    const length = bucketFor(Math.max(1, ...items.map(lengthOf)), lengthLadder, 'item length');
    chunks.push({ items, rows, length });
    start += take;
  }
  return chunks;
}

function padTokens(rows: readonly (readonly number[])[], rowCount: number, length: number): Int32Array {
  const out = new Int32Array(rowCount * length);
  rows.forEach((r, i) => out.set(r, i * length));
  return out;
}

function padLengths(rows: readonly (readonly number[])[], rowCount: number): Int32Array {
  const out = new Int32Array(rowCount);
  rows.forEach((r, i) => (out[i] = r.length));
  return out;
}

function labelInput(labels: readonly number[], ladders: Ladders): { bucket: number; input: ReturnType<typeof s32> } {
  const bucket = bucketFor(labels.length, ladders.labels, 'label count');
  const padded = new Int32Array(bucket);
  padded.set(labels);
  return { bucket, input: s32(padded) };
}

async function readRows(buffer: DeviceBuffer, rows: number, stride: number, labels: number): Promise<Float32Array[]> {
  try {
    const data = (await buffer.toHost()) as Float32Array;
    return Array.from({ length: rows }, (_, i) => data.slice(i * stride, i * stride + labels));
  } finally {
    buffer.dispose();
  }
}

function heads(ctx: PlanContext): number {
  return ctx.runner.config.numHeads;
}

/** serial: each item as its own sequence, batched. */
export async function runSerial(input: PlanInput, ctx: PlanContext): Promise<Float32Array[]> {
  const sequences = input.itemTokens.map((item) => (input.itemFirst ? [...item, ...input.queryTokens] : [...input.queryTokens, ...item]));
  const { bucket: B, input: labels } = labelInput(input.labels, ctx.ladders);
  const out: Float32Array[] = new Array(sequences.length);
  const order = byLength(sequences);
  for (const c of chunk(order, (i) => sequences[i].length, ctx.ladders.tokens, ctx.ladders, ctx.budget, heads(ctx), (l) => l)) {
    throwIfAborted(ctx.signal);
    const rows = c.items.map((i) => sequences[i]);
    // A fused pass with an empty prefix (one padding token, length 0): the items are whole sequences.
    const ref: ProgramRef = { program: 'decoder_fused', dims: { P: 1, N: c.rows, L: c.length, B } };
    const [prefixOut, itemOut] = await ctx.runner.run(ref, [
      s32([0]),
      s32Scalar(0),
      s32(padTokens(rows, c.rows, c.length), [c.rows, c.length]),
      s32(padLengths(rows, c.rows)),
      labels,
    ]);
    prefixOut.dispose();
    const logprobs = await readRows(itemOut, rows.length, B, input.labels.length);
    c.items.forEach((item, k) => (out[item] = logprobs[k]));
  }
  return out;
}

/** packed: query and items in one pass (chunked only when the items exceed the budget). */
export async function runPacked(input: PlanInput, ctx: PlanContext): Promise<Float32Array[]> {
  const { queryTokens, itemTokens } = input;
  const P = bucketFor(queryTokens.length, ctx.ladders.tokens, 'query length');
  const { bucket: B, input: labels } = labelInput(input.labels, ctx.ladders);
  const out: Float32Array[] = new Array(itemTokens.length);
  const order = byLength(itemTokens);
  for (const c of chunk(order, (i) => itemTokens[i].length, ctx.ladders.itemTokens, ctx.ladders, ctx.budget, heads(ctx), (l) => P + l)) {
    throwIfAborted(ctx.signal);
    const rows = c.items.map((i) => itemTokens[i]);
    const ref: ProgramRef = { program: 'decoder_fused', dims: { P, N: c.rows, L: c.length, B } };
    const [prefixOut, itemOut] = await ctx.runner.run(ref, [
      s32(padTokens([queryTokens], 1, P)),
      s32Scalar(queryTokens.length),
      s32(padTokens(rows, c.rows, c.length), [c.rows, c.length]),
      s32(padLengths(rows, c.rows)),
      labels,
    ]);
    const [prefixRow] = await readRows(prefixOut, 1, B, input.labels.length);
    const logprobs = await readRows(itemOut, rows.length, B, input.labels.length);
    // An empty item is read at the query's last token.
    c.items.forEach((item, k) => (out[item] = rows[k].length ? logprobs[k] : prefixRow));
  }
  return out;
}

/** prefix: prefill once (or reuse the cached K/V), then extend the items in chunks. */
export async function runPrefix(input: PlanInput, ctx: PlanContext): Promise<Float32Array[]> {
  const { queryTokens, itemTokens } = input;
  const P = bucketFor(queryTokens.length, ctx.ladders.tokens, 'query length');
  const { bucket: B, input: labels } = labelInput(input.labels, ctx.ladders);
  const labelsKey = input.labels.join(',');
  const needPrefixRow = itemTokens.some((t) => t.length === 0);
  const cacheKey = PrefixCache.key(queryTokens, P);
  let entry: PrefixEntry | undefined = ctx.prefixCache.get(cacheKey);
  let owned = false;
  if (!entry || (needPrefixRow && entry.prefixLogprobs?.labelsKey !== labelsKey)) {
    throwIfAborted(ctx.signal);
    const [kCache, vCache, prefixOut] = await ctx.runner.run({ program: 'decoder_prefill', dims: { P, B } }, [
      s32(padTokens([queryTokens], 1, P)),
      s32Scalar(queryTokens.length),
      labels,
    ]);
    const [prefixRow] = await readRows(prefixOut, 1, B, input.labels.length);
    entry = {
      kCache,
      vCache,
      prefixBucket: P,
      prefixLength: queryTokens.length,
      bytes: kCache.byteLength + vCache.byteLength,
      prefixLogprobs: { labelsKey, values: prefixRow },
    };
    owned = !ctx.prefixCache.set(cacheKey, entry);
  }
  try {
    const out: Float32Array[] = new Array(itemTokens.length);
    const order = byLength(itemTokens);
    for (const c of chunk(order, (i) => itemTokens[i].length, ctx.ladders.itemTokens, ctx.ladders, ctx.budget, heads(ctx), (l) => P + l)) {
      throwIfAborted(ctx.signal);
      const rows = c.items.map((i) => itemTokens[i]);
      const ref: ProgramRef = { program: 'decoder_extend', dims: { P, N: c.rows, L: c.length, B } };
      const [itemOut] = await ctx.runner.run(ref, [
        s32(padTokens(rows, c.rows, c.length), [c.rows, c.length]),
        s32(padLengths(rows, c.rows)),
        s32Scalar(queryTokens.length),
        entry.kCache,
        entry.vCache,
        labels,
      ]);
      const logprobs = await readRows(itemOut, rows.length, B, input.labels.length);
      const prefixRow = entry.prefixLogprobs?.values;
      c.items.forEach((item, k) => {
        if (rows[k].length) out[item] = logprobs[k];
        else if (prefixRow) out[item] = prefixRow;
        else throw new Error('internal: prefix row missing for an empty item');
      });
    }
    return out;
  } finally {
    if (owned) {
      entry.kCache.dispose();
      entry.vCache.dispose();
    }
  }
}

/** The passes a plan would run for an input of this shape (for warmup and explain). */
export function planPasses(algorithm: Algorithm, input: PlanInput, ladders: Ladders, budget: Budget, numHeads: number): Pass[] {
  const B = bucketFor(input.labels.length, ladders.labels, 'label count');
  const P = bucketFor(Math.max(1, input.queryTokens.length), ladders.tokens, 'query length');
  if (algorithm === 'serial') {
    const seqs = input.itemTokens.map((item) => item.length + input.queryTokens.length);
    return chunk(byLength(input.itemTokens), (i) => seqs[i], ladders.tokens, ladders, budget, numHeads, (l) => l).map((c) => ({
      ref: { program: 'decoder_fused', dims: { P: 1, N: c.rows, L: c.length, B } },
      items: c.items,
    }));
  }
  if (algorithm === 'packed') {
    return chunk(byLength(input.itemTokens), (i) => input.itemTokens[i].length, ladders.itemTokens, ladders, budget, numHeads, (l) => P + l).map((c) => ({
      ref: { program: 'decoder_fused', dims: { P, N: c.rows, L: c.length, B } },
      items: c.items,
    }));
  }
  const extend = chunk(byLength(input.itemTokens), (i) => input.itemTokens[i].length, ladders.itemTokens, ladders, budget, numHeads, (l) => P + l).map((c) => ({
    ref: { program: 'decoder_extend' as const, dims: { P, N: c.rows, L: c.length, B } },
    items: c.items,
  }));
  return [{ ref: { program: 'decoder_prefill', dims: { P, B } }, items: [] }, ...extend];
}
