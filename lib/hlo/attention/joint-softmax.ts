/**
 * The joint softmax over several groups of keys (docs/design.md "The
 * programs"): one shared max and denominator, nothing concatenated. Masked
 * scores are -inf (or MASKED_SCORE where the mask is folded into the QK
 * product); a row with no visible key (padding) gets output 0, never NaN.
 */
import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';

/**
 * One group of keys for a query block: scores [..., K], their visibility (same
 * shape; omitted when masked keys already score MASKED_SCORE), and how to weight the
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
export function attendJointly(f: FunctionBuilder, groups: readonly KeyGroup[]): HloValue {
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
