/**
 * Items over a prefix through the addon's fused kernel: one custom call to
 * `pjrt_score_prefix_attention` (native/prefix_attention.cc), the joint
 * softmax over the valid prefix keys and each token's own earlier keys,
 * with prefix keys in cache-sized blocks and an online softmax. The same
 * numbers as itemsOverPrefixAttention within f32 rounding.
 *
 * The kernel exists only where the runtime registered it with the plugin
 * (a CPU plugin with the FFI extension: Client.prefixAttentionKernel); the
 * Scorer refuses this form elsewhere. Grouped calls (one query per group),
 * items longer than PREFIX_KERNEL_MAX_ITEM_TOKENS and calls with a sliding
 * window or soft-capped scores keep the CPU's StableHLO default form: the
 * kernel takes one query, does own keys row by row, and has no window or cap.
 */

import { FunctionBuilder } from './builder';
import { HloValue } from './core';
import { AttentionOptions, ItemsOverPrefixInputs, itemsOverPrefixLayout, resolveScale } from './attention';
import { itemsOverPrefixAttentionRows } from './attention-rows';
import { TensorType } from './types';
import { shapesScores } from './attention-window';

/** The fused kernel (a `PrefixAttention` kind, prefix-attention.ts; tag `ffi`). */
export interface PrefixKernel {
  readonly kind: 'kernel';
}

export const PREFIX_KERNEL: PrefixKernel = Object.freeze({ kind: 'kernel' });

/** The custom-call target the addon registers (native/prefix_attention_ffi.h). */
export const PREFIX_ATTENTION_TARGET = 'pjrt_score_prefix_attention';

/**
 * Longest items the kernel takes. It does each row's own keys one by one, unblocked (fine for short
 * items, where the prefix keys are nearly all the work): on serial sequences of 2,020 tokens (no prefix,
 * all keys own) it ran at 43 useful GFLOP/s against 89 for the StableHLO form on the same Zen 3
 * (npm run bench, 2026-11-23). Longer items keep the StableHLO form.
 */
export const PREFIX_KERNEL_MAX_ITEM_TOKENS = 32;

export function itemsOverPrefixAttentionKernel(f: FunctionBuilder, x: ItemsOverPrefixInputs, opts?: AttentionOptions): HloValue {
  const { lead, n, l, hq, d } = itemsOverPrefixLayout('itemsOverPrefixAttentionKernel', x);
  // The kernel takes no window or soft cap yet: opts is the seam that would pass them; until then those
  // layers (Gemma's) run the StableHLO form.
  if (lead.length || l > PREFIX_KERNEL_MAX_ITEM_TOKENS || shapesScores(opts)) {
    return itemsOverPrefixAttentionRows(f, x, { kind: 'rows', loop: 'unrolled', denominator: 'values', shift: 'own' }, opts);
  }
  // The score scale goes into q here, as in the StableHLO forms: the kernel takes no attributes.
  const q = f.multiply(x.itemQ, resolveScale(opts, d));
  const operands = [q, x.itemK, x.itemV, x.itemLengths, x.prefixK, x.prefixV, x.prefixLength];
  return f.customCall(PREFIX_ATTENTION_TARGET, operands, [TensorType.f32([n, l, hq, d])])[0];
}
