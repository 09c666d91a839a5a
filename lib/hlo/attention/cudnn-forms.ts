/**
 * Our attention forms on cuDNN's fused attention (cudnn-call.ts):
 *
 * - items over a prefix, factored: each item token attends to the valid
 *   prefix keys (one fused call over all item rows of a query, the padding
 *   mask with the prefix length) and causally to its own keys (one fused
 *   call batched over the items), each call returning its softmax
 *   statistics; the two parts merge exactly in the program (mergeByStats),
 *   so the joint softmax over [prefix ; own keys] is what comes out; under
 *   `ownKeys: 'hlo'` the own-keys part is StableHLO instead of a fused call
 *   (tiny L x L problems, which XLA does as a batched dot and a softmax
 *   fusion), the same results merged alike; under `joinPrefill` the pass's
 *   prefill rows share the prefix call (queryAndItemsAttentionCudnn);
 * - the prefill's causal attention: one fused call with the causal mask.
 *
 * Grouped calls (cross-request passes, one query per group) put the groups
 * in the call's batch axis. Inputs are f32 (the program's activations);
 * the custom call rounds q, k and v to bf16 and its output comes back as
 * f32. Padding rows (item tokens at or past their length, prefill rows at
 * or past the valid length) get 0, as in every other form.
 */

import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import {
  AttentionOptions,
  ItemsOverPrefixInputs,
  causalPrefixLayout,
  itemsOverPrefixLayout,
  resolveScale,
} from './layout';
import {
  CudnnAttention,
  FmhaInputs,
  FmhaResult,
  checkCudnnAttention,
  fusedAttention,
  mergeByStats,
  stableHloAttention,
} from './cudnn-call';
import { shapesScores } from './score-shaping';
import { PassRows } from './pass-rows';
import { HloBuildError, TensorType } from '../builder/types';

/** Rows of x [...lead, T, ...rest] at or past `lengths` [...lead] along axis lead.length set to 0. */
function zeroPastLength(f: FunctionBuilder, x: HloValue, lengths: HloValue): HloValue {
  const g = lengths.rank;
  const rows = x.dims.slice(0, g + 1);
  const real = f.lt(
    f.iota(TensorType.s32(rows), g),
    f.broadcastInDim(
      lengths,
      rows,
      Array.from({ length: g }, (_, i) => i),
    ),
  );
  return f.select(
    f.broadcastInDim(
      real,
      x.dims,
      Array.from({ length: g + 1 }, (_, i) => i),
    ),
    x,
    0,
  );
}

/**
 * The calls are pinned without a window or a cap: a model with either runs the StableHLO forms
 * (scoring/platform/attention-forms.ts).
 */
function refuseShaping(op: string, opts: AttentionOptions | undefined): void {
  if (shapesScores(opts))
    throw new HloBuildError(`${op}: the cuDNN forms take no sliding window or soft cap; use the StableHLO forms`);
}

/**
 * Each item's rows against its own keys (causal; the items are the batch), with statistics: a fused call, or StableHLO
 * under ownKeys 'hlo'.
 */
function ownKeysPart(f: FunctionBuilder, own: FmhaInputs, form: CudnnAttention): FmhaResult {
  return form.ownKeys === 'hlo' ? stableHloAttention(f, own, true) : fusedAttention(f, own, form, true);
}

/**
 * Items over a prefix, factored into two parts (fused calls, or the own keys in StableHLO) merged by their statistics.
 * -> [...lead, N, L, Hq, D].
 */
export function itemsOverPrefixAttentionCudnn(
  f: FunctionBuilder,
  x: ItemsOverPrefixInputs,
  form: CudnnAttention,
  opts?: AttentionOptions,
): HloValue {
  refuseShaping('itemsOverPrefixAttentionCudnn', opts);
  checkCudnnAttention(form, true);
  const { lead, hq, hkv, d, n, l, p } = itemsOverPrefixLayout('itemsOverPrefixAttentionCudnn', x);
  const b = lead.reduce((a, c) => a * c, 1);
  const scale = resolveScale(opts, d);
  const rows = [...lead, n, l];

  // Every item row of a query against that query's valid prefix keys.
  const prefixLengths = f.reshape(x.prefixLength, [b]);
  const overPrefix = fusedAttention(
    f,
    {
      q: f.reshape(x.itemQ, [b, n * l, hq, d]),
      k: f.reshape(x.prefixK, [b, p, hkv, d]),
      v: f.reshape(x.prefixV, [b, p, hkv, d]),
      mask: 'padding',
      kvLengths: prefixLengths,
      scale,
    },
    form,
    true,
  );
  // Each item's rows against its own keys, causally: the items are
  // the batch; a fused call, or StableHLO under ownKeys 'hlo'.
  const own: FmhaInputs = {
    q: f.reshape(x.itemQ, [b * n, l, hq, d]),
    k: f.reshape(x.itemK, [b * n, l, hkv, d]),
    v: f.reshape(x.itemV, [b * n, l, hkv, d]),
    mask: 'causal',
    scale,
  };
  const overOwn = ownKeysPart(f, own, form);
  // A query with no prefix keys: that part sees nothing (whatever the kernel wrote there), weight 0.
  const hasPrefix = f.broadcastInDim(
    f.gt(x.prefixLength, 0),
    [...rows, hq],
    lead.map((_, i) => i),
  );
  const prefixStats = f.select(hasPrefix, f.reshape(overPrefix.stats!, [...rows, hq]), -Infinity);
  const prefixOut = f.select(
    f.broadcastInDim(
      hasPrefix,
      [...rows, hq, d],
      [...rows, hq].map((_, i) => i),
    ),
    f.reshape(overPrefix.out, [...rows, hq, d]),
    0,
  );
  const merged = mergeByStats(
    f,
    { out: prefixOut, stats: prefixStats },
    { out: f.reshape(overOwn.out, [...rows, hq, d]), stats: f.reshape(overOwn.stats!, [...rows, hq]) },
  );
  // Item tokens at or past their item's length computed finite garbage: 0, as every form gives.
  const real = f.lt(
    f.iota(TensorType.s32(rows), lead.length + 1),
    f.broadcastInDim(
      x.itemLengths,
      rows,
      [...lead, n].map((_, i) => i),
    ),
  );
  return f.select(
    f.broadcastInDim(
      real,
      merged.dims,
      rows.map((_, i) => i),
    ),
    merged,
    0,
  );
}

/** The prefill's causal attention as one fused call. q [...lead, P, Hq, D] -> [...lead, P, Hq, D]. */
export function causalPrefixAttentionCudnn(
  f: FunctionBuilder,
  q: HloValue,
  k: HloValue,
  v: HloValue,
  validLength: HloValue,
  form: CudnnAttention,
  opts?: AttentionOptions,
): HloValue {
  refuseShaping('causalPrefixAttentionCudnn', opts);
  checkCudnnAttention(form, false);
  const { lead, hq, hkv, d, p } = causalPrefixLayout('causalPrefixAttentionCudnn', q, k, v, validLength);
  if (p === 0) return f.full(TensorType.f32([...lead, 0, hq, d]), 0);
  const b = lead.reduce((a, c) => a * c, 1);
  const { out } = fusedAttention(
    f,
    {
      q: f.reshape(q, [b, p, hq, d]),
      k: f.reshape(k, [b, p, hkv, d]),
      v: f.reshape(v, [b, p, hkv, d]),
      mask: 'causal',
      scale: resolveScale(opts, d),
    },
    form,
    false,
  );
  // Rows at or past the valid length saw only keys before them (finite), and are set to 0.
  return zeroPastLength(f, f.reshape(out, [...lead, p, hq, d]), validLength);
}

/** A pass's rows (pass-rows.ts: per group [prefill P ; items N x L]) of q, k and v [G x T, H, D], and their lengths. */
interface QueryAndItemsInputs {
  q: HloValue;
  k: HloValue;
  v: HloValue;
  rows: PassRows;
  /** Valid prefill rows, s32 [...lead]. */
  prefixLength: HloValue;
  /** Each item's valid rows, s32 [...lead, N]. */
  itemLengths: HloValue;
}

/**
 * The prefill and the items over it with the prefill in the prefix call (`joinPrefill`, tag `_join`):
 * every row of a group against its valid prefix keys in one fused call under the padding-causal mask,
 * the groups the call's batch. Row i sees key j when j <= i and j < the prefix length: for a prefill
 * row that is its causal attention; an item row (i >= P > j) sees every valid prefix key, the prefix
 * part of its attention. The items' own keys come from the second part as in
 * itemsOverPrefixAttentionCudnn, set beside the item rows (the prefill rows' own part sees nothing:
 * weight 0), and the two merge over all rows, so the result is already the pass's [G x T, Hq, D] rows:
 * no concatenation of the prefill's and the items' outputs.
 */
export function queryAndItemsAttentionCudnn(
  f: FunctionBuilder,
  x: QueryAndItemsInputs,
  form: CudnnAttention,
  opts?: AttentionOptions,
): HloValue {
  refuseShaping('queryAndItemsAttentionCudnn', opts);
  checkCudnnAttention(form, true);
  const { rows } = x;
  const { groups: g, prefix: p, items: n, itemLength: l, perGroup: t, lead } = rows;
  const [total, hq, d] = x.q.dims;
  const hkv = x.k.dims[1];
  if (
    x.q.rank !== 3 ||
    total !== rows.total ||
    x.k.rank !== 3 ||
    x.k.dims[0] !== total ||
    x.v.dims.join() !== x.k.dims.join()
  ) {
    throw new HloBuildError(
      `queryAndItemsAttentionCudnn: q, k and v must be [${g} x (${p} + ${n} x ${l}), ` +
        `H, D], got ${x.q.type}, ${x.k.type}, ${x.v.type}`,
    );
  }
  if (p === 0) throw new HloBuildError('queryAndItemsAttentionCudnn: needs prefill rows');
  if (x.prefixLength.dims.join() !== lead.join() || x.itemLengths.dims.join() !== [...lead, n].join()) {
    throw new HloBuildError(
      `queryAndItemsAttentionCudnn: lengths must be s32[${lead}] and s32[${[...lead, n]}], ` +
        `got ${x.prefixLength.type} and ${x.itemLengths.type}`,
    );
  }
  const scale = resolveScale(opts, d);
  const leadAxes = lead.map((_, i) => i);
  const perGroup = (h: number) => [...lead, t, h];

  // Every row of a group against its valid prefix keys, causally.
  const overPrefix = fusedAttention(
    f,
    {
      q: f.reshape(x.q, [g, t, hq, d]),
      k: f.reshape(rows.prefill(f, x.k), [g, p, hkv, d]),
      v: f.reshape(rows.prefill(f, x.v), [g, p, hkv, d]),
      mask: 'padding_causal',
      kvLengths: f.reshape(x.prefixLength, [g]),
      scale,
    },
    form,
    true,
  );
  // Each item's rows against its own keys (the items of all groups are the batch), set at the item rows.
  const own: FmhaInputs = {
    q: f.reshape(rows.itemRows(f, x.q), [g * n, l, hq, d]),
    k: f.reshape(rows.itemRows(f, x.k), [g * n, l, hkv, d]),
    v: f.reshape(rows.itemRows(f, x.v), [g * n, l, hkv, d]),
    mask: 'causal',
    scale,
  };
  const overOwn = ownKeysPart(f, own, form);
  const ownOut = rows.atItemRows(f, f.reshape(overOwn.out, [...lead, n * l, hq, d]), 0);
  const ownStats = rows.atItemRows(f, f.reshape(overOwn.stats!, [...lead, n * l, hq]), -Infinity);
  // A query with no prefix keys: that part sees nothing (whatever the kernel wrote there), weight 0.
  const hasPrefix = f.gt(x.prefixLength, 0);
  const prefixStats = f.select(
    f.broadcastInDim(hasPrefix, perGroup(hq), leadAxes),
    f.reshape(overPrefix.stats!, perGroup(hq)),
    -Infinity,
  );
  const prefixOut = f.select(
    f.broadcastInDim(hasPrefix, [...perGroup(hq), d], leadAxes),
    f.reshape(overPrefix.out, [...perGroup(hq), d]),
    0,
  );
  const merged = mergeByStats(f, { out: prefixOut, stats: prefixStats }, { out: ownOut, stats: ownStats });
  // Prefill rows at or past the prefix length and item rows at or past their item's length: 0, as every form gives.
  const prefillReal = f.lt(
    f.iota(TensorType.s32([...lead, p]), lead.length),
    f.broadcastInDim(x.prefixLength, [...lead, p], leadAxes),
  );
  const itemGrid = [...lead, n, l];
  const itemReal = f.lt(
    f.iota(TensorType.s32(itemGrid), lead.length + 1),
    f.broadcastInDim(x.itemLengths, itemGrid, [...leadAxes, lead.length]),
  );
  const real = rows.joinPerGroup(f, prefillReal, f.reshape(itemReal, [...lead, n * l]));
  return rows.ungroup(f, f.select(f.broadcastInDim(real, merged.dims, [...leadAxes, lead.length]), merged, 0));
}
