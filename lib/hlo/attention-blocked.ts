/**
 * Items over a prefix with the prefix keys taken in blocks and an online
 * softmax (running max, denominator and numerator per query row): the same
 * numbers as itemsOverPrefixAttention within f32 rounding, computed so that
 * the score tensor alive at a time is [Hkv, N, L, G, Kb] instead of
 * [Hkv, N, L, G, P]. XLA CPU makes several passes over the score tensor
 * (the GEMM writes it, the split row max reads it, exp writes the weights,
 * the split sum and the value GEMM read them); with the whole prefix those
 * passes go to memory, with a block they can stay in cache.
 *
 * The own keys go first: every real row sees its own first key, so the
 * running max starts at a real score, and a masked prefix key (bias -1e30,
 * folded into the QK product as in the joint form) gets exp(-1e30 - max),
 * exactly 0, in every block. So masked keys have weight exactly 0 as in the
 * joint form, items never change each other's bits, and padding rows get 0.
 *
 * Two loop forms over the blocks: `while` (one block body; the prefix is
 * padded to a whole number of blocks with masked keys) and `unrolled` (one
 * copy of the body per block, static slices; the last block may be short).
 */

import { FunctionBuilder } from './builder';
import { HloValue } from './core';
import { AttentionOptions, ItemsOverPrefixInputs, MASKED_SCORE, itemOutputs, itemsOverPrefixLayout, resolveScale, withOnesColumn } from './attention';
import { HloBuildError, TensorType } from './types';

/** Prefix keys in blocks of `keyBlock` with an online softmax (a `PrefixAttention` kind, prefix-attention.ts). */
export interface KeyBlocking {
  readonly kind: 'blocked';
  readonly keyBlock: number;
  readonly loop: 'while' | 'unrolled';
}

/** Checks a KeyBlocking value from a caller; returns it. */
export function checkKeyBlocking(a: KeyBlocking): KeyBlocking {
  if (!Number.isSafeInteger(a.keyBlock) || a.keyBlock < 1) throw new HloBuildError(`prefix attention keyBlock must be a positive integer, got ${String(a.keyBlock)}`);
  if (a.loop !== 'while' && a.loop !== 'unrolled') throw new HloBuildError(`prefix attention loop must be 'while' or 'unrolled', got ${JSON.stringify(a.loop)}`);
  return a;
}

/** `kb256w` (while), `kb512u` (unrolled). */
export function keyBlockingTag(a: KeyBlocking): string {
  return `kb${a.keyBlock}${a.loop === 'while' ? 'w' : 'u'}`;
}

/** The inverse of keyBlockingTag; undefined when the tag is not a key-blocking tag. */
export function parseKeyBlockingTag(tag: string): KeyBlocking | undefined {
  const m = /^kb([1-9][0-9]*)([wu])$/.exec(tag);
  return m ? { kind: 'blocked', keyBlock: Number(m[1]), loop: m[2] === 'w' ? 'while' : 'unrolled' } : undefined;
}

/**
 * Running softmax state per query row [Hkv, N, L, G]: the max, and [..., D + 1]
 * with the numerator in the first D columns and the denominator last: the
 * values carry a column of ones, so the value GEMM sums the weights too
 * (no separate reduction pass over the weights).
 */
interface Running {
  max: HloValue;
  acc: HloValue;
}

/** Folds one block of scores [..., K] and its values (with the ones column) into the running state. */
function foldBlock(b: FunctionBuilder, s: Running, scores: HloValue, weightedValues: (weights: HloValue) => HloValue): Running {
  const keyAxis = scores.rank - 1;
  const max = b.maximum(s.max, b.reduceMax(scores, [keyAxis]));
  const rescale = b.exponential(b.subtract(s.max, max));
  const weights = b.exponential(b.subtract(scores, b.expandReduced(max, scores.dims, [keyAxis])));
  return { max, acc: b.add(b.multiply(s.acc, b.expandReduced(rescale, s.acc.dims, [keyAxis])), weightedValues(weights)) };
}

/**
 * Scores of [q * scale, 1] against a block of [k, bias] ([..., Hkv, N, L, G, K])
 * and its values with the ones column ([..., Hkv, N, L, G, D + 1]), folded in;
 * `g` leading group axes batch every dot.
 */
function prefixBlock(b: FunctionBuilder, s: Running, g: number, qWithOne: HloValue, kWithBias: HloValue, v: HloValue): Running {
  const axes = Array.from({ length: g }, (_, i) => i);
  const scores = b.dotGeneral(qWithOne, kWithBias, { lhsBatch: [...axes, g + 2], rhsBatch: [...axes, g + 1], lhsContract: [g + 4], rhsContract: [g + 2] });
  return foldBlock(b, s, scores, (w) => b.dotGeneral(w, v, { lhsBatch: [...axes, g], rhsBatch: [...axes, g + 1], lhsContract: [g + 4], rhsContract: [g] }));
}

/**
 * itemsOverPrefixAttention with prefix keys in blocks of `keyBlock`:
 * -> [N, L, Hq, D]; grouped (prefixLength s32[G]) -> [G, N, L, Hq, D], each
 * group against its own prefix, as in the joint form.
 */
export function itemsOverPrefixAttentionBlocked(
  f: FunctionBuilder,
  x: ItemsOverPrefixInputs,
  blocking: Omit<KeyBlocking, 'kind'>,
  opts?: AttentionOptions,
): HloValue {
  const { lead, axes, hkv, group, d, n, l, p } = itemsOverPrefixLayout('itemsOverPrefixAttentionBlocked', x);
  checkKeyBlocking({ kind: 'blocked', keyBlock: blocking.keyBlock, loop: blocking.loop });
  const { keyBlock } = blocking;
  const g = lead.length;
  const zeros = (k: number): number[] => Array.from({ length: k }, () => 0);
  const qGrouped = f.reshape(f.multiply(x.itemQ, resolveScale(opts, d)), [...lead, n, l, hkv, group, d]);

  // Own keys first (see the file comment): [..., Hkv, N, L, G, Lk], own key j' visible iff j' <= j.
  const ownScores = f.dotGeneral(qGrouped, x.itemK, { lhsBatch: [...axes, g + 2, g], rhsBatch: [...axes, g + 2, g], lhsContract: [g + 4], rhsContract: [g + 3] });
  const causal = f.le(f.iota(TensorType.s32([l, l]), 1), f.iota(TensorType.s32([l, l]), 0));
  const own = f.select(f.broadcastInDim(causal, ownScores.dims, [g + 2, g + 4]), ownScores, -Infinity);
  const ownMax = f.reduceMax(own, [g + 4]);
  const ownWeights = f.exponential(f.subtract(own, f.expandReduced(ownMax, own.dims, [g + 4])));
  let state: Running = {
    max: ownMax,
    acc: f.dotGeneral(ownWeights, withOnesColumn(f, x.itemV), { lhsBatch: [...axes, g, g + 1], rhsBatch: [...axes, g + 2, g], lhsContract: [g + 4], rhsContract: [g + 1] }),
  };

  // Prefix keys with the mask as a bias column (as in the joint form), over a whole number of blocks
  // for the while form: key p is visible iff p < prefixLength and p < P (the rest is block padding).
  const blocks = Math.ceil(p / keyBlock);
  const padded = blocking.loop === 'while' ? blocks * keyBlock : p;
  const keyIndex = f.iota(TensorType.s32([...lead, padded]), g);
  const valid = f.lt(keyIndex, f.broadcastInDim(x.prefixLength, [...lead, padded], axes));
  const visible = padded === p ? valid : f.and(valid, f.lt(keyIndex, p));
  const bias = f.select(visible, f.full(TensorType.f32([...lead, padded]), 0), f.full(TensorType.f32([...lead, padded]), MASKED_SCORE));
  const grow = (t: HloValue): HloValue => (padded === p ? t : f.pad(t, 0, zeros(g + 3), [...zeros(g), padded - p, 0, 0]));
  const kWithBias = f.concatenate([grow(x.prefixK), f.broadcastInDim(bias, [...lead, padded, hkv, 1], [...axes, g])], g + 2);
  const prefixV = withOnesColumn(f, grow(x.prefixV));
  const qWithOne = f.concatenate([qGrouped, f.full(TensorType.f32([...lead, n, l, hkv, group, 1]), 1)], g + 4);

  if (blocking.loop === 'unrolled' || blocks <= 1) {
    for (let start = 0; start < p; start += keyBlock) {
      const end = Math.min(p, start + keyBlock);
      const kBlock = f.slice(kWithBias, [...zeros(g), start, 0, 0], [...lead, end, hkv, d + 1]);
      const vBlock = f.slice(prefixV, [...zeros(g), start, 0, 0], [...lead, end, hkv, d + 1]);
      state = prefixBlock(f, state, g, qWithOne, kBlock, vBlock);
    }
  } else {
    const [max, acc] = f.forLoop(
      { count: blocks, carried: [state.max, state.acc], invariants: [qWithOne, kWithBias, prefixV] },
      (b, i, [m, a], [q1, kb, vb]) => {
        const start = b.multiply(i, keyBlock);
        const kBlock = b.dynamicSlice(kb, [...zeros(g), start, 0, 0], [...lead, keyBlock, hkv, d + 1]);
        const vBlock = b.dynamicSlice(vb, [...zeros(g), start, 0, 0], [...lead, keyBlock, hkv, d + 1]);
        const next = prefixBlock(b, { max: m, acc: a }, g, q1, kBlock, vBlock);
        return [next.max, next.acc];
      },
    );
    state = { max, acc };
  }

  // A real row's sum is >= 1 (its max key has weight 1); guard anyway, as the joint form does.
  const rows = state.max.dims;
  const sum = f.reshape(f.slice(state.acc, [...zeros(rows.length), d], [...rows, d + 1]), rows);
  const numerator = f.slice(state.acc, zeros(rows.length + 1), [...rows, d]);
  const safe = f.select(f.gt(sum, 0), sum, 1);
  const out = f.divide(numerator, f.expandReduced(safe, numerator.dims, [g + 4]));
  return itemOutputs(f, out, x.itemLengths, g);
}
