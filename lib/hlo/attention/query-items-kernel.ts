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
export function queryAndItemsAttentionKernel(f: FunctionBuilder, x: QueryAndItemsInputs, opts?: AttentionOptions): HloValue {
  const op = 'queryAndItemsAttentionKernel';
  const query = causalPrefixLayout(op, x.q, x.k, x.v, x.prefixLength);
  const items = itemsOverPrefixLayout(op, { itemQ: x.itemQ, itemK: x.itemK, itemV: x.itemV, itemLengths: x.itemLengths, prefixK: x.k, prefixV: x.v, prefixLength: x.prefixLength });
  if (query.lead.length) throw new HloBuildError(`${op}: the addon's kernels take one query (prefixLength s32[]), got prefixLength ${x.prefixLength.type}`);
  if (shapesScores(opts)) throw new HloBuildError(`${op}: the addon's kernels take no sliding window or soft cap`);
  const { hq, d, p } = query;
  const scale = resolveScale(opts, d);
  // The score scale goes into q here, as the two kernels' builders put it: the kernels take no attributes.
  const operands = [f.multiply(x.q, scale), x.k, x.v, x.prefixLength, f.multiply(x.itemQ, scale), x.itemK, x.itemV, x.itemLengths];
  const target = f.fn.dotOperands === 'bf16' ? QUERY_ITEMS_ATTENTION_BF16_TARGET : QUERY_ITEMS_ATTENTION_TARGET;
  return f.customCall(target, operands, [TensorType.f32([p + items.n * items.l, hq, d])])[0];
}
