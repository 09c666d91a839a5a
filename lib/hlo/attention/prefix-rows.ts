/**
 * Items over a prefix, the joint softmax with fewer passes over the prefix
 * scores (the rows form, tag `ones_own`): the same numbers as
 * itemsOverPrefixAttention within f32 rounding.
 *
 * Why: at the target shape the prefix scores [Hkv, N, L, G, P] are ~94 MB
 * per layer, and XLA CPU makes separate passes over them (the QK GEMM writes
 * them, the split row max reads them, exp reads them and writes the weights,
 * the split row sum and the value GEMM read the weights): it does not fuse
 * producers into reductions. Two changes:
 * - the denominator from the values: the values carry a column of ones
 *   ([P, Hkv, D + 1]), so the value GEMM sums each row's weights in its last
 *   column and the reduce-sum pass over the weights disappears;
 * - the shift by the own keys' max: softmax is the same for any shift per
 *   row, and the max over a row's own L keys is a pass over a tensor P/L
 *   times smaller; it can only be below the true max, so exp can overflow
 *   (a prefix score ~88 above every own score). Then the call, and only
 *   then, is computed again with the true max.
 * docs/performance.md ('Items over the prefix') has what it was worth on the
 * CPU, where it is the default when the addon's kernels are off.
 *
 * Every row sees its own first key, so both shifts are finite and a masked
 * prefix key (MASKED_SCORE folded into the QK product, as in the joint form)
 * gets weight exactly 0; padding rows compute finite garbage and are set to
 * 0 at the end.
 */

import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import {
  AttentionOptions,
  ItemsOverPrefixInputs,
  itemOutputs,
  itemsOverPrefixLayout,
  resolveScale,
  withOnesColumn,
} from './layout';
import { HloBuildError, TensorType } from '../builder/types';
import {
  MASKED_SCORE,
  capScores,
  causalWindowVisible,
  checkShaping,
  maskBias,
  prefixKeysVisible,
  shapesScores,
} from './score-shaping';

/**
 * The rows form (a `PrefixAttention` kind, prefix.ts; tag `ones_own`): the values' column of ones gives
 * the denominator, the own keys' max is the shift. It has no options.
 */
export interface RowsForm {
  readonly kind: 'rows';
}

export const ROWS_FORM: RowsForm = Object.freeze({ kind: 'rows' });

/** The rows form's tag. */
export const ROWS_TAG = 'ones_own';

/**
 * Checks a rows form from a caller; returns it. The fields the form once had are taken only with the
 * values it keeps (loop 'unrolled', denominator 'values', shift 'own', no itemsPerChunk): the others
 * (item-row chunks, other denominators, the full max as the shift) were measured no faster and
 * removed (docs/performance.md, 'Items over the prefix').
 */
export function checkRowsForm(a: RowsForm): RowsForm {
  const kept: Record<string, unknown> = { loop: 'unrolled', denominator: 'values', shift: 'own' };
  for (const [key, value] of Object.entries(a)) {
    if (key === 'kind' || kept[key] === value) continue;
    throw new HloBuildError(
      `prefix attention 'rows' takes no ${key} (got ${JSON.stringify(value)}): ` +
        `it is the one form \`${ROWS_TAG}\` (docs/performance.md, 'Items over the prefix')`,
    );
  }
  return a;
}

/** What the call shares: its sizes, group axes, shift and cap. */
interface Shared {
  g: number;
  lead: number[];
  axes: number[];
  hq: number;
  hkv: number;
  group: number;
  d: number;
  l: number;
  shift: 'max' | 'own';
  /** Soft cap of the scores (score-shaping.ts). */
  softcap?: number;
}

/**
 * The masks a window or a soft cap needs (score-shaping.ts), the same for the
 * whole call: own-key visibility pred [L, L], and a bias [..., L, P] added
 * to the (capped) prefix scores. Absent: the plain form's masks.
 */
interface ShapingMasks {
  own: HloValue;
  prefixBias?: HloValue;
}

function maskList(m: ShapingMasks | undefined): HloValue[] {
  return m ? [m.own, ...(m.prefixBias ? [m.prefixBias] : [])] : [];
}

function masksFrom(m: ShapingMasks | undefined, values: readonly HloValue[]): ShapingMasks | undefined {
  return m ? { own: values[0], ...(m.prefixBias ? { prefixBias: values[1] } : {}) } : undefined;
}

/**
 * The joint attention of the items: qWithOne [..., n, L, Hkv, G, D + 1]
 * (scaled queries and a column of ones), its own keys and values
 * [..., n, L, Hkv, D(+1)], lengths [..., n] -> [..., n, L, Hq, D].
 */
function attendItems(
  b: FunctionBuilder,
  s: Shared,
  qWithOne: HloValue,
  itemK: HloValue,
  itemV: HloValue,
  itemLengths: HloValue,
  kWithBias: HloValue,
  prefixV: HloValue,
  masks?: ShapingMasks,
): HloValue {
  const { g, lead, axes, hkv, group, d, l } = s;
  const n = qWithOne.dims[g];
  const keyAxis = g + 4;
  // Prefix scores [..., Hkv, n, L, G, P], masked by the bias
  // column (and, with a window or cap, the bias after the cap).
  let prefixScores = capScores(
    b,
    b.dotGeneral(qWithOne, kWithBias, {
      lhsBatch: [...axes, g + 2],
      rhsBatch: [...axes, g + 1],
      lhsContract: [g + 4],
      rhsContract: [g + 2],
    }),
    s.softcap,
  );
  if (masks?.prefixBias)
    prefixScores = b.add(prefixScores, b.broadcastInDim(masks.prefixBias, prefixScores.dims, [...axes, g + 2, g + 4]));
  // Own scores [..., Hkv, n, L, G, Lk]; the queries without their ones column.
  const q = b.slice(qWithOne, axes.map(() => 0).concat([0, 0, 0, 0, 0]), [...lead, n, l, hkv, group, d]);
  const ownScores = capScores(
    b,
    b.dotGeneral(q, itemK, {
      lhsBatch: [...axes, g + 2, g],
      rhsBatch: [...axes, g + 2, g],
      lhsContract: [g + 4],
      rhsContract: [g + 3],
    }),
    s.softcap,
  );
  const causal = masks?.own ?? b.le(b.iota(TensorType.s32([l, l]), 1), b.iota(TensorType.s32([l, l]), 0));
  const own = b.select(b.broadcastInDim(causal, ownScores.dims, [g + 2, g + 4]), ownScores, -Infinity);
  // Finite for every row: a row sees its own key (window or not).
  const ownMax = b.reduceMax(own, [keyAxis]);
  if (s.shift === 'max')
    return finish(
      b,
      s,
      itemLengths,
      weigh(b, s, prefixScores, own, b.maximum(b.reduceMax(prefixScores, [keyAxis]), ownMax), itemV, prefixV),
    );
  // Shift by the own keys' max: no pass over the prefix scores for their max. Any shift gives the same
  // softmax; this one can only be too small, and exp overflows only where a prefix score exceeds the own
  // max by ~88. Then (a non-finite numerator or sum) the call is computed again with the
  // true max, in a loop that runs 0 or 1 times.
  const fast = weigh(b, s, prefixScores, own, ownMax, itemV, prefixV);
  const probe = b.reduceSum(
    b.multiply(fast.numerator, 0),
    fast.numerator.dims.map((_, i) => i),
  ); // NaN iff a non-finite value
  const probeSum = b.reduceSum(
    b.multiply(fast.sum, 0),
    fast.sum.dims.map((_, i) => i),
  );
  const redo = b.select(b.and(b.eq(probe, probe), b.eq(probeSum, probeSum)), b.scalar(0, 's32'), b.scalar(1, 's32'));
  // The redo starts again from the call's inputs (passing the scores into the loop would copy them),
  // and reads its queries at the loop counter (0) from a copy one item longer: a body that depends only on
  // loop invariants is hoisted out of the loop by XLA and would always run.
  const exact: Shared = { ...s, shift: 'max' };
  const qLonger = b.pad(
    qWithOne,
    0,
    qWithOne.dims.map(() => 0),
    qWithOne.dims.map((_, a) => (a === g ? 1 : 0)),
  );
  const [out] = b.forLoop(
    {
      count: redo,
      carried: [finish(b, s, itemLengths, fast)],
      invariants: [qLonger, itemK, itemV, itemLengths, kWithBias, prefixV, ...maskList(masks)],
    },
    (c, i, _carried, [ql, ik, iv, il, kb, pv, ...m]) => [
      attendItems(
        c,
        exact,
        c.dynamicSlice(
          ql,
          ql.dims.map((_, a) => (a === g ? i : 0)),
          qWithOne.dims,
        ),
        ik,
        iv,
        il,
        kb,
        pv,
        masksFrom(masks, m),
      ),
    ],
  );
  return out;
}

/** Softmax numerators [..., Hkv, n, L, G, D] and denominators [..., Hkv, n, L, G] for a shift per row. */
function weigh(
  b: FunctionBuilder,
  s: Shared,
  prefixScores: HloValue,
  own: HloValue,
  shift: HloValue,
  itemV: HloValue,
  prefixV: HloValue,
): { numerator: HloValue; sum: HloValue } {
  const { g, axes, d } = s;
  const keyAxis = g + 4;
  const prefixWeights = b.exponential(b.subtract(prefixScores, b.expandReduced(shift, prefixScores.dims, [keyAxis])));
  const ownWeights = b.exponential(b.subtract(own, b.expandReduced(shift, own.dims, [keyAxis])));
  // [..., Hkv, n, L, G, P] x [..., P, Hkv, Dv] and [..., Hkv, n,
  // L, G, Lk] x [..., n, Lk, Hkv, Dv] -> [..., Hkv, n, L, G, Dv]
  const acc = b.add(
    b.dotGeneral(prefixWeights, prefixV, {
      lhsBatch: [...axes, g],
      rhsBatch: [...axes, g + 1],
      lhsContract: [keyAxis],
      rhsContract: [g],
    }),
    b.dotGeneral(ownWeights, itemV, {
      lhsBatch: [...axes, g, g + 1],
      rhsBatch: [...axes, g + 2, g],
      lhsContract: [keyAxis],
      rhsContract: [g + 1],
    }),
  );
  // The ones column's sums: the denominators.
  const rows = shift.dims;
  const zeros = rows.map(() => 0);
  return {
    numerator: b.slice(acc, [...zeros, 0], [...rows, d]),
    sum: b.reshape(b.slice(acc, [...zeros, d], [...rows, d + 1]), rows),
  };
}

/** numerator / denominator, tokens first, padding rows 0: -> [..., n, L, Hq, D]. */
function finish(
  b: FunctionBuilder,
  s: Shared,
  itemLengths: HloValue,
  w: { numerator: HloValue; sum: HloValue },
): HloValue {
  const { g } = s;
  // A row's sum is >= 1 (its max key has weight 1); guard anyway, as the joint form does.
  const safe = b.select(b.gt(w.sum, 0), w.sum, 1);
  return itemOutputs(b, b.divide(w.numerator, b.expandReduced(safe, w.numerator.dims, [g + 4])), itemLengths, g);
}

/**
 * itemsOverPrefixAttention in the rows form: -> [N, L, Hq, D]; grouped
 * (prefixLength s32[G]) -> [G, N, L, Hq, D], each group against its own prefix.
 */
export function itemsOverPrefixAttentionRows(
  f: FunctionBuilder,
  x: ItemsOverPrefixInputs,
  opts?: AttentionOptions,
): HloValue {
  const { lead, axes, hq, hkv, group, d, n, l, p } = itemsOverPrefixLayout('itemsOverPrefixAttentionRows', x);
  const g = lead.length;
  const shaping = checkShaping('itemsOverPrefixAttentionRows', opts);
  const s: Shared = {
    g,
    lead,
    axes,
    hq,
    hkv,
    group,
    d,
    l,
    shift: 'own',
    ...(shaping.softcap !== undefined ? { softcap: shaping.softcap } : {}),
  };

  // The prefix mask as a bias column of the QK product (see itemsOverPrefixAttention); with a soft cap, a
  // bias added after the cap, as is a window's (score-shaping.ts).
  const fold = shaping.softcap === undefined;
  const prefixKeyValid = f.lt(
    f.iota(TensorType.s32([...lead, p]), g),
    f.broadcastInDim(x.prefixLength, [...lead, p], axes),
  );
  const bias = fold
    ? f.select(
        prefixKeyValid,
        f.full(TensorType.f32([...lead, p]), 0),
        f.full(TensorType.f32([...lead, p]), MASKED_SCORE),
      )
    : f.full(TensorType.f32([...lead, p]), 0);
  let masks: ShapingMasks | undefined;
  if (shapesScores(shaping)) {
    const visible = prefixKeysVisible(f, lead, l, p, x.prefixLength, shaping.window, !fold);
    masks = {
      own: causalWindowVisible(f, l, l, 0, shaping.window),
      ...(visible ? { prefixBias: maskBias(f, visible) } : {}),
    };
  }
  const kWithBias = f.concatenate([x.prefixK, f.broadcastInDim(bias, [...lead, p, hkv, 1], [...axes, g])], g + 2);
  const prefixV = withOnesColumn(f, x.prefixV);
  const qGrouped = f.reshape(f.multiply(x.itemQ, resolveScale(opts, d)), [...lead, n, l, hkv, group, d]);
  const qWithOne = f.concatenate([qGrouped, f.full(TensorType.f32([...lead, n, l, hkv, group, 1]), 1)], g + 4);
  const itemV = withOnesColumn(f, x.itemV);
  return attendItems(f, s, qWithOne, x.itemK, itemV, x.itemLengths, kWithBias, prefixV, masks);
}
