/**
 * Causal attention within the prefix (the prefill's), with the query rows in
 * chunks: chunk c of rows [r0, r1) scores only keys [0, r1), the keys it can
 * see, instead of all P. The joint form (causalPrefixAttention) computes the
 * whole [P, P] square and masks its upper half; with n chunks the score,
 * softmax and value work is (n + 1) / 2n of that (62.5% for 4 chunks).
 * Every row's softmax is still one pass over all its visible keys, with the
 * causal mask as an additive MASKED_SCORE bias, so a masked key has weight exactly 0
 * and the numbers equal the joint form's within f32 rounding.
 */

import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { HloBuildError, TensorType } from '../builder/types';
import { AttentionOptions, causalPrefixLayout, resolveScale } from './layout';
import { MASKED_SCORE, capScores, causalWindowVisible, checkShaping } from './score-shaping';

/**
 * Query rows in `queryChunks` chunks, each against the keys it can see (a `CausalAttention` kind, causal.ts; tag
 * `qc<chunks>`).
 */
export interface CausalChunks {
  readonly kind: 'chunked';
  readonly queryChunks: number;
}

/** Checks a chunked form from a caller; returns it. */
export function checkCausalChunks(a: CausalChunks): CausalChunks {
  if (!Number.isSafeInteger(a.queryChunks) || a.queryChunks < 1)
    throw new HloBuildError(`causal attention queryChunks must be a positive integer, got ${String(a.queryChunks)}`);
  return a;
}

/**
 * causalPrefixAttention with the query rows in chunks: q [P, Hq, D], k and v
 * [P, Hkv, D], validLength s32 scalar -> [P, Hq, D] (rows >= validLength: 0);
 * grouped (q [G, P, Hq, D], validLength s32[G]) -> [G, P, Hq, D], each group
 * alone. More chunks than rows gives one row per chunk.
 */
export function causalPrefixAttentionChunked(
  f: FunctionBuilder,
  q: HloValue,
  k: HloValue,
  v: HloValue,
  validLength: HloValue,
  queryChunks: number,
  opts?: AttentionOptions,
): HloValue {
  const { lead, axes, hq, hkv, group, d, p } = causalPrefixLayout('causalPrefixAttentionChunked', q, k, v, validLength);
  checkCausalChunks({ kind: 'chunked', queryChunks });
  const shaping = checkShaping('causalPrefixAttentionChunked', opts);
  const g = lead.length;
  const zeros = (n: number): number[] => Array.from({ length: n }, () => 0);
  if (p === 0) return f.full(TensorType.f32([...lead, 0, hq, d]), 0);
  const batch = [...axes, g];
  const qScaled = f.multiply(q, resolveScale(opts, d));
  const kT = f.transpose(k, [...axes, g + 1, g + 2, g]); // [..., Hkv, D, Pk]
  const vT = f.transpose(v, [...axes, g + 1, g, g + 2]); // [..., Hkv, Pk, D]
  const chunks = Math.min(queryChunks, p);
  const bounds = Array.from({ length: chunks + 1 }, (_, c) => Math.round((c * p) / chunks));
  const outs: HloValue[] = [];
  for (let c = 0; c < chunks; c++) {
    const [r0, r1] = [bounds[c], bounds[c + 1]];
    const rows = r1 - r0;
    if (rows === 0) continue;
    // Rows [r0, r1) against keys [0, r1), one GEMM per kv head as in the square form.
    const qRows = f.slice(qScaled, [...zeros(g), r0, 0, 0], [...lead, r1, hq, d]);
    const qc = f.reshape(
      f.transpose(f.reshape(qRows, [...lead, rows, hkv, group, d]), [...axes, g + 1, g, g + 2, g + 3]),
      [...lead, hkv, rows * group, d],
    );
    const kc = f.slice(kT, zeros(g + 3), [...lead, hkv, d, r1]);
    const vc = f.slice(vT, zeros(g + 3), [...lead, hkv, r1, d]);
    // Row r0 + i sees key j iff j <= r0 + i (and r0 + i - j < window); built [rows, keys] and broadcast over the group.
    const causal = shaping.window
      ? causalWindowVisible(f, rows, r1, r0, shaping.window)
      : f.le(f.iota(TensorType.s32([rows, r1]), 1), f.add(f.iota(TensorType.s32([rows, r1]), 0), r0));
    const bias = f.select(
      causal,
      f.full(TensorType.f32([rows, r1]), 0),
      f.full(TensorType.f32([rows, r1]), MASKED_SCORE),
    );
    const causalBias = f.reshape(f.broadcastInDim(bias, [rows, group, r1], [0, 2]), [rows * group, r1]);
    const scores = f.add(
      capScores(
        f,
        f.dotGeneral(qc, kc, { lhsBatch: batch, rhsBatch: batch, lhsContract: [g + 2], rhsContract: [g + 1] }),
        shaping.softcap,
      ),
      f.broadcastInDim(causalBias, [...lead, hkv, rows * group, r1], [g + 1, g + 2]),
    ); // [..., Hkv, rows*G, keys]
    const max = f.reduceMax(scores, [g + 2]);
    const weights = f.exponential(f.subtract(scores, f.expandReduced(max, scores.dims, [g + 2])));
    const denominator = f.reduceSum(weights, [g + 2]);
    const numerator = f.dotGeneral(weights, vc, {
      lhsBatch: batch,
      rhsBatch: batch,
      lhsContract: [g + 2],
      rhsContract: [g + 1],
    }); // [..., Hkv, rows*G, D]
    const out = f.divide(numerator, f.expandReduced(denominator, numerator.dims, [g + 2]));
    outs.push(
      f.reshape(f.transpose(f.reshape(out, [...lead, hkv, rows, group, d]), [...axes, g + 1, g, g + 2, g + 3]), [
        ...lead,
        rows,
        hq,
        d,
      ]),
    );
  }
  const attended = outs.length === 1 ? outs[0] : f.concatenate(outs, g);
  const real = f.lt(f.iota(TensorType.s32([...lead, p]), g), f.broadcastInDim(validLength, [...lead, p], axes));
  return f.select(f.broadcastInDim(real, [...lead, p, hq, d], [...axes, g]), attended, 0);
}
