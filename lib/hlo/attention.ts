/**
 * Masked grouped-query attention for multi-item scoring (docs/design.md "The programs").
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
import { ScoreShaping, capScores, causalWindowVisible, checkShaping, maskBias, prefixKeysVisible, shapesScores } from './attention-window';

/**
 * How scores are made: the scale, and (attention-window.ts) a sliding
 * window and soft-capping. The window and cap are the seam the fused
 * kernels would take them through: today a kernel form given either runs
 * the StableHLO form instead (attention-ffi.ts, attention-causal-ffi.ts).
 */
export interface AttentionOptions extends ScoreShaping {
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
 * The leading group axes of a grouped call, read from its length operand: a
 * scalar length means one query (no group axis), s32[G] means G independent
 * queries (each with its own items) in one call. Every other dim and axis of
 * the call shifts by the number of group axes, and each batched dot gains
 * them as its first batch dims, so the ungrouped call emits exactly the ops
 * it always did.
 */
export function groupAxes(op: string, length: HloValue): { lead: number[]; axes: number[] } {
  if (length.elementType !== 's32' || length.rank > 1) throw new HloBuildError(`${op}: lengths must be s32[] or s32[G], got ${length.type}`);
  return { lead: [...length.dims], axes: length.dims.map((_, i) => i) };
}

/** Checks the inputs of a causal prefix attention (grouped or not) and returns its sizes and group axes. */
export function causalPrefixLayout(op: string, q: HloValue, k: HloValue, v: HloValue, validLength: HloValue): Heads & { lead: number[]; axes: number[]; p: number } {
  const { lead, axes } = groupAxes(op, validLength);
  const g = lead.length;
  if (q.rank !== g + 3 || k.rank !== g + 3) {
    throw new HloBuildError(`${op}: q and k must be [${g ? 'G, ' : ''}P, H, D], got ${formatDims(q.dims)} and ${formatDims(k.dims)}`);
  }
  const heads = headLayout(op, q, k, v);
  const p = q.dims[g];
  expectDims(op, 'q', q, [...lead, p, heads.hq, heads.d]);
  expectDims(op, 'k', k, [...lead, p, heads.hkv, heads.d]);
  return { ...heads, lead, axes, p };
}

/**
 * Causal attention within a prefix (the query): q [P, Hq, D], k and v
 * [P, Hkv, D], validLength s32 scalar (tokens >= validLength are padding and
 * get output 0) -> [P, Hq, D]. Grouped: q [G, P, Hq, D], k and v
 * [G, P, Hkv, D], validLength s32[G] -> [G, P, Hq, D], each group alone.
 */
export function causalPrefixAttention(f: FunctionBuilder, q: HloValue, k: HloValue, v: HloValue, validLength: HloValue, opts?: AttentionOptions): HloValue {
  const { lead, axes, hq, hkv, group, d, p } = causalPrefixLayout('causalPrefixAttention', q, k, v, validLength);
  const g = lead.length;
  const batch = [...axes, g];

  // Flat layout: one GEMM per kv head, [Hkv, P*G, D] x [Hkv, D, Pk], with an
  // additive causal bias [P*G, Pk] fused into the softmax passes. Row r sees
  // key 0, so its max is finite; rows >= validLength see only keys < r but
  // are zeroed at the end (so padding keys never reach a real row).
  const qFlat = f.reshape(f.transpose(f.reshape(f.multiply(q, resolveScale(opts, d)), [...lead, p, hkv, group, d]), [...axes, g + 1, g, g + 2, g + 3]), [...lead, hkv, p * group, d]);
  const kT = f.transpose(k, [...axes, g + 1, g + 2, g]); // [Hkv, D, Pk]
  const vT = f.transpose(v, [...axes, g + 1, g, g + 2]); // [Hkv, Pk, D]
  // Built [P, Pk] and broadcast over the group, so XLA never folds a [P*G, Pk] constant into the executable.
  const shaping = checkShaping('causalPrefixAttention', opts);
  const causal = shaping.window ? causalWindowVisible(f, p, p, 0, shaping.window) : f.le(f.iota(TensorType.s32([p, p]), 1), f.iota(TensorType.s32([p, p]), 0));
  const bias = f.select(causal, f.full(TensorType.f32([p, p]), 0), f.full(TensorType.f32([p, p]), MASKED_SCORE));
  const causalBias = f.reshape(f.broadcastInDim(bias, [p, group, p], [0, 2]), [p * group, p]);
  const scores = f.add(
    capScores(f, f.dotGeneral(qFlat, kT, { lhsBatch: batch, rhsBatch: batch, lhsContract: [g + 2], rhsContract: [g + 1] }), shaping.softcap),
    f.broadcastInDim(causalBias, [...lead, hkv, p * group, p], [g + 1, g + 2]),
  ); // [Hkv, P*G, Pk]
  const max = f.reduceMax(scores, [g + 2]);
  const weights = f.exponential(f.subtract(scores, f.expandReduced(max, scores.dims, [g + 2])));
  const denominator = f.reduceSum(weights, [g + 2]);
  const numerator = f.dotGeneral(weights, vT, { lhsBatch: batch, rhsBatch: batch, lhsContract: [g + 2], rhsContract: [g + 1] }); // [Hkv, P*G, D]
  const out = f.divide(numerator, f.expandReduced(denominator, numerator.dims, [g + 2]));
  const attended = f.reshape(f.transpose(f.reshape(out, [...lead, hkv, p, group, d]), [...axes, g + 1, g, g + 2, g + 3]), [...lead, p, hq, d]);
  const real = f.lt(f.iota(TensorType.s32([...lead, p]), g), f.broadcastInDim(validLength, [...lead, p], axes));
  return f.select(f.broadcastInDim(real, [...lead, p, hq, d], [...axes, g]), attended, 0);
}

export interface ItemsOverPrefixInputs {
  /** Item queries [N, L, Hq, D] (grouped: [G, N, L, Hq, D]). */
  itemQ: HloValue;
  /** Item keys and values [N, L, Hkv, D] (grouped: [G, N, L, Hkv, D]). */
  itemK: HloValue;
  itemV: HloValue;
  /** Item lengths s32 [N] (grouped: [G, N]); tokens j >= length are padding (output 0). */
  itemLengths: HloValue;
  /** Shared prefix keys and values [P, Hkv, D] (the query's, or a cache; grouped: [G, P, Hkv, D], one query per group). */
  prefixK: HloValue;
  prefixV: HloValue;
  /** Number of valid prefix keys, s32 scalar (grouped: s32[G]). */
  prefixLength: HloValue;
}

/** The sizes of an items-over-prefix call, and its group axes (none for one query). */
export interface ItemsOverPrefixLayout extends Heads {
  lead: number[];
  axes: number[];
  n: number;
  l: number;
  p: number;
}

/** Checks the inputs of an items-over-prefix attention (grouped or not) and returns its sizes. */
export function itemsOverPrefixLayout(op: string, x: ItemsOverPrefixInputs): ItemsOverPrefixLayout {
  const { lead, axes } = groupAxes(op, x.prefixLength);
  const g = lead.length;
  const grid = g ? 'G, N, L, H, D' : 'N, L, H, D';
  if (x.itemQ.rank !== g + 4 || x.itemK.rank !== g + 4) {
    throw new HloBuildError(`${op}: item q and k must be [${grid}], got ${formatDims(x.itemQ.dims)} and ${formatDims(x.itemK.dims)}`);
  }
  const heads = headLayout(op, x.itemQ, x.itemK, x.itemV);
  const { hq, hkv, d } = heads;
  const [n, l] = x.itemQ.dims.slice(g);
  expectDims(op, 'itemQ', x.itemQ, [...lead, n, l, hq, d]);
  expectDims(op, 'itemK', x.itemK, [...lead, n, l, hkv, d]);
  if (x.prefixK.rank !== g + 3) throw new HloBuildError(`${op}: prefix k must be [${g ? 'G, ' : ''}P, Hkv, D], got ${formatDims(x.prefixK.dims)}`);
  const p = x.prefixK.dims[g];
  expectDims(op, 'prefixK', x.prefixK, [...lead, p, hkv, d]);
  expectDims(op, 'prefixV', x.prefixV, [...lead, p, hkv, d]);
  expectDims(op, 'itemLengths', x.itemLengths, [...lead, n], 's32');
  return { ...heads, lead, axes, n, l, p };
}

/**
 * Item tokens against [valid prefix keys ; their own earlier keys]:
 * -> [N, L, Hq, D]. Batched over items, never across them. Grouped (a
 * prefixLength of s32[G]): -> [G, N, L, Hq, D], each item against its own
 * group's prefix only.
 */
export function itemsOverPrefixAttention(f: FunctionBuilder, x: ItemsOverPrefixInputs, opts?: AttentionOptions): HloValue {
  const { lead, axes, hkv, group, d, n, l, p } = itemsOverPrefixLayout('itemsOverPrefixAttention', x);
  const g = lead.length;
  const shaping = checkShaping('itemsOverPrefixAttention', opts);

  const qGrouped = f.reshape(f.multiply(x.itemQ, resolveScale(opts, d)), [...lead, n, l, hkv, group, d]);

  // Prefix key p is visible iff p < prefixLength. That mask rides in the QK
  // product as one more contraction column, [q * scale, 1] . [k, bias] with
  // bias 0 or -1e30, so the [Hq, N, L, P] scores come out of the GEMM already
  // masked: a select there would make XLA CPU write a masked copy of the
  // largest tensor of the program before reducing it. A real row always sees
  // its own key, so its max is finite and exp(-1e30 - max) is exactly 0.
  // A soft cap must see the raw scores: then the mask is a bias added after it
  // (attention-window.ts), as is a window's, which depends on the item row.
  const fold = shaping.softcap === undefined;
  const prefixKeyValid = f.lt(f.iota(TensorType.s32([...lead, p]), g), f.broadcastInDim(x.prefixLength, [...lead, p], axes));
  const bias = fold ? f.select(prefixKeyValid, f.full(TensorType.f32([...lead, p]), 0), f.full(TensorType.f32([...lead, p]), MASKED_SCORE)) : f.full(TensorType.f32([...lead, p]), 0);
  const qWithOne = f.concatenate([qGrouped, f.full(TensorType.f32([...lead, n, l, hkv, group, 1]), 1)], g + 4);
  const kWithBias = f.concatenate([x.prefixK, f.broadcastInDim(bias, [...lead, p, hkv, 1], [...axes, g])], g + 2);
  // Scores against the prefix: [Hkv, N, L, G, P].
  let prefixScores = capScores(f, f.dotGeneral(qWithOne, kWithBias, { lhsBatch: [...axes, g + 2], rhsBatch: [...axes, g + 1], lhsContract: [g + 4], rhsContract: [g + 2] }), shaping.softcap);
  const prefixVisible = prefixKeysVisible(f, lead, l, p, x.prefixLength, shaping.window, !fold);
  if (prefixVisible) prefixScores = f.add(prefixScores, f.broadcastInDim(maskBias(f, prefixVisible), prefixScores.dims, [...axes, g + 2, g + 4]));
  // Scores against the item's own keys, batched over (kv head, item): [Hkv, N, L, G, Lk].
  const ownScores = capScores(f, f.dotGeneral(qGrouped, x.itemK, { lhsBatch: [...axes, g + 2, g], rhsBatch: [...axes, g + 2, g], lhsContract: [g + 4], rhsContract: [g + 3] }), shaping.softcap);
  // Own key j' is visible iff j' <= j (and j - j' < window).
  const causal = shapesScores(shaping) ? causalWindowVisible(f, l, l, 0, shaping.window) : f.le(f.iota(TensorType.s32([l, l]), 1), f.iota(TensorType.s32([l, l]), 0));

  const out = attendJointly(f, [
    {
      scores: prefixScores,
      // [Hkv, N, L, G, P] x [P, Hkv, D] -> [Hkv, N, L, G, D]
      weightedValues: (w) => f.dotGeneral(w, x.prefixV, { lhsBatch: [...axes, g], rhsBatch: [...axes, g + 1], lhsContract: [g + 4], rhsContract: [g] }),
    },
    {
      scores: ownScores,
      visible: f.broadcastInDim(causal, ownScores.dims, [g + 2, g + 4]),
      // [Hkv, N, L, G, Lk] x [N, Lk, Hkv, D] -> [Hkv, N, L, G, D]
      weightedValues: (w) => f.dotGeneral(w, x.itemV, { lhsBatch: [...axes, g, g + 1], rhsBatch: [...axes, g + 2, g], lhsContract: [g + 4], rhsContract: [g + 1] }),
    },
  ]);
  return itemOutputs(f, out, x.itemLengths, lead.length);
}

/**
 * An items-over-prefix result [..., Hkv, N, L, G, D] (any form) as
 * [..., N, L, Hq, D], tokens first, with padding tokens (j >= len[n]), which
 * computed finite garbage, set to 0. `g` leading group axes.
 */
export function itemOutputs(f: FunctionBuilder, out: HloValue, itemLengths: HloValue, g: number): HloValue {
  const axes = Array.from({ length: g }, (_, i) => i);
  const lead = out.dims.slice(0, g);
  const [hkv, n, l, group, d] = out.dims.slice(g);
  const realRow = f.lt(f.iota(TensorType.s32([...lead, n, l]), g + 1), f.broadcastInDim(itemLengths, [...lead, n, l], [...axes, g]));
  const tokensFirst = f.transpose(out, [...axes, g + 1, g + 2, g, g + 3, g + 4]); // [..., N, L, Hkv, G, D]
  const zeroed = f.select(f.broadcastInDim(realRow, tokensFirst.dims, [...axes, g, g + 1]), tokensFirst, 0);
  return f.reshape(zeroed, [...lead, n, l, hkv * group, d]);
}

/** [..., D] -> [..., D + 1] with a last column of ones: a value GEMM against it also sums its weights. */
export function withOnesColumn(f: FunctionBuilder, v: HloValue): HloValue {
  return f.concatenate([v, f.full(TensorType.f32([...v.dims.slice(0, -1), 1]), 1)], v.rank - 1);
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
