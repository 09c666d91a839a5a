/**
 * Items over a prefix through the addon's fused kernel: one custom call to
 * `pjrt_score_prefix_attention` (native/kernels/prefix_attention.cc), the joint
 * softmax over the valid prefix keys and each token's own earlier keys,
 * with prefix keys in cache-sized blocks and an online softmax. The same
 * numbers as itemsOverPrefixAttention within f32 rounding.
 *
 * The kernel exists only where the runtime registered it with the plugin
 * (a CPU plugin with the FFI extension: Client.prefixAttentionKernel); the
 * Scorer refuses this form elsewhere. Items of any length go through the
 * kernel: up to 32 tokens it does each row's own keys row by row, longer
 * items' own keys go in key blocks with the causal limit per row, as the
 * prefix keys do (native/kernels/prefix_attention.cc). The kernel takes one
 * query and no sliding window or soft cap (opts is the seam that would pass
 * them): a grouped call (one query per group) or a windowed or capped layer
 * is refused, and the scoring room's form chooser
 * (lib/scoring/platform/attention-forms.ts) picks a StableHLO form for such passes.
 */

import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { AttentionOptions, ItemsOverPrefixInputs, itemsOverPrefixLayout, resolveScale } from './layout';
import { HloBuildError, TensorType } from '../builder/types';
import { shapesScores } from './score-shaping';

/** The fused kernel (a `PrefixAttention` kind, prefix.ts; tag `ffi`). */
export interface PrefixKernel {
  readonly kind: 'kernel';
}

export const PREFIX_KERNEL: PrefixKernel = Object.freeze({ kind: 'kernel' });

/** The custom-call target the addon registers (native/kernels/prefix_attention_ffi.h). */
const PREFIX_ATTENTION_TARGET = 'pjrt_score_prefix_attention';

/**
 * The same kernel in bf16 on the CPU's matrix units (AMX, AVX512_BF16; the portable tiles elsewhere),
 * called where the function's dots run in bf16 (precision 'bf16'): q, K, V and the probabilities
 * rounded to bf16, scores, softmax statistics and accumulation in f32.
 */
const PREFIX_ATTENTION_BF16_TARGET = 'pjrt_score_prefix_attention_bf16';

export function itemsOverPrefixAttentionKernel(
  f: FunctionBuilder,
  x: ItemsOverPrefixInputs,
  opts?: AttentionOptions,
): HloValue {
  const { lead, n, l, hq, d } = itemsOverPrefixLayout('itemsOverPrefixAttentionKernel', x);
  if (lead.length)
    throw new HloBuildError(
      `prefix attention 'ffi' (the addon's kernel) takes one query (prefixLength s32[]), got prefixLength ` +
        `${x.prefixLength.type}: ` +
        `a pass of several queries runs a StableHLO form (lib/scoring/platform/attention-forms.ts)`,
    );
  if (shapesScores(opts))
    throw new HloBuildError(
      "prefix attention 'ffi' (the addon's kernel) takes no sliding window or soft cap: " +
        'such a model runs a StableHLO form (lib/scoring/platform/attention-forms.ts)',
    );
  // The score scale goes into q here, as in the StableHLO forms: the kernel takes no attributes.
  const q = f.multiply(x.itemQ, resolveScale(opts, d));
  const operands = [q, x.itemK, x.itemV, x.itemLengths, x.prefixK, x.prefixV, x.prefixLength];
  const target = f.fn.dotOperands === 'bf16' ? PREFIX_ATTENTION_BF16_TARGET : PREFIX_ATTENTION_TARGET;
  return f.customCall(target, operands, [TensorType.f32([n, l, hq, d])])[0];
}
