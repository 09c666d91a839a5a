/**
 * A packed pass's attention in one call of the addon's kernels
 * (`pjrt_score_query_items_attention`, native/kernels/prefix_attention_ffi.h):
 * the query's causal attention (causal-kernel.ts) and then its items over it
 * (prefix-kernel.ts), written one after the other as the pass's rows are: no
 * XLA fusion joins the two results, and XLA dispatches one call, not two. The
 * same kernels, so the same numbers as the two calls, bit for bit. Taken where
 * the pass runs both forms as the kernel (lib/hlo/decoder/pass-programs.ts);
 * like them it takes one query and no sliding window or soft cap.
 */

import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { HloBuildError, TensorType } from '../builder/types';
import { AttentionOptions, causalPrefixLayout, itemsOverPrefixLayout, resolveScale } from './layout';
import { shapesScores } from './score-shaping';

export const QUERY_ITEMS_ATTENTION_TARGET = 'pjrt_score_query_items_attention';
/** In bf16, where the function's dots run in bf16 (as the two kernels' bf16 targets). */
export const QUERY_ITEMS_ATTENTION_BF16_TARGET = 'pjrt_score_query_items_attention_bf16';

export interface QueryAndItemsInputs {
  /** The query's rows: q [P, Hq, D], k and v [P, Hkv, D]; its length s32 []. */
  q: HloValue;
  k: HloValue;
  v: HloValue;
  prefixLength: HloValue;
  /** The items' rows: q [N, L, Hq, D], k and v [N, L, Hkv, D]; their lengths s32 [N]. */
  itemQ: HloValue;
  itemK: HloValue;
  itemV: HloValue;
  itemLengths: HloValue;
}

/** -> f32 [P + N L, Hq, D]: the query's rows, then each item's. */
export function queryAndItemsAttentionKernel(
  f: FunctionBuilder,
  x: QueryAndItemsInputs,
  opts?: AttentionOptions,
): HloValue {
  const op = 'queryAndItemsAttentionKernel';
  const query = causalPrefixLayout(op, x.q, x.k, x.v, x.prefixLength);
  const items = itemsOverPrefixLayout(op, {
    itemQ: x.itemQ,
    itemK: x.itemK,
    itemV: x.itemV,
    itemLengths: x.itemLengths,
    prefixK: x.k,
    prefixV: x.v,
    prefixLength: x.prefixLength,
  });
  if (query.lead.length)
    throw new HloBuildError(
      `${op}: the addon's kernels take one query (prefixLength s32[]), got prefixLength ${x.prefixLength.type}`,
    );
  if (shapesScores(opts)) throw new HloBuildError(`${op}: the addon's kernels take no sliding window or soft cap`);
  const { hq, d, p } = query;
  const scale = resolveScale(opts, d);
  // The score scale goes into q here, as the two kernels' builders put it: the kernels take no attributes.
  const operands = [
    f.multiply(x.q, scale),
    x.k,
    x.v,
    x.prefixLength,
    f.multiply(x.itemQ, scale),
    x.itemK,
    x.itemV,
    x.itemLengths,
  ];
  const target = f.fn.dotOperands === 'bf16' ? QUERY_ITEMS_ATTENTION_BF16_TARGET : QUERY_ITEMS_ATTENTION_TARGET;
  return f.customCall(target, operands, [TensorType.f32([p + items.n * items.l, hq, d])])[0];
}

export const QUERY_ITEMS_ATTENTION_ROPE_TARGET = 'pjrt_score_query_items_attention_rope';
export const QUERY_ITEMS_ATTENTION_ROPE_BF16_TARGET = 'pjrt_score_query_items_attention_rope_bf16';

export interface QueryAndItemsProjectionInputs {
  /** The pass's q | k | v projection [P + N L, (Hq + 2 Hkv) D], before RoPE. */
  qkv: HloValue;
  heads: { hq: number; hkv: number; d: number };
  /** RoPE's cos and sin of the query's rows [P, D / 2] and of the items' [N, L, D / 2]. */
  queryCos: HloValue;
  querySin: HloValue;
  itemCos: HloValue;
  itemSin: HloValue;
  prefixLength: HloValue;
  itemLengths: HloValue;
}

/**
 * queryAndItemsAttentionKernel on the projection itself: the call rotates q and k (RoPE, as
 * applyRotary), scales q and splits the rows into the kernels' operands (native/kernels/attention_rope.h),
 * so the layer runs no XLA loop between its q | k | v call and its attention. -> f32 [P + N L, Hq, D].
 */
export function queryAndItemsAttentionOnProjection(
  f: FunctionBuilder,
  x: QueryAndItemsProjectionInputs,
  opts?: AttentionOptions,
): HloValue {
  const op = 'queryAndItemsAttentionOnProjection';
  const { hq, hkv, d } = x.heads;
  const half = d / 2;
  if (!(Number.isInteger(half) && half > 0 && hkv > 0 && hq % hkv === 0))
    throw new HloBuildError(`${op}: heads ${hq} / ${hkv} of dim ${d} (an even D, Hq a multiple of Hkv)`);
  const [t] = x.qkv.dims;
  const [p] = x.queryCos.dims;
  const [n, l] = x.itemCos.dims;
  const expect = (name: string, v: HloValue, type: string, dims: number[]): void => {
    if (v.elementType !== type || v.dims.length !== dims.length || v.dims.some((s, i) => s !== dims[i]))
      throw new HloBuildError(`${op}: ${name} must be ${type} [${dims.join(', ')}], got ${v.type}`);
  };
  expect('qkv', x.qkv, 'f32', [p + n * l, (hq + 2 * hkv) * d]);
  expect('query cos', x.queryCos, 'f32', [p, half]);
  expect('query sin', x.querySin, 'f32', [p, half]);
  expect('item cos', x.itemCos, 'f32', [n, l, half]);
  expect('item sin', x.itemSin, 'f32', [n, l, half]);
  expect('prefix length', x.prefixLength, 's32', []);
  expect('item lengths', x.itemLengths, 's32', [n]);
  if (shapesScores(opts)) throw new HloBuildError(`${op}: the addon's kernels take no sliding window or soft cap`);
  const scale = resolveScale(opts, d);
  const operands = [
    x.qkv,
    x.queryCos,
    x.querySin,
    x.itemCos,
    x.itemSin,
    f.scalar(scale),
    x.prefixLength,
    x.itemLengths,
  ];
  const target =
    f.fn.dotOperands === 'bf16' ? QUERY_ITEMS_ATTENTION_ROPE_BF16_TARGET : QUERY_ITEMS_ATTENTION_ROPE_TARGET;
  return f.customCall(target, operands, [TensorType.f32([t, hq, d])])[0];
}
