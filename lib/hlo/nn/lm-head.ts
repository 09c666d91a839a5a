/**
 * The LM-head gather: label log-probabilities at a few positions without ever
 * forming logits for every token. Only [K, V] logits exist on the device and
 * only [K, Lb] label log-probabilities leave it.
 *
 * A label id of LOG_NORMALIZER_LABEL reads minus the row's logsumexp (the
 * log-probability a token of logit 0 would have), so that a label's raw
 * logit is its log-probability minus that column's: every program answers
 * a caller that needs logits (a reranker whose score is the "Yes" logit)
 * with the same outputs, one more label.
 */

import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { logsumexp, rmsNorm } from './functions';
import { HloBuildError, TensorType, formatDims } from '../builder/types';

/**
 * The label id whose "log-probability" is -logsumexp(logits) of its row: logit(l) = logprob(l) -
 * logprob(LOG_NORMALIZER_LABEL).
 */
export const LOG_NORMALIZER_LABEL = -1;

export interface LabelLogprobInputs {
  /** Hidden states at the scoring positions [K, Dm] (before the final norm). */
  rows: HloValue;
  /** Final RMSNorm weight [Dm]. */
  finalNormWeight: HloValue;
  /** LM head [V, Dm] (the token embedding when tied): as the dots read it, or as stored where `readRows` is given. */
  lmHead: HloValue;
  /**
   * Where given, what the dots read of rows of the stored table ([R, Dm] -> [R, Dm]: a bf16 table widened to f32):
   * applied to the label rows alone, and to the whole table inside the normalizer's loop only, so a pass that skips
   * the full product never widens the table either.
   */
  readRows?: (b: FunctionBuilder, rows: HloValue) => HloValue;
  /**
   * Label token ids, each in [0, V) (clamped; LOG_NORMALIZER_LABEL reads
   * -logsumexp): s32 [Lb], the same labels for every row, or s32 [K, Lb],
   * each row its own (rows of different requests in one pass).
   */
  labels: HloValue;
  /**
   * Where given, s32 [] (0 or 1): whether to compute the log-normalizer over the vocabulary. 1 gives
   * the log-probabilities, as without it; 0 gives each label's logit, the row's log-normalizer taken
   * as 0, for rows whose caller takes a softmax over its labels (which a constant per row does not
   * change): the [K, V] product over the whole table, the bulk of the head's cost on a large
   * vocabulary, then never runs (it sits in a loop of `normalize` trips). Either way the label logits
   * come from the label rows of the table alone.
   */
  normalize?: HloValue;
}

export interface LmHeadOptions {
  /** RMSNorm epsilon (the model's rms_norm_eps). */
  eps: number;
  /** Logits soft-capped to cap * tanh(logit / cap) before the softmax (Gemma 2's final_logit_softcapping). */
  softcap?: number;
}

/** log_softmax(rmsNorm(rows) @ lmHead^T)[:, labels] -> [K, Lb] (-logsumexp where a label is LOG_NORMALIZER_LABEL). */
export function lmHeadLabelLogprobs(f: FunctionBuilder, x: LabelLogprobInputs, opts: LmHeadOptions): HloValue {
  const op = 'lmHeadLabelLogprobs';
  const { rows, finalNormWeight, lmHead, labels } = x;
  if (rows.rank !== 2 || lmHead.rank !== 2 || rows.dims[1] !== lmHead.dims[1]) {
    throw new HloBuildError(
      `${op}: rows [K, Dm] and lmHead [V, Dm] must share Dm, ` +
        `got ${formatDims(rows.dims)} and ${formatDims(lmHead.dims)}`,
    );
  }
  const k = rows.dims[0];
  const perRow = labels.rank === 2;
  if (labels.elementType !== 's32' || !(labels.rank === 1 || (perRow && labels.dims[0] === k))) {
    throw new HloBuildError(`${op}: labels must be s32[Lb] or s32[${k}, Lb], got ${labels.type}`);
  }
  const vocab = lmHead.dims[0];
  if (vocab === 0) throw new HloBuildError(`${op}: the vocabulary is empty`);

  const cap = opts.softcap;
  if (cap !== undefined && !(Number.isFinite(cap) && cap > 0))
    throw new HloBuildError(`${op}: softcap must be a positive number, got ${cap}`);
  const { normalize } = x;
  if (normalize && (normalize.elementType !== 's32' || normalize.rank !== 0))
    throw new HloBuildError(`${op}: normalize must be s32[], got ${normalize.type}`);
  const capped = (b: FunctionBuilder, raw: HloValue): HloValue =>
    cap === undefined ? raw : b.multiply(b.tanh(b.divide(raw, cap)), cap);
  const normed = rmsNorm(f, rows, finalNormWeight, opts.eps);
  const ids = f.clamp(0, labels, vocab - 1);
  const { readRows } = x;
  const read = readRows ?? ((_b: FunctionBuilder, table: HloValue): HloValue => table);
  // The row's logsumexp over the whole vocabulary: one product, or over a table read through readRows, chunk by chunk.
  const normalizerOf = (b: FunctionBuilder, n: HloValue, table: HloValue): HloValue =>
    readRows && vocab > LM_HEAD_CHUNK_ROWS
      ? chunkedLogsumexp(b, n, table, readRows, capped)
      : logsumexp(b, capped(b, labelRowLogits(b, n, read(b, table))), 1);
  let gathered: HloValue; // [K, Lb]
  let logNormalizer: HloValue; // [K]
  if (normalize) {
    gathered = capped(f, labelLogitsOnly(f, normed, lmHead, ids, read));
    // The loop runs once or never: the full product only where the caller needs log-probabilities. Its rows
    // are scaled by i + 1 (1 on its one trip: exact), so the product depends on the loop and XLA cannot hoist
    // it out as loop-invariant code (which would run it every time).
    const zero = f.broadcastInDim(f.scalar(0), [k], []);
    [logNormalizer] = f.forLoop(
      { count: normalize, carried: [zero], invariants: [normed, lmHead] },
      (b, i, _carried, [n, table]) => {
        const trip = b.broadcastInDim(b.convert(b.add(i, 1), 'f32'), n.dims, []);
        return [normalizerOf(b, b.multiply(n, trip), table)];
      },
    );
  } else if (readRows) {
    gathered = capped(f, labelLogitsOnly(f, normed, lmHead, ids, read));
    logNormalizer = normalizerOf(f, normed, lmHead);
  } else {
    const logits = capped(f, labelRowLogits(f, normed, read(f, lmHead))); // [K, V]
    logNormalizer = logsumexp(f, logits, 1);
    gathered = perRow ? rowLabelLogits(f, logits, ids) : f.take(logits, ids, 1);
  }
  // The log-normalizer's column reads a logit of 0 (ids < 0 are no token: only it is negative).
  const normalizerColumn = f.eq(labels, LOG_NORMALIZER_LABEL);
  const labelLogits = f.select(
    perRow ? normalizerColumn : f.broadcastInDim(normalizerColumn, gathered.dims, [1]),
    f.full(gathered, 0),
    gathered,
  );
  return f.subtract(labelLogits, f.expandReduced(logNormalizer, labelLogits.dims, [1]));
}

/**
 * At most this many rows read an f32 LM head as it is, even where the function computes its dots in
 * bf16: rounding the whole [V, Dm] table to bf16 first (a pass over it and a copy) costs more than
 * the few rows' f32 products: faster on SGLang's PR shape in bf16 (10 item rows), slower with 128 rows
 * (docs/performance.md, 'Small requests', has the measurement).
 */
const LM_HEAD_F32_ROWS = 16;

/**
 * Rows of the vocabulary a table read through `readRows` is widened in at a time, for its logsumexp: 32 MiB of f32 at
 * Dm 1024. The whole table widened at once is a temporary the size of an f32 table (618 MiB for Qwen3's), which XLA
 * reserves on every call whether or not the product runs: fresh pages each call, and their faults.
 */
const LM_HEAD_CHUNK_ROWS = 8192;

/**
 * logsumexp over the vocabulary of rows [K, Dm] against a stored table [V, Dm] (V > LM_HEAD_CHUNK_ROWS), its chunks of
 * rows read through `readRows` one at a time: a running max and a sum of exponentials rescaled to it (the online
 * softmax's). The last chunk starts at V - C and masks the rows the one before it counted.
 */
function chunkedLogsumexp(
  f: FunctionBuilder,
  rows: HloValue,
  table: HloValue,
  readRows: (b: FunctionBuilder, rows: HloValue) => HloValue,
  capped: (b: FunctionBuilder, raw: HloValue) => HloValue,
): HloValue {
  const [vocab, dm] = table.dims;
  const k = rows.dims[0];
  const c = LM_HEAD_CHUNK_ROWS;
  const perRow = (b: FunctionBuilder, value: number): HloValue => b.broadcastInDim(b.scalar(value), [k], []);
  const [max, sum] = f.forLoop(
    { count: Math.ceil(vocab / c), carried: [perRow(f, -Infinity), perRow(f, 0)], invariants: [rows, table] },
    (b, i, [m, s], [r, t]) => {
      const first = b.multiply(i, c);
      const start = b.minimum(first, vocab - c);
      const logits = capped(
        b,
        labelRowLogits(b, r, readRows(b, b.dynamicSlice(t, [start, b.scalar(0, 's32')], [c, dm]))),
      );
      // Vocabulary index of each column; those below `first` belong to the chunk before.
      const index = b.add(b.iota(TensorType.s32([k, c]), 1), b.broadcastInDim(start, [k, c], []));
      const counted = b.select(b.ge(index, b.broadcastInDim(first, [k, c], [])), logits, -Infinity);
      const next = b.maximum(m, b.reduceMax(counted, [1]));
      const rescaled = b.multiply(s, b.exponential(b.subtract(m, next)));
      const terms = b.exponential(b.subtract(counted, b.expandReduced(next, [k, c], [1])));
      return [next, b.add(rescaled, b.reduceSum(terms, [1]))];
    },
  );
  return f.add(f.log(sum), max);
}

/**
 * rows [K, Dm] @ lmHead^T -> logits [K, V]. Few rows against an f32 table: the table is the dot's
 * left side in f32 ([V, Dm] x [K, Dm]^T, then transposed), streamed once with nothing to round or
 * repack. Otherwise the function's dots, bf16 where it computes them in bf16.
 */
function labelRowLogits(f: FunctionBuilder, rows: HloValue, lmHead: HloValue): HloValue {
  if (rows.dims[0] <= LM_HEAD_F32_ROWS && lmHead.elementType === 'f32' && rows.elementType === 'f32') {
    return f.transpose(f.dotGeneral(lmHead, rows, { lhsContract: [1], rhsContract: [1], operands: 'as-is' }), [1, 0]);
  }
  return f.dotGeneral(rows, lmHead, { lhsContract: [1], rhsContract: [1] });
}

/**
 * rows [K, Dm] against the table's label rows only, ids s32 [Lb] (shared) or [K, Lb] (each row its own) -> the
 * label logits [K, Lb], with the same operand rule as labelRowLogits (an f32 table read as-is for few rows).
 */
function labelLogitsOnly(
  f: FunctionBuilder,
  rows: HloValue,
  lmHead: HloValue,
  ids: HloValue,
  read: (b: FunctionBuilder, rows: HloValue) => HloValue,
): HloValue {
  if (ids.rank === 1) {
    const labelRows = read(f, f.take(lmHead, ids, 0)); // [Lb, Dm]
    return f.dotGeneral(rows, labelRows, { lhsContract: [1], rhsContract: [1], ...asIs(rows, labelRows) });
  }
  const [k, lb] = ids.dims;
  const taken = read(f, f.take(lmHead, f.reshape(ids, [k * lb]), 0)); // [K Lb, Dm]
  const labelRows = f.reshape(taken, [k, lb, lmHead.dims[1]]); // [K, Lb, Dm]
  return f.dotGeneral(rows, labelRows, {
    lhsBatch: [0],
    rhsBatch: [0],
    lhsContract: [1],
    rhsContract: [2],
    ...asIs(rows, labelRows),
  });
}

/** labelRowLogits's operand rule for label rows: an f32 table's rows read as they are, for few rows. */
function asIs(rows: HloValue, labelRows: HloValue): { operands?: 'as-is' } {
  return rows.dims[0] <= LM_HEAD_F32_ROWS && labelRows.elementType === 'f32' && rows.elementType === 'f32'
    ? { operands: 'as-is' }
    : {};
}

/**
 * logits [K, V] at each row's own label ids [K, Lb] -> [K, Lb]: a gather of (row, label) pairs, the same values and no
 * [K, V] copy.
 */
function rowLabelLogits(f: FunctionBuilder, logits: HloValue, ids: HloValue): HloValue {
  const [k, lb] = ids.dims;
  const pairs = f.concatenate([f.iota(TensorType.s32([k, lb, 1]), 0), f.reshape(ids, [k, lb, 1])], 2);
  return f.gather(logits, pairs, {
    offsetDims: [],
    collapsedSliceDims: [0, 1],
    startIndexMap: [0, 1],
    indexVectorDim: 2,
    sliceSizes: [1, 1],
  });
}

export interface LmHeadGatherInputs {
  /** Hidden states [T, Dm]. */
  hidden: HloValue;
  /** Positions to score, s32 [K]; entries < 0 are padding (their rows are finite garbage). */
  gatherIndices: HloValue;
  finalNormWeight: HloValue;
  lmHead: HloValue;
  labels: HloValue;
}

/** Gathers hidden[gatherIndices] (clamped into [0, T)), then `lmHeadLabelLogprobs`. */
export function lmHeadGather(f: FunctionBuilder, x: LmHeadGatherInputs, opts: LmHeadOptions): HloValue {
  const op = 'lmHeadGather';
  if (x.hidden.rank !== 2) throw new HloBuildError(`${op}: hidden must be [T, Dm], got ${x.hidden.type}`);
  if (x.gatherIndices.rank !== 1 || x.gatherIndices.elementType !== 's32') {
    throw new HloBuildError(`${op}: gatherIndices must be s32[K], got ${x.gatherIndices.type}`);
  }
  const tokens = x.hidden.dims[0];
  if (tokens === 0) throw new HloBuildError(`${op}: hidden has no tokens to gather from`);
  const rows = f.take(x.hidden, f.clamp(0, x.gatherIndices, tokens - 1), 0); // [K, Dm]
  return lmHeadLabelLogprobs(f, { rows, finalNormWeight: x.finalNormWeight, lmHead: x.lmHead, labels: x.labels }, opts);
}
