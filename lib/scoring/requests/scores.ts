/**
 * Label logprobs -> scores (docs/design.md "Scoring semantics"). The device returns
 * log_softmax over the whole vocabulary at each read position, gathered at
 * the labels: [K, Lb] with K and Lb possibly padded; for a request that takes
 * a softmax over its labels, the label logits alone where its pass computes
 * no log-normalizer (execution/run-plan.ts, normalizeOf), which differ from
 * the logprobs by one constant a row and so give the same softmax. Math is
 * done in f64.
 *
 * - applySoftmax=false: exp(logprob), the model's probability of each label
 *   over the whole vocabulary (rows need not sum to 1). A logprob of
 *   -Infinity, or one so negative that exp underflows, scores exactly 0.
 * - applySoftmax=true: softmax over the row's label logprobs, computed as
 *   exp(x - max) / sum so that no finite input overflows or underflows as a
 *   whole; -Infinity entries score 0 (their limit). When every label of a row
 *   is -Infinity the ratios are lost (0/0 has no limit: it depends on how the
 *   values went to -Infinity), so the row is all zeros rather than a guessed
 *   uniform distribution; this matches the reference implementation's
 *   "total > 0 else 0" and is the only case where a row does not sum to 1.
 * - NaN or +Infinity is never a valid log-probability: it means the program
 *   or the model is broken, so it throws (a 500) instead of emitting junk.
 */

export interface ScoreConversion {
  /** Real items (rows read); <= the rows in the data. */
  itemCount: number;
  /** Real labels (columns read). */
  labelCount: number;
  /** Distance between rows in the flat data (the padded label count Lb); default labelCount. */
  rowStride?: number;
  applySoftmax: boolean;
}

/** Converts a flat [K, Lb] label-logprob array into one score row per real item. */
export function scoresFromLabelLogprobs(labelLogprobs: ArrayLike<number>, conversion: ScoreConversion): number[][] {
  const { itemCount, labelCount, applySoftmax } = conversion;
  const stride = conversion.rowStride ?? labelCount;
  if (!Number.isInteger(itemCount) || itemCount < 0)
    throw new RangeError(`itemCount must be a non-negative integer, got ${itemCount}`);
  if (!Number.isInteger(labelCount) || labelCount < 1)
    throw new RangeError(`labelCount must be a positive integer, got ${labelCount}`);
  if (!Number.isInteger(stride) || stride < labelCount)
    throw new RangeError(`rowStride ${stride} is smaller than labelCount ${labelCount}`);
  const needed = itemCount === 0 ? 0 : (itemCount - 1) * stride + labelCount;
  if (labelLogprobs.length < needed) {
    throw new RangeError(
      `label logprobs hold ${labelLogprobs.length} values, ` +
        `need ${needed} for ${itemCount} items x ${labelCount} labels (row stride ${stride})`,
    );
  }
  const rows: number[][] = [];
  const row = new Array<number>(labelCount);
  for (let i = 0; i < itemCount; i++) {
    for (let l = 0; l < labelCount; l++) row[l] = checkedLogprob(labelLogprobs[i * stride + l], i, l);
    rows.push(applySoftmax ? softmaxScores(row) : expScores(row));
  }
  return rows;
}

/** exp of each label logprob: probabilities over the whole vocabulary. */
export function expScores(logprobs: readonly number[]): number[] {
  // Math.exp(-Infinity) is 0 and exp of a very negative value underflows to 0: never NaN.
  return logprobs.map((x) => Math.exp(x));
}

/** Softmax over the labels, stable by max subtraction; all -Infinity -> all 0 (see the file comment). */
export function softmaxScores(logprobs: readonly number[]): number[] {
  let max = -Infinity;
  for (const x of logprobs) if (x > max) max = x;
  if (max === -Infinity) return logprobs.map(() => 0);
  const exps = logprobs.map((x) => Math.exp(x - max)); // the max entry gives exp(0) = 1, so sum >= 1
  let total = 0;
  for (const e of exps) total += e;
  return exps.map((e) => e / total);
}

function checkedLogprob(value: number, item: number, label: number): number {
  if (Number.isNaN(value) || value === Infinity) {
    throw new Error(`label logprob of item ${item}, label ${label} is ${value}: the model produced an invalid value`);
  }
  return value;
}
