/**
 * The prefill's causal attention as one square (CausalAttention `square`,
 * causal.ts): all P x P scores with the upper half masked by an additive
 * MASKED_SCORE bias.
 */
import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { TensorType } from '../builder/types';
import { AttentionOptions, causalPrefixLayout, resolveScale } from './layout';
import { MASKED_SCORE, capScores, causalWindowVisible, checkShaping } from './score-shaping';

/**
 * Causal attention within a prefix (the query): q [P, Hq, D], k and v
 * [P, Hkv, D], validLength s32 scalar (tokens >= validLength are padding and
 * get output 0) -> [P, Hq, D]. Grouped: q [G, P, Hq, D], k and v
 * [G, P, Hkv, D], validLength s32[G] -> [G, P, Hq, D], each group alone.
 */
export function causalPrefixAttention(
  f: FunctionBuilder,
  q: HloValue,
  k: HloValue,
  v: HloValue,
  validLength: HloValue,
  opts?: AttentionOptions,
): HloValue {
  const { lead, axes, hq, hkv, group, d, p } = causalPrefixLayout('causalPrefixAttention', q, k, v, validLength);
  const g = lead.length;
  const batch = [...axes, g];

  // Flat layout: one GEMM per kv head, [Hkv, P*G, D] x [Hkv, D, Pk], with an
  // additive causal bias [P*G, Pk] fused into the softmax passes. Row r sees
  // key 0, so its max is finite; rows >= validLength see only keys < r but
  // are zeroed at the end (so padding keys never reach a real row).
  const qFlat = f.reshape(
    f.transpose(f.reshape(f.multiply(q, resolveScale(opts, d)), [...lead, p, hkv, group, d]), [
      ...axes,
      g + 1,
      g,
      g + 2,
      g + 3,
    ]),
    [...lead, hkv, p * group, d],
  );
  const kT = f.transpose(k, [...axes, g + 1, g + 2, g]); // [Hkv, D, Pk]
  const vT = f.transpose(v, [...axes, g + 1, g, g + 2]); // [Hkv, Pk, D]
  // Built [P, Pk] and broadcast over the group, so XLA never folds a [P*G, Pk] constant into the executable.
  const shaping = checkShaping('causalPrefixAttention', opts);
  const causal = shaping.window
    ? causalWindowVisible(f, p, p, 0, shaping.window)
    : f.le(f.iota(TensorType.s32([p, p]), 1), f.iota(TensorType.s32([p, p]), 0));
  const bias = f.select(causal, f.full(TensorType.f32([p, p]), 0), f.full(TensorType.f32([p, p]), MASKED_SCORE));
  const causalBias = f.reshape(f.broadcastInDim(bias, [p, group, p], [0, 2]), [p * group, p]);
  const scores = f.add(
    capScores(
      f,
      f.dotGeneral(qFlat, kT, { lhsBatch: batch, rhsBatch: batch, lhsContract: [g + 2], rhsContract: [g + 1] }),
      shaping.softcap,
    ),
    f.broadcastInDim(causalBias, [...lead, hkv, p * group, p], [g + 1, g + 2]),
  ); // [Hkv, P*G, Pk]
  const max = f.reduceMax(scores, [g + 2]);
  const weights = f.exponential(f.subtract(scores, f.expandReduced(max, scores.dims, [g + 2])));
  const denominator = f.reduceSum(weights, [g + 2]);
  const numerator = f.dotGeneral(weights, vT, {
    lhsBatch: batch,
    rhsBatch: batch,
    lhsContract: [g + 2],
    rhsContract: [g + 1],
  }); // [Hkv, P*G, D]
  const out = f.divide(numerator, f.expandReduced(denominator, numerator.dims, [g + 2]));
  const attended = f.reshape(
    f.transpose(f.reshape(out, [...lead, hkv, p, group, d]), [...axes, g + 1, g, g + 2, g + 3]),
    [...lead, p, hq, d],
  );
  const real = f.lt(f.iota(TensorType.s32([...lead, p]), g), f.broadcastInDim(validLength, [...lead, p], axes));
  return f.select(f.broadcastInDim(real, [...lead, p, hq, d], [...axes, g]), attended, 0);
}
