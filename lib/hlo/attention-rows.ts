/**
 * Items over a prefix, the joint softmax with fewer passes over the prefix
 * scores: the same numbers as itemsOverPrefixAttention within f32 rounding.
 *
 * Why: at the target shape the prefix scores [Hkv, N, L, G, P] are ~94 MB
 * per layer, and XLA CPU makes separate passes over them (the QK GEMM writes
 * them, the split row max reads them, exp reads them and writes the weights,
 * the split row sum and the value GEMM read the weights): it does not fuse
 * producers into reductions. Three changes, each optional:
 * - the denominator from the values: the values carry a column of ones
 *   ([P, Hkv, D + 1]), so the value GEMM sums each row's weights in its last
 *   column and the reduce-sum pass over the weights disappears (`dot`: a
 *   separate dot of the weights with a ones vector, which keeps the value
 *   GEMM at D columns but reads the weights once more);
 * - the shift by the own keys' max: softmax is the same for any shift per
 *   row, and the max over a row's own L keys is a pass over a tensor P/L
 *   times smaller; it can only be below the true max, so exp can overflow
 *   (a prefix score ~88 above every own score). Then the chunk, and only
 *   then, is computed again with the true max;
 * - row chunks: the items go in chunks of `itemsPerChunk`; a chunk runs
 *   scores -> max -> exp -> values against all prefix keys (and its own keys)
 *   while its score tensor can still be in cache. Items are independent, so
 *   a chunk is exactly the joint attention of its items.
 * docs/performance.md has what each was worth on the CPU.
 *
 * Every row sees its own first key, so both shifts are finite and a masked
 * prefix key (bias -1e30 folded into the QK product, as in the joint form)
 * gets exp(-1e30 - shift), exactly 0; padding rows compute finite garbage
 * and are set to 0 at the end; an item's outputs read only its own chunk's
 * rows.
 */

import { FunctionBuilder } from './builder';
import { HloValue, Operand } from './core';
import { AttentionOptions, ItemsOverPrefixInputs, MASKED_SCORE, itemOutputs, itemsOverPrefixLayout, resolveScale, withOnesColumn } from './attention';
import { HloBuildError, TensorType } from './types';
import { capScores, causalWindowVisible, checkShaping, maskBias, prefixKeysVisible, shapesScores } from './attention-window';

/** Row chunking of the items-over-prefix attention (a `PrefixAttention` kind, prefix-attention.ts). */
export interface RowChunking {
  readonly kind: 'rows';
  /** Items per chunk; absent: all items in one chunk. */
  readonly itemsPerChunk?: number;
  /**
   * `while`: one chunk body, items padded to whole chunks; `unrolled`: static slices, short last chunk
   * (XLA schedules all the chunks' QK GEMMs first there, so their scores are alive at once).
   */
  readonly loop: 'while' | 'unrolled';
  /**
   * `values`: a ones column in the values gives the denominator; `reduce`: a reduce-sum over the weights;
   * `dot`: a dot of the prefix weights with a ones vector (own weights: reduce-sum).
   */
  readonly denominator: 'values' | 'reduce' | 'dot';
  /**
   * The softmax shift per row: `max` (default), the max over all its keys; `own`, the max over its own
   * keys only (no pass over the prefix scores for their max; the chunk is redone with the true max
   * where that overflows).
   */
  readonly shift?: 'max' | 'own';
}

/** Checks a RowChunking value from a caller; returns it. */
export function checkRowChunking(a: RowChunking): RowChunking {
  if (a.itemsPerChunk !== undefined && !(Number.isSafeInteger(a.itemsPerChunk) && a.itemsPerChunk >= 1)) {
    throw new HloBuildError(`prefix attention itemsPerChunk must be a positive integer or absent, got ${String(a.itemsPerChunk)}`);
  }
  if (a.loop !== 'while' && a.loop !== 'unrolled') throw new HloBuildError(`prefix attention loop must be 'while' or 'unrolled', got ${JSON.stringify(a.loop)}`);
  if (a.shift !== undefined && a.shift !== 'max' && a.shift !== 'own') throw new HloBuildError(`prefix attention shift must be 'max' or 'own', got ${JSON.stringify(a.shift)}`);
  if (a.denominator !== 'values' && a.denominator !== 'reduce' && a.denominator !== 'dot') throw new HloBuildError(`prefix attention denominator must be 'values', 'reduce' or 'dot', got ${JSON.stringify(a.denominator)}`);
  return a;
}

/**
 * `ones` (one chunk, denominator from the values), `rsum` (one chunk, reduce-sum), `rdot` (one chunk, dot
 * with ones), `rc4u`, `rc4w`, `rc4us` / `rc4ud` (s: reduce-sum, d: dot denominator); a last `_own` shifts by
 * the own keys' max (`ones_own`).
 */
export function rowChunkingTag(a: RowChunking): string {
  const sum = a.denominator === 'reduce' ? 's' : a.denominator === 'dot' ? 'd' : '';
  const own = a.shift === 'own' ? '_own' : '';
  return (a.itemsPerChunk === undefined ? (sum === 's' ? 'rsum' : sum === 'd' ? 'rdot' : 'ones') : `rc${a.itemsPerChunk}${a.loop[0]}${sum}`) + own;
}

/** The inverse of rowChunkingTag; undefined when the tag is not a row-chunking tag. */
export function parseRowChunkingTag(tag: string): RowChunking | undefined {
  const own = tag.endsWith('_own');
  const base = own ? tag.slice(0, -4) : tag;
  const shift = own ? { shift: 'own' as const } : {};
  if (base === 'ones') return { kind: 'rows', loop: 'unrolled', denominator: 'values', ...shift };
  if (base === 'rsum') return { kind: 'rows', loop: 'unrolled', denominator: 'reduce', ...shift };
  if (base === 'rdot') return { kind: 'rows', loop: 'unrolled', denominator: 'dot', ...shift };
  const m = /^rc([1-9][0-9]*)([wu])([sd]?)$/.exec(base);
  if (!m) return undefined;
  const loop = m[2] === 'w' ? 'while' : 'unrolled';
  return { kind: 'rows', itemsPerChunk: Number(m[1]), loop, denominator: m[3] === 's' ? 'reduce' : m[3] === 'd' ? 'dot' : 'values', ...shift };
}

/** What every chunk shares: the sizes, the group axes and the form's choices. */
interface Shared {
  g: number;
  lead: number[];
  axes: number[];
  hq: number;
  hkv: number;
  group: number;
  d: number;
  l: number;
  /** Value columns: D, or D + 1 with the ones column. */
  dv: number;
  ones: boolean;
  denominator: RowChunking['denominator'];
  shift: 'max' | 'own';
  /** Soft cap of the scores (attention-window.ts). */
  softcap?: number;
}

/**
 * The masks a window or a soft cap needs (attention-window.ts), the same for
 * every chunk: own-key visibility pred [L, L], and a bias [..., L, P] added
 * to the (capped) prefix scores. Absent: the plain form's masks.
 */
interface ChunkMasks {
  own: HloValue;
  prefixBias?: HloValue;
}

function maskList(m: ChunkMasks | undefined): HloValue[] {
  return m ? [m.own, ...(m.prefixBias ? [m.prefixBias] : [])] : [];
}

function masksFrom(m: ChunkMasks | undefined, values: readonly HloValue[]): ChunkMasks | undefined {
  return m ? { own: values[0], ...(m.prefixBias ? { prefixBias: values[1] } : {}) } : undefined;
}

/**
 * The joint attention of one chunk of items: qWithOne [..., n, L, Hkv, G, D + 1]
 * (scaled queries and a column of ones), its own keys and values
 * [..., n, L, Hkv, D(+1)], lengths [..., n] -> [..., n, L, Hq, D].
 */
function attendChunk(b: FunctionBuilder, s: Shared, qWithOne: HloValue, itemK: HloValue, itemV: HloValue, itemLengths: HloValue, kWithBias: HloValue, prefixV: HloValue, masks?: ChunkMasks): HloValue {
  const { g, lead, axes, hkv, group, d, l } = s;
  const n = qWithOne.dims[g];
  const keyAxis = g + 4;
  // Prefix scores [..., Hkv, n, L, G, P], masked by the bias column (and, with a window or cap, the bias after the cap).
  let prefixScores = capScores(b, b.dotGeneral(qWithOne, kWithBias, { lhsBatch: [...axes, g + 2], rhsBatch: [...axes, g + 1], lhsContract: [g + 4], rhsContract: [g + 2] }), s.softcap);
  if (masks?.prefixBias) prefixScores = b.add(prefixScores, b.broadcastInDim(masks.prefixBias, prefixScores.dims, [...axes, g + 2, g + 4]));
  // Own scores [..., Hkv, n, L, G, Lk]; the queries without their ones column.
  const q = b.slice(qWithOne, axes.map(() => 0).concat([0, 0, 0, 0, 0]), [...lead, n, l, hkv, group, d]);
  const ownScores = capScores(b, b.dotGeneral(q, itemK, { lhsBatch: [...axes, g + 2, g], rhsBatch: [...axes, g + 2, g], lhsContract: [g + 4], rhsContract: [g + 3] }), s.softcap);
  const causal = masks?.own ?? b.le(b.iota(TensorType.s32([l, l]), 1), b.iota(TensorType.s32([l, l]), 0));
  const own = b.select(b.broadcastInDim(causal, ownScores.dims, [g + 2, g + 4]), ownScores, -Infinity);
  // Finite for every row: a row sees its own key (window or not).
  const ownMax = b.reduceMax(own, [keyAxis]);
  if (s.shift === 'max') return finish(b, s, itemLengths, weigh(b, s, prefixScores, own, b.maximum(b.reduceMax(prefixScores, [keyAxis]), ownMax), itemV, prefixV));
  // Shift by the own keys' max: no pass over the prefix scores for their max. Any shift gives the same
  // softmax; this one can only be too small, and exp overflows only where a prefix score exceeds the own
  // max by ~88. Then (a non-finite numerator or sum) the chunk is computed again with the
  // true max, in a loop that runs 0 or 1 times.
  const fast = weigh(b, s, prefixScores, own, ownMax, itemV, prefixV);
  const probe = b.reduceSum(b.multiply(fast.numerator, 0), fast.numerator.dims.map((_, i) => i)); // NaN iff a non-finite value
  const probeSum = b.reduceSum(b.multiply(fast.sum, 0), fast.sum.dims.map((_, i) => i));
  const redo = b.select(b.and(b.eq(probe, probe), b.eq(probeSum, probeSum)), b.scalar(0, 's32'), b.scalar(1, 's32'));
  // The redo starts again from the chunk's inputs (passing the scores into the loop would copy them),
  // and reads its queries at the loop counter (0) from a copy one item longer: a body that depends only on
  // loop invariants is hoisted out of the loop by XLA and would always run.
  const exact: Shared = { ...s, shift: 'max' };
  const qLonger = b.pad(qWithOne, 0, qWithOne.dims.map(() => 0), qWithOne.dims.map((_, a) => (a === g ? 1 : 0)));
  const [out] = b.forLoop(
    { count: redo, carried: [finish(b, s, itemLengths, fast)], invariants: [qLonger, itemK, itemV, itemLengths, kWithBias, prefixV, ...maskList(masks)] },
    (c, i, _carried, [ql, ik, iv, il, kb, pv, ...m]) => [attendChunk(c, exact, c.dynamicSlice(ql, ql.dims.map((_, a) => (a === g ? i : 0)), qWithOne.dims), ik, iv, il, kb, pv, masksFrom(masks, m))],
  );
  return out;
}

/** Softmax numerators [..., Hkv, n, L, G, D] and denominators [..., Hkv, n, L, G] for a shift per row. */
function weigh(b: FunctionBuilder, s: Shared, prefixScores: HloValue, own: HloValue, shift: HloValue, itemV: HloValue, prefixV: HloValue): { numerator: HloValue; sum: HloValue } {
  const { g, axes, d, dv } = s;
  const keyAxis = g + 4;
  const prefixWeights = b.exponential(b.subtract(prefixScores, b.expandReduced(shift, prefixScores.dims, [keyAxis])));
  const ownWeights = b.exponential(b.subtract(own, b.expandReduced(shift, own.dims, [keyAxis])));
  // [..., Hkv, n, L, G, P] x [..., P, Hkv, Dv] and [..., Hkv, n, L, G, Lk] x [..., n, Lk, Hkv, Dv] -> [..., Hkv, n, L, G, Dv]
  const acc = b.add(
    b.dotGeneral(prefixWeights, prefixV, { lhsBatch: [...axes, g], rhsBatch: [...axes, g + 1], lhsContract: [keyAxis], rhsContract: [g] }),
    b.dotGeneral(ownWeights, itemV, { lhsBatch: [...axes, g, g + 1], rhsBatch: [...axes, g + 2, g], lhsContract: [keyAxis], rhsContract: [g + 1] }),
  );
  if (s.denominator === 'dot') {
    const ones = b.full(TensorType.f32([prefixWeights.dims[keyAxis]]), 1);
    const prefixSum = b.dotGeneral(prefixWeights, ones, { lhsBatch: [], rhsBatch: [], lhsContract: [keyAxis], rhsContract: [0] });
    return { numerator: acc, sum: b.add(prefixSum, b.reduceSum(ownWeights, [keyAxis])) };
  }
  if (!s.ones) return { numerator: acc, sum: b.add(b.reduceSum(prefixWeights, [keyAxis]), b.reduceSum(ownWeights, [keyAxis])) };
  const rows = shift.dims;
  const zeros = rows.map(() => 0);
  return { numerator: b.slice(acc, [...zeros, 0], [...rows, d]), sum: b.reshape(b.slice(acc, [...zeros, d], [...rows, dv]), rows) };
}

/** numerator / denominator, tokens first, padding rows 0: -> [..., n, L, Hq, D]. */
function finish(b: FunctionBuilder, s: Shared, itemLengths: HloValue, w: { numerator: HloValue; sum: HloValue }): HloValue {
  const { g } = s;
  // A row's sum is >= 1 (its max key has weight 1); guard anyway, as the joint form does.
  const safe = b.select(b.gt(w.sum, 0), w.sum, 1);
  return itemOutputs(b, b.divide(w.numerator, b.expandReduced(safe, w.numerator.dims, [g + 4])), itemLengths, g);
}

/**
 * itemsOverPrefixAttention with the items in chunks and/or the denominator
 * from the value GEMM: -> [N, L, Hq, D]; grouped (prefixLength s32[G]) ->
 * [G, N, L, Hq, D], each group against its own prefix.
 */
export function itemsOverPrefixAttentionRows(f: FunctionBuilder, x: ItemsOverPrefixInputs, chunking: RowChunking, opts?: AttentionOptions): HloValue {
  const { lead, axes, hq, hkv, group, d, n, l, p } = itemsOverPrefixLayout('itemsOverPrefixAttentionRows', x);
  checkRowChunking(chunking);
  const g = lead.length;
  const ones = chunking.denominator === 'values';
  const shaping = checkShaping('itemsOverPrefixAttentionRows', opts);
  const s: Shared = { g, lead, axes, hq, hkv, group, d, l, dv: ones ? d + 1 : d, ones, denominator: chunking.denominator, shift: chunking.shift ?? 'max', ...(shaping.softcap !== undefined ? { softcap: shaping.softcap } : {}) };
  const zeros = (k: number): number[] => Array.from({ length: k }, () => 0);

  // The prefix mask as a bias column of the QK product (see itemsOverPrefixAttention); with a soft cap, a
  // bias added after the cap, as is a window's (attention-window.ts).
  const fold = shaping.softcap === undefined;
  const prefixKeyValid = f.lt(f.iota(TensorType.s32([...lead, p]), g), f.broadcastInDim(x.prefixLength, [...lead, p], axes));
  const bias = fold ? f.select(prefixKeyValid, f.full(TensorType.f32([...lead, p]), 0), f.full(TensorType.f32([...lead, p]), MASKED_SCORE)) : f.full(TensorType.f32([...lead, p]), 0);
  let masks: ChunkMasks | undefined;
  if (shapesScores(shaping)) {
    const visible = prefixKeysVisible(f, lead, l, p, x.prefixLength, shaping.window, !fold);
    masks = { own: causalWindowVisible(f, l, l, 0, shaping.window), ...(visible ? { prefixBias: maskBias(f, visible) } : {}) };
  }
  const kWithBias = f.concatenate([x.prefixK, f.broadcastInDim(bias, [...lead, p, hkv, 1], [...axes, g])], g + 2);
  const prefixV = ones ? withOnesColumn(f, x.prefixV) : x.prefixV;
  const qGrouped = f.reshape(f.multiply(x.itemQ, resolveScale(opts, d)), [...lead, n, l, hkv, group, d]);
  const qWithOne = f.concatenate([qGrouped, f.full(TensorType.f32([...lead, n, l, hkv, group, 1]), 1)], g + 4);
  const itemV = ones ? withOnesColumn(f, x.itemV) : x.itemV;

  const k = Math.min(chunking.itemsPerChunk ?? n, Math.max(n, 1));
  const chunks = n === 0 ? 0 : Math.ceil(n / k);
  if (chunks <= 1) return attendChunk(f, s, qWithOne, x.itemK, itemV, x.itemLengths, kWithBias, prefixV, masks);

  // An item's slice of a [..., N, ...] tensor (item axis g).
  const itemSlice = (t: HloValue, start: number, end: number): HloValue => f.slice(t, t.dims.map((_, i) => (i === g ? start : 0)), t.dims.map((dim, i) => (i === g ? end : dim)));
  if (chunking.loop !== 'while') {
    const outs: HloValue[] = [];
    for (let start = 0; start < n; start += k) {
      const end = Math.min(n, start + k);
      const [q1, ik, iv, il] = [qWithOne, x.itemK, itemV, x.itemLengths].map((t) => itemSlice(t, start, end));
      outs.push(attendChunk(f, s, q1, ik, iv, il, kWithBias, prefixV, masks));
    }
    return f.concatenate(outs, g);
  }

  // while: items padded to whole chunks (length 0: padding rows, output 0), one chunk per iteration.
  const padded = chunks * k;
  const grow = (t: HloValue): HloValue => (padded === n ? t : f.pad(t, 0, zeros(t.rank), t.dims.map((_, i) => (i === g ? padded - n : 0))));
  const init = f.full(TensorType.f32([...lead, padded, l, hq, d]), 0);
  const [out] = f.forLoop(
    { count: chunks, carried: [init], invariants: [grow(qWithOne), grow(x.itemK), grow(itemV), grow(x.itemLengths), kWithBias, prefixV, ...maskList(masks)] },
    (b, i, [acc], [q1, ik, iv, il, kb, pv, ...m]) => {
      const start = b.multiply(i, k);
      const at = (t: HloValue): Operand[] => t.dims.map((_, a) => (a === g ? start : 0));
      const take = (t: HloValue): HloValue => b.dynamicSlice(t, at(t), t.dims.map((dim, a) => (a === g ? k : dim)));
      const chunk = attendChunk(b, s, take(q1), take(ik), take(iv), take(il), kb, pv, masksFrom(masks, m));
      return [b.dynamicUpdateSlice(acc, chunk, at(acc))];
    },
  );
  return padded === n ? out : f.slice(out, zeros(out.rank), [...lead, n, l, hq, d]);
}
