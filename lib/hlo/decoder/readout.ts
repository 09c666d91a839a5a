/**
 * Where the decoder programs read their logprobs: each item's last real
 * token, the query's last real token, and the item tokens' positions.
 */
import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { TensorType } from '../builder/types';
import { lmHeadLabelLogprobs } from '../nn/lm-head';
import { DecoderDims } from './layout';
import { LmHeadForDot, Weights, need } from './projections';

/** The LM head's options: the final norm's epsilon, Gemma 2's final soft cap. */
function lmHeadOptions(d: DecoderDims): { eps: number; softcap?: number } {
  return { eps: d.rmsEps, ...(d.gemma?.finalSoftcap !== undefined ? { softcap: d.gemma.finalSoftcap } : {}) };
}

/** x as a 1-D array (a no-op, emitting nothing, when it already is one). */
export function flat(f: FunctionBuilder, x: HloValue): HloValue {
  return x.rank === 1 ? x : f.reshape(x, [x.type.size]);
}

/**
 * The hidden rows of each item's last real token (row len - 1; an empty item's row is garbage): itemHidden [K, L, Dm],
 * itemLengths s32[K] -> [K, Dm].
 */
function itemLastRows(f: FunctionBuilder, itemHidden: HloValue, itemLengths: HloValue): HloValue {
  const [n, l, dm] = itemHidden.dims;
  const last = f.clamp(0, f.subtract(itemLengths, 1), l - 1);
  const flatIndex = f.add(f.multiply(f.iota(TensorType.s32([n]), 0), l), last);
  return f.take(f.reshape(itemHidden, [n * l, dm]), flatIndex, 0);
}

/**
 * The hidden rows of each query's last real token: prefixHidden [G*P, Dm], prefixLength s32[] (G = 1) or s32[G] -> [G,
 * Dm].
 */
function prefixLastRows(f: FunctionBuilder, prefixHidden: HloValue, prefixLength: HloValue): HloValue {
  const groups = prefixLength.rank === 0 ? 1 : prefixLength.dims[0];
  const p = prefixHidden.dims[0] / groups;
  const clamped = f.clamp(0, f.subtract(prefixLength, 1), p - 1);
  const last =
    groups === 1 ? f.reshape(clamped, [1]) : f.add(f.multiply(f.iota(TensorType.s32([groups]), 0), p), clamped);
  return f.take(prefixHidden, last, 0);
}

/**
 * Label logprobs of each item at its last real token: itemHidden [K, L, Dm],
 * itemLengths s32[K], labels s32[Lb] shared or s32[K, Lb] per row -> [K, Lb].
 * `normalize` (s32 [], where given): 0 reads label logits instead (lm-head.ts).
 */
export function itemReadout(
  f: FunctionBuilder,
  d: DecoderDims,
  w: Weights,
  head: LmHeadForDot,
  itemHidden: HloValue,
  itemLengths: HloValue,
  labels: HloValue,
  normalize?: HloValue,
): HloValue {
  const rows = itemLastRows(f, itemHidden, itemLengths);
  return lmHeadLabelLogprobs(
    f,
    { rows, finalNormWeight: need(w, 'finalNorm'), ...head, labels, normalize },
    lmHeadOptions(d),
  );
}

/**
 * Label logprobs at the query's last real token: prefixHidden [P, Dm],
 * prefixLength s32[] -> [1, Lb]; grouped, prefixHidden [G*P, Dm],
 * prefixLength s32[G], labels s32[G, Lb] -> [G, Lb].
 */
export function prefixReadout(
  f: FunctionBuilder,
  d: DecoderDims,
  w: Weights,
  head: LmHeadForDot,
  prefixHidden: HloValue,
  prefixLength: HloValue,
  labels: HloValue,
  normalize?: HloValue,
): HloValue {
  const rows = prefixLastRows(f, prefixHidden, prefixLength);
  return lmHeadLabelLogprobs(
    f,
    { rows, finalNormWeight: need(w, 'finalNorm'), ...head, labels, normalize },
    lmHeadOptions(d),
  );
}

/**
 * Both readouts of a pass that computes the queries and their items, through one LM-head product (the
 * table is read once, not twice): the queries' rows first, then the items'. prefixLabels s32[Lb] (one
 * query, shared with the items) or s32[G, Lb]; itemLabels s32[Lb] or s32[K, Lb] -> prefix [G, Lb] and
 * items [K, Lb], as prefixReadout and itemReadout (`normalize` as theirs).
 */
export function passReadouts(
  f: FunctionBuilder,
  d: DecoderDims,
  w: Weights,
  head: LmHeadForDot,
  prefix: { hidden: HloValue; length: HloValue; labels: HloValue },
  items: { hidden: HloValue; lengths: HloValue; labels: HloValue },
  normalize?: HloValue,
): { prefix: HloValue; items: HloValue } {
  const queryRows = prefixLastRows(f, prefix.hidden, prefix.length);
  const itemRows = itemLastRows(f, items.hidden, items.lengths);
  const [g, k] = [queryRows.dims[0], itemRows.dims[0]];
  const perRow = (labels: HloValue, n: number): HloValue =>
    labels.rank === 2 ? labels : f.broadcastInDim(labels, [n, labels.dims[0]], [1]);
  const shared = prefix.labels.rank === 1 && items.labels.rank === 1 && prefix.labels === items.labels;
  const labels = shared ? prefix.labels : f.concatenate([perRow(prefix.labels, g), perRow(items.labels, k)], 0);
  const rows = f.concatenate([queryRows, itemRows], 0);
  const all = lmHeadLabelLogprobs(
    f,
    { rows, finalNormWeight: need(w, 'finalNorm'), ...head, labels, normalize },
    lmHeadOptions(d),
  );
  const lb = all.dims[1];
  return { prefix: f.slice(all, [0, 0], [g, lb]), items: f.slice(all, [g, 0], [g + k, lb]) };
}

/**
 * Positions P + j of item tokens, per group: prefixLength s32[] (grouped: s32[G], one per group) -> s32[...lead, N x
 * L].
 */
/**
 * s32 [...lead, width]: 1 where the position is below its sequence's length (lengths s32 [...lead]),
 * 0 past it: which rows of a bucket are tokens and which padding (LayerLoopInputs.liveRows).
 */
export function liveRows(f: FunctionBuilder, lengths: HloValue, width: number): HloValue {
  const lead = lengths.dims;
  const grid = [...lead, width];
  const at = f.iota(TensorType.s32(grid), lead.length);
  return f.convert(
    f.lt(
      at,
      f.broadcastInDim(
        lengths,
        grid,
        lead.map((_, i) => i),
      ),
    ),
    's32',
  );
}

export function itemPositions(f: FunctionBuilder, prefixLength: HloValue, n: number, l: number): HloValue {
  const lead = prefixLength.dims;
  const grid = [...lead, n, l];
  const j = f.iota(TensorType.s32(grid), lead.length + 1);
  return f.reshape(
    f.add(
      j,
      f.broadcastInDim(
        prefixLength,
        grid,
        lead.map((_, i) => i),
      ),
    ),
    [...lead, n * l],
  );
}
