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
 * (or MASKED_SCORE, score-shaping.ts, where the mask is folded into the QK product); a row with no
 * visible key (padding) gets output 0, never NaN. Masked keys get weight
 * exactly 0, so an item's values cannot change another item's outputs by a
 * single bit. Padding slots may hold any *finite* values (0 * inf is NaN).
 */

import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { HloBuildError, TensorType, formatDims } from '../builder/types';
import { AttentionOptions, expectDims, headLayout, resolveScale } from './layout';
import { attendJointly } from './joint-softmax';
import { causalPrefixAttention } from './causal-square';
import { itemsOverPrefixAttention } from './prefix-joint';

/**
 * The dense visibility mask [T, T] (query index, key index) from segment ids
 * [T]: k <= q, s[k] != -1, s[q] != -1, and (s[k] == 0 or s[k] == s[q]).
 * Padding query rows see nothing (their output is 0).
 */
export function denseSegmentMask(f: FunctionBuilder, segmentIds: HloValue): HloValue {
  if (segmentIds.rank !== 1 || segmentIds.elementType !== 's32')
    throw new HloBuildError(`denseSegmentMask: segment ids must be s32[T], got ${segmentIds.type}`);
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
export function maskedAttentionDense(
  f: FunctionBuilder,
  q: HloValue,
  k: HloValue,
  v: HloValue,
  segmentIds: HloValue,
  opts?: AttentionOptions,
): HloValue {
  const op = 'maskedAttentionDense';
  if (q.rank !== 3 || k.rank !== 3)
    throw new HloBuildError(`${op}: q and k must be [T, H, D], got ${formatDims(q.dims)} and ${formatDims(k.dims)}`);
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
export function maskedAttentionFactored(
  f: FunctionBuilder,
  x: FactoredAttentionInputs,
  opts?: AttentionOptions,
): { query: HloValue; items: HloValue } {
  const query = causalPrefixAttention(f, x.queryQ, x.queryK, x.queryV, x.queryLength, opts);
  const items = itemsOverPrefixAttention(
    f,
    {
      itemQ: x.itemQ,
      itemK: x.itemK,
      itemV: x.itemV,
      itemLengths: x.itemLengths,
      prefixK: x.queryK,
      prefixV: x.queryV,
      prefixLength: x.queryLength,
    },
    opts,
  );
  return { query, items };
}
