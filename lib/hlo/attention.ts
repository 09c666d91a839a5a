/**
 * Masked grouped-query attention for multi-item scoring (SPEC.md section 4).
 *
 * Visibility: key k is visible from query token q iff k <= q, k is not
 * padding, and k is in the query or in q's own item. Query head h reads kv
 * head floor(h / G), G = Hq / Hkv; scores are scaled by 1/sqrt(D) by default.
 *
 * Two layouts compute the same numbers:
 * - dense: one packed sequence [T]; the [T, T] mask is computed on the device
 *   from the O(T) segment ids (0 query, i >= 1 item i, -1 padding);
 * - factored: the query [P] and the items as a grid [N, L]; an item token
 *   attends to [P query keys ; its own L keys], so the cost is
 *   O(P^2 + N*L*(P+L)) and nothing is ever computed across two items.
 *
 * Softmax is taken jointly over all key groups with masked scores set to -inf
 * (or -1e30 where the mask is folded into the QK product); a row with no
 * visible key (padding) gets output 0, never NaN. Masked keys get weight
 * exactly 0, so an item's values cannot change another item's outputs by a
 * single bit. Padding slots may hold any *finite* values (0 * inf is NaN).
 */

import { sameDims } from '../util/dims';
import { FunctionBuilder } from './builder';
import { HloValue } from './core';
import { HloBuildError, TensorType, formatDims } from './types';

export interface AttentionOptions {
  /** Score scale; default 1/sqrt(headDim). */
  scale?: number;
}

export interface Heads {
  hq: number;
  hkv: number;
  group: number;
  d: number;
}

/** Checks q [..., Hq, D] against k, v [..., Hkv, D] and returns the head layout. */
export function headLayout(op: string, q: HloValue, k: HloValue, v: HloValue): Heads {
  for (const [name, x] of [['q', q], ['k', k], ['v', v]] as const) {
    if (x.elementType !== 'f32') throw new HloBuildError(`${op}: ${name} must be f32, got ${x.type}`);
  }
  const hq = q.dims[q.rank - 2];
  const d = q.dims[q.rank - 1];
  const hkv = k.dims[k.rank - 2];
  if (!sameDims(k.dims, v.dims)) throw new HloBuildError(`${op}: k ${formatDims(k.dims)} and v ${formatDims(v.dims)} must have the same dims`);
  if (k.dims[k.rank - 1] !== d) throw new HloBuildError(`${op}: head dims differ: q has D=${d}, k has D=${k.dims[k.rank - 1]}`);
  if (hkv === 0 || hq % hkv !== 0) throw new HloBuildError(`${op}: query heads (${hq}) must be a multiple of kv heads (${hkv})`);
  return { hq, hkv, group: hq / hkv, d };
}

export function expectDims(op: string, name: string, x: HloValue, dims: readonly number[], elementType = 'f32'): void {
  if (x.elementType !== elementType || !sameDims(x.dims, dims)) {
    throw new HloBuildError(`${op}: ${name} must be ${elementType}${formatDims(dims)}, got ${x.type}`);
  }
}

/** Score of a masked key where masking is additive: exp(MASKED_SCORE - finite max) == 0 in f32. */
export const MASKED_SCORE = -1e30;

export function resolveScale(opts: AttentionOptions | undefined, d: number): number {
  const scale = opts?.scale ?? 1 / Math.sqrt(d);
  if (!Number.isFinite(scale)) throw new HloBuildError(`attention: scale must be a finite number, got ${scale}`);
  return scale;
}

/**
 * One group of keys for a query block: scores [..., K], their visibility (same
 * shape; omitted when masked keys already score -1e30), and how to weight the
 * group's values.
 */
interface KeyGroup {
  scores: HloValue;
  visible?: HloValue;
  /** weights [..., K] -> weighted values [..., D] */
  weightedValues: (weights: HloValue) => HloValue;
}

/**
 * softmax over the concatenation of the groups' keys, applied to their
 * values, without concatenating anything: one shared max and denominator.
 */
function attendJointly(f: FunctionBuilder, groups: readonly KeyGroup[]): HloValue {
  const lead = groups[0].scores.dims.slice(0, -1);
  const keyAxis = lead.length;
  const masked = groups.map((g) => (g.visible ? f.select(g.visible, g.scores, -Infinity) : g.scores));
  let max = f.reduceMax(masked[0], [keyAxis]);
  for (const m of masked.slice(1)) max = f.maximum(max, f.reduceMax(m, [keyAxis]));
  // A row that sees no key has max -inf: shift by 0 so its weights are exp(-inf) = 0.
  const shift = f.select(f.gt(max, -Infinity), max, 0);
  let denominator: HloValue | undefined;
  let numerator: HloValue | undefined;
  groups.forEach((g, i) => {
    const weights = f.exponential(f.subtract(masked[i], f.expandReduced(shift, masked[i].dims, [keyAxis])));
    const sum = f.reduceSum(weights, [keyAxis]);
    const values = g.weightedValues(weights);
    denominator = denominator ? f.add(denominator, sum) : sum;
    numerator = numerator ? f.add(numerator, values) : values;
  });
  const safe = f.select(f.gt(denominator!, 0), denominator!, 1);
  return f.divide(numerator!, f.expandReduced(safe, numerator!.dims, [keyAxis]));
}

/**
 * The dense visibility mask [T, T] (query index, key index) from segment ids
 * [T]: k <= q, s[k] != -1, s[q] != -1, and (s[k] == 0 or s[k] == s[q]).
 * Padding query rows see nothing (their output is 0).
 */
export function denseSegmentMask(f: FunctionBuilder, segmentIds: HloValue): HloValue {
  if (segmentIds.rank !== 1 || segmentIds.elementType !== 's32') throw new HloBuildError(`denseSegmentMask: segment ids must be s32[T], got ${segmentIds.type}`);
  const t = segmentIds.dims[0];
  const square = [t, t];
  const queryPos = f.iota(TensorType.s32(square), 0);
  const keyPos = f.iota(TensorType.s32(square), 1);
  const querySeg = f.broadcastInDim(segmentIds, square, [0]);
  const keySeg = f.broadcastInDim(segmentIds, square, [1]);
  const causal = f.le(keyPos, queryPos);
  const bothReal = f.and(f.ne(keySeg, -1), f.ne(querySeg, -1));
  const sharedOrOwn = f.or(f.eq(keySeg, 0), f.eq(keySeg, querySeg));
  return f.and(causal, f.and(bothReal, sharedOrOwn));
}

/**
 * Dense layout: q [T, Hq, D], k and v [T, Hkv, D], segmentIds s32 [T]
 * -> [T, Hq, D].
 */
export function maskedAttentionDense(f: FunctionBuilder, q: HloValue, k: HloValue, v: HloValue, segmentIds: HloValue, opts?: AttentionOptions): HloValue {
  const op = 'maskedAttentionDense';
  if (q.rank !== 3 || k.rank !== 3) throw new HloBuildError(`${op}: q and k must be [T, H, D], got ${formatDims(q.dims)} and ${formatDims(k.dims)}`);
  const { hq, hkv, group, d } = headLayout(op, q, k, v);
  const t = q.dims[0];
  expectDims(op, 'k', k, [t, hkv, d]);
  expectDims(op, 'segmentIds', segmentIds, [t], 's32');

  const qGrouped = f.reshape(f.multiply(q, resolveScale(opts, d)), [t, hkv, group, d]);
  // [Hkv, T, G, Tk]
  const scores = f.dotGeneral(qGrouped, k, { lhsBatch: [1], rhsBatch: [1], lhsContract: [3], rhsContract: [2] });
  const visible = f.broadcastInDim(denseSegmentMask(f, segmentIds), scores.dims, [1, 3]);
  const out = attendJointly(f, [
    {
      scores,
      visible,
      // [Hkv, T, G, Tk] x [Tk, Hkv, D] -> [Hkv, T, G, D]
      weightedValues: (w) => f.dotGeneral(w, v, { lhsBatch: [0], rhsBatch: [1], lhsContract: [3], rhsContract: [0] }),
    },
  ]);
  return f.reshape(f.transpose(out, [1, 0, 2, 3]), [t, hq, d]);
}

/**
 * Causal attention within a prefix (the query): q [P, Hq, D], k and v
 * [P, Hkv, D], validLength s32 scalar (tokens >= validLength are padding and
 * get output 0) -> [P, Hq, D].
 */
export function causalPrefixAttention(f: FunctionBuilder, q: HloValue, k: HloValue, v: HloValue, validLength: HloValue, opts?: AttentionOptions): HloValue {
  const op = 'causalPrefixAttention';
  if (q.rank !== 3 || k.rank !== 3) throw new HloBuildError(`${op}: q and k must be [P, H, D], got ${formatDims(q.dims)} and ${formatDims(k.dims)}`);
  const { hq, hkv, group, d } = headLayout(op, q, k, v);
  const p = q.dims[0];
  expectDims(op, 'k', k, [p, hkv, d]);
  expectDims(op, 'validLength', validLength, [], 's32');

  // Flat layout: one GEMM per kv head, [Hkv, P*G, D] x [Hkv, D, Pk], with an
  // additive causal bias [P*G, Pk] fused into the softmax passes. Row r sees
  // key 0, so its max is finite; rows >= validLength see only keys < r but
  // are zeroed at the end (so padding keys never reach a real row).
  const qFlat = f.reshape(f.transpose(f.reshape(f.multiply(q, resolveScale(opts, d)), [p, hkv, group, d]), [1, 0, 2, 3]), [hkv, p * group, d]);
  const kT = f.transpose(k, [1, 2, 0]); // [Hkv, D, Pk]
  const vT = f.transpose(v, [1, 0, 2]); // [Hkv, Pk, D]
  // Built [P, Pk] and broadcast over the group, so XLA never folds a [P*G, Pk] constant into the executable.
  const causal = f.le(f.iota(TensorType.s32([p, p]), 1), f.iota(TensorType.s32([p, p]), 0));
  const bias = f.select(causal, f.full(TensorType.f32([p, p]), 0), f.full(TensorType.f32([p, p]), MASKED_SCORE));
  const causalBias = f.reshape(f.broadcastInDim(bias, [p, group, p], [0, 2]), [p * group, p]);
  const scores = f.add(
    f.dotGeneral(qFlat, kT, { lhsBatch: [0], rhsBatch: [0], lhsContract: [2], rhsContract: [1] }),
    f.broadcastInDim(causalBias, [hkv, p * group, p], [1, 2]),
  ); // [Hkv, P*G, Pk]
  const max = f.reduceMax(scores, [2]);
  const weights = f.exponential(f.subtract(scores, f.expandReduced(max, scores.dims, [2])));
  const denominator = f.reduceSum(weights, [2]);
  const numerator = f.dotGeneral(weights, vT, { lhsBatch: [0], rhsBatch: [0], lhsContract: [2], rhsContract: [1] }); // [Hkv, P*G, D]
  const out = f.divide(numerator, f.expandReduced(denominator, numerator.dims, [2]));
  const attended = f.reshape(f.transpose(f.reshape(out, [hkv, p, group, d]), [1, 0, 2, 3]), [p, hq, d]);
  const real = f.lt(f.iota(TensorType.s32([p]), 0), f.broadcastScalar(validLength, [p]));
  return f.select(f.broadcastInDim(real, [p, hq, d], [0]), attended, 0);
}

export interface ItemsOverPrefixInputs {
  /** Item queries [N, L, Hq, D]. */
  itemQ: HloValue;
  /** Item keys and values [N, L, Hkv, D]. */
  itemK: HloValue;
  itemV: HloValue;
  /** Item lengths s32 [N]; tokens j >= length are padding (output 0). */
  itemLengths: HloValue;
  /** Shared prefix keys and values [P, Hkv, D] (the query's, or a cache). */
  prefixK: HloValue;
  prefixV: HloValue;
  /** Number of valid prefix keys, s32 scalar. */
  prefixLength: HloValue;
}

/** Checks the inputs of an items-over-prefix attention and returns its sizes. */
export function itemsOverPrefixLayout(op: string, x: ItemsOverPrefixInputs): Heads & { n: number; l: number; p: number } {
  if (x.itemQ.rank !== 4 || x.itemK.rank !== 4) {
    throw new HloBuildError(`${op}: item q and k must be [N, L, H, D], got ${formatDims(x.itemQ.dims)} and ${formatDims(x.itemK.dims)}`);
  }
  const heads = headLayout(op, x.itemQ, x.itemK, x.itemV);
  const { hkv, d } = heads;
  const [n, l] = x.itemQ.dims;
  expectDims(op, 'itemK', x.itemK, [n, l, hkv, d]);
  if (x.prefixK.rank !== 3) throw new HloBuildError(`${op}: prefix k must be [P, Hkv, D], got ${formatDims(x.prefixK.dims)}`);
  const p = x.prefixK.dims[0];
  expectDims(op, 'prefixK', x.prefixK, [p, hkv, d]);
  expectDims(op, 'prefixV', x.prefixV, [p, hkv, d]);
  expectDims(op, 'itemLengths', x.itemLengths, [n], 's32');
  expectDims(op, 'prefixLength', x.prefixLength, [], 's32');
  return { ...heads, n, l, p };
}

/**
 * Item tokens against [valid prefix keys ; their own earlier keys]:
 * -> [N, L, Hq, D]. Batched over items, never across them.
 */
export function itemsOverPrefixAttention(f: FunctionBuilder, x: ItemsOverPrefixInputs, opts?: AttentionOptions): HloValue {
  const { hq, hkv, group, d, n, l, p } = itemsOverPrefixLayout('itemsOverPrefixAttention', x);

  const qGrouped = f.reshape(f.multiply(x.itemQ, resolveScale(opts, d)), [n, l, hkv, group, d]);

  // Prefix key p is visible iff p < prefixLength. That mask rides in the QK
  // product as one more contraction column, [q * scale, 1] . [k, bias] with
  // bias 0 or -1e30, so the [Hq, N, L, P] scores come out of the GEMM already
  // masked: a select there would make XLA CPU write a masked copy of the
  // largest tensor of the program before reducing it. A real row always sees
  // its own first key, so its max is finite and exp(-1e30 - max) is exactly 0.
  const prefixKeyValid = f.lt(f.iota(TensorType.s32([p]), 0), f.broadcastScalar(x.prefixLength, [p]));
  const bias = f.select(prefixKeyValid, f.full(TensorType.f32([p]), 0), f.full(TensorType.f32([p]), MASKED_SCORE));
  const qWithOne = f.concatenate([qGrouped, f.full(TensorType.f32([n, l, hkv, group, 1]), 1)], 4);
  const kWithBias = f.concatenate([x.prefixK, f.broadcastInDim(bias, [p, hkv, 1], [0])], 2);
  // Scores against the prefix: [Hkv, N, L, G, P].
  const prefixScores = f.dotGeneral(qWithOne, kWithBias, { lhsBatch: [2], rhsBatch: [1], lhsContract: [4], rhsContract: [2] });
  // Scores against the item's own keys, batched over (kv head, item): [Hkv, N, L, G, Lk].
  const ownScores = f.dotGeneral(qGrouped, x.itemK, { lhsBatch: [2, 0], rhsBatch: [2, 0], lhsContract: [4], rhsContract: [3] });
  // Own key j' is visible iff j' <= j.
  const causal = f.le(f.iota(TensorType.s32([l, l]), 1), f.iota(TensorType.s32([l, l]), 0));

  const out = attendJointly(f, [
    {
      scores: prefixScores,
      // [Hkv, N, L, G, P] x [P, Hkv, D] -> [Hkv, N, L, G, D]
      weightedValues: (w) => f.dotGeneral(w, x.prefixV, { lhsBatch: [0], rhsBatch: [1], lhsContract: [4], rhsContract: [0] }),
    },
    {
      scores: ownScores,
      visible: f.broadcastInDim(causal, ownScores.dims, [2, 4]),
      // [Hkv, N, L, G, Lk] x [N, Lk, Hkv, D] -> [Hkv, N, L, G, D]
      weightedValues: (w) => f.dotGeneral(w, x.itemV, { lhsBatch: [0, 1], rhsBatch: [2, 0], lhsContract: [4], rhsContract: [1] }),
    },
  ]);
  // Padding tokens (j >= len[n]) computed finite garbage; they output 0.
  const realRow = f.lt(f.iota(TensorType.s32([n, l]), 1), f.broadcastInDim(x.itemLengths, [n, l], [0]));
  const tokensFirst = f.transpose(out, [1, 2, 0, 3, 4]); // [N, L, Hkv, G, D]
  const zeroed = f.select(f.broadcastInDim(realRow, tokensFirst.dims, [0, 1]), tokensFirst, 0);
  return f.reshape(zeroed, [n, l, hq, d]);
}

export interface FactoredAttentionInputs {
  /** Query part q [P, Hq, D], k and v [P, Hkv, D]. */
  queryQ: HloValue;
  queryK: HloValue;
  queryV: HloValue;
  /** Valid query tokens, s32 scalar (<= P). */
  queryLength: HloValue;
  /** Items q [N, L, Hq, D], k and v [N, L, Hkv, D]. */
  itemQ: HloValue;
  itemK: HloValue;
  itemV: HloValue;
  /** s32 [N]. */
  itemLengths: HloValue;
}

/**
 * Factored layout: the query attends causally to itself; each item token to
 * the valid query keys and causally to its own keys.
 * -> { query [P, Hq, D], items [N, L, Hq, D] }.
 */
export function maskedAttentionFactored(f: FunctionBuilder, x: FactoredAttentionInputs, opts?: AttentionOptions): { query: HloValue; items: HloValue } {
  const query = causalPrefixAttention(f, x.queryQ, x.queryK, x.queryV, x.queryLength, opts);
  const items = itemsOverPrefixAttention(
    f,
    { itemQ: x.itemQ, itemK: x.itemK, itemV: x.itemV, itemLengths: x.itemLengths, prefixK: x.queryK, prefixV: x.queryV, prefixLength: x.queryLength },
    opts,
  );
  return { query, items };
}
