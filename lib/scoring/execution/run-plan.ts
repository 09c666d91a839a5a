/**
 * The executor: runs exactly the passes of a plan (plan.ts) and writes each
 * item's label log-probabilities into one flat array, [item][label] in
 * request order. It chooses nothing: buckets, chunks and programs are the
 * plan's. Padding never changes a real output: masks hide padded keys and
 * padded rows are never read.
 */
import { DeviceBuffer } from '../../runtime/device-buffer';
import { DecoderRunner, HostInput, PassObserver, s32, s32Scalar } from './decoder-runner';
import { throwIfAborted } from '../requests/errors';
import { Plan } from '../planning/plan';
import { PrefixCache, PrefixEntry } from './prefix-cache';

/** The request in token space, as the executor needs it. */
export interface PlanInput {
  readonly queryTokens: readonly number[];
  readonly itemTokens: readonly (readonly number[])[];
  readonly labels: readonly number[];
  readonly itemFirst: boolean;
  /** Its scores are a softmax over its labels: label logits do for them (normalizeOf). */
  readonly applySoftmax: boolean;
}

/**
 * A pass's `normalize` input (lib/hlo/decoder/pass-programs.ts): 1 where a request in it needs its labels'
 * log-probabilities, 0 where every one takes a softmax over its labels, which the label logits give alike
 * (requests/scores.ts) without the product over the whole vocabulary.
 */
export function normalizeOf(inputs: readonly PlanInput[]): HostInput {
  return s32Scalar(inputs.some((input) => !input.applySoftmax) ? 1 : 0);
}

interface RunContext {
  readonly runner: DecoderRunner;
  readonly prefixCache: PrefixCache;
  readonly signal?: AbortSignal;
  /** Told of each pass of this plan that ends. */
  readonly onPass?: PassObserver;
}

/** `rows` token lists, each padded with zeros to `length`, as one [rowCount, length] input. */
function paddedRows(rows: readonly (readonly number[])[], rowCount: number, length: number): HostInput {
  const out = new Int32Array(rowCount * length);
  rows.forEach((r, i) => out.set(r, i * length));
  return s32(out, [rowCount, length]);
}

/** The query padded with zeros to the prefix bucket, as one [prefix] input. */
function paddedQuery(query: readonly number[], prefix: number): HostInput {
  const out = new Int32Array(prefix);
  out.set(query);
  return s32(out);
}

function rowLengths(rows: readonly (readonly number[])[], rowCount: number): HostInput {
  const out = new Int32Array(rowCount);
  rows.forEach((r, i) => (out[i] = r.length));
  return s32(out);
}

/**
 * Copies row r of a [rows, stride] device output into out[items[r]] (label count per item); items[r] < 0 is skipped.
 */
async function readInto(
  buffer: DeviceBuffer,
  stride: number,
  items: readonly number[],
  out: Float32Array,
  labels: number,
): Promise<void> {
  try {
    const data = (await buffer.toHost()) as Float32Array;
    items.forEach((item, r) => {
      if (item >= 0) out.set(data.subarray(r * stride, r * stride + labels), item * labels);
    });
  } finally {
    buffer.dispose();
  }
}

/**
 * Runs `plan` for `input`; returns label logprobs (label logits where it takes a softmax over them: normalizeOf),
 * [itemCount * labelCount].
 */
export async function runPlan(plan: Plan, input: PlanInput, ctx: RunContext): Promise<Float32Array> {
  const Lb = input.labels.length;
  const B = plan.labelBucket;
  const out = new Float32Array(input.itemTokens.length * Lb);
  const labelIds = new Int32Array(B);
  labelIds.set(input.labels);
  const labels = s32(labelIds);
  const normalize = normalizeOf([input]);
  const query = input.queryTokens;
  // Items read at the query's last token (empty items) are filled from this row once it is known.
  const emptyItems = input.itemTokens.flatMap((t, i) => (t.length === 0 ? [i] : []));
  let prefix: { entry: PrefixEntry; owned: boolean } | null = null;
  try {
    for (const pass of plan.passes) {
      throwIfAborted(ctx.signal);
      const key = pass.program;
      const rows = pass.items.map((i) => input.itemTokens[i]);
      switch (key.program) {
        case 'decoder_prefill': {
          prefix = await prefill(plan, input, ctx, [labels, normalize], emptyItems.length > 0);
          const row = prefix.entry.prefixLogprobs?.values;
          if (row) for (const i of emptyItems) out.set(row, i * Lb);
          break;
        }
        case 'decoder_extend': {
          if (!prefix) throw new Error('internal: an extend pass before its prefill');
          const [itemOut] = await ctx.runner.run(
            key,
            [
              paddedRows(rows, key.items, key.itemLength),
              rowLengths(rows, key.items),
              s32Scalar(query.length),
              prefix.entry.kCache,
              prefix.entry.vCache,
              labels,
              normalize,
            ],
            ctx.onPass,
          );
          await readInto(itemOut, B, nonEmpty(pass.items, input), out, Lb);
          break;
        }
        case 'decoder_fused': {
          if (plan.algorithm === 'serial') {
            // Whole sequences as items behind an empty prefix (one padding token, length 0).
            const sequences = rows.map((item) => (input.itemFirst ? [...item, ...query] : [...query, ...item]));
            const [prefixOut, itemOut] = await ctx.runner.run(
              key,
              [
                s32([0]),
                s32Scalar(0),
                paddedRows(sequences, key.items, key.itemLength),
                rowLengths(sequences, key.items),
                labels,
                normalize,
              ],
              ctx.onPass,
            );
            prefixOut.dispose();
            await readInto(itemOut, B, pass.items, out, Lb);
          } else {
            const [prefixOut, itemOut] = await ctx.runner.run(
              key,
              [
                paddedQuery(query, key.prefix),
                s32Scalar(query.length),
                paddedRows(rows, key.items, key.itemLength),
                rowLengths(rows, key.items),
                labels,
                normalize,
              ],
              ctx.onPass,
            );
            // An empty item is read at the query's last token: the prefix row of its own pass.
            const empties = pass.items.filter((i) => input.itemTokens[i].length === 0);
            if (empties.length === 0) prefixOut.dispose();
            else await readInto(prefixOut, B, [empties[0]], out, Lb);
            for (const i of empties.slice(1)) out.copyWithin(i * Lb, empties[0] * Lb, empties[0] * Lb + Lb);
            await readInto(itemOut, B, nonEmpty(pass.items, input), out, Lb);
          }
          break;
        }
      }
    }
    // A caller gone while the last pass ran gets the abort, as one gone between passes does: its
    // scores reach nobody and are not counted as scored.
    throwIfAborted(ctx.signal);
    return out;
  } finally {
    if (prefix?.owned) {
      prefix.entry.kCache.dispose();
      prefix.entry.vCache.dispose();
    }
  }
}

/** Row order of a pass with empty items left as holes (-1: not read; they are filled from the prefix row). */
function nonEmpty(items: readonly number[], input: PlanInput): number[] {
  return items.map((i) => (input.itemTokens[i].length === 0 ? -1 : i));
}

/**
 * The query's K/V on the device: from the prefix cache, or computed by the
 * prefill pass and offered to the cache. `owned` means the cache declined it
 * and the executor must free it.
 */
async function prefill(
  plan: Plan,
  input: PlanInput,
  ctx: RunContext,
  [labels, normalize]: readonly [HostInput, HostInput],
  needPrefixRow: boolean,
): Promise<{ entry: PrefixEntry; owned: boolean }> {
  const P = plan.prefixBucket;
  // Label logits (normalize 0) serve only requests that take a softmax over their labels.
  const labelsKey = `${input.labels.join(',')}${input.applySoftmax ? '|logits' : ''}`;
  const cacheKey = PrefixCache.key(input.queryTokens, P);
  const cached = ctx.prefixCache.get(cacheKey);
  if (cached && (!needPrefixRow || cached.prefixLogprobs?.labelsKey === labelsKey))
    return { entry: cached, owned: false };
  const [kCache, vCache, prefixOut] = await ctx.runner.run(
    { program: 'decoder_prefill', prefix: P, labels: plan.labelBucket },
    [paddedQuery(input.queryTokens, P), s32Scalar(input.queryTokens.length), labels, normalize],
    ctx.onPass,
  );
  const values = new Float32Array(input.labels.length);
  await readInto(prefixOut, plan.labelBucket, [0], values, input.labels.length);
  const entry: PrefixEntry = {
    kCache,
    vCache,
    prefixBucket: P,
    prefixLength: input.queryTokens.length,
    bytes: kCache.byteLength + vCache.byteLength,
    prefixLogprobs: { labelsKey, values },
  };
  return { entry, owned: !ctx.prefixCache.set(cacheKey, entry) };
}
