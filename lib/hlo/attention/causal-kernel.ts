/**
 * The prefill's causal attention through the addon's fused kernel: one custom
 * call to `pjrt_score_causal_attention` (native/kernels/prefix_attention_ffi.cc). The
 * kernel is the items-over-prefix kernel with items of one token whose prefix
 * is the sequence itself, row i seeing keys 0..i-1 as prefix and key i as its
 * own: key blocks in cache with an online softmax, blocks past a row tile's
 * last key skipped. The same numbers as causalPrefixAttention within f32
 * rounding; rows at or past the valid length get 0.
 *
 * Like the prefix kernel it exists only where the runtime registered it
 * (Client.prefixAttentionKernel covers both targets); the Scorer refuses this
 * form elsewhere. The kernel takes one sequence and no sliding window or soft
 * cap: a grouped call (a cross-request pass) or a windowed or capped layer is
 * refused (the scoring room's form chooser, lib/scoring/platform/attention-forms.ts,
 * picks a StableHLO form for such passes).
 */

import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { AttentionOptions, causalPrefixLayout, resolveScale } from './layout';
import { HloBuildError, TensorType } from '../builder/types';
import { shapesScores } from './score-shaping';

/** The fused kernel (a `CausalAttention` kind, causal.ts; tag `ffi`). */
export interface CausalKernel {
  readonly kind: 'kernel';
}

export const CAUSAL_KERNEL: CausalKernel = Object.freeze({ kind: 'kernel' });

/** The custom-call target the addon registers (native/kernels/prefix_attention_ffi.h). */
const CAUSAL_ATTENTION_TARGET = 'pjrt_score_causal_attention';

/** The same kernel in bf16 on the CPU's matrix units, where the function's dots run in bf16 (prefix-kernel.ts). */
const CAUSAL_ATTENTION_BF16_TARGET = 'pjrt_score_causal_attention_bf16';

/** q [T, Hq, D], k and v [T, Hkv, D], validLength s32 [] -> [T, Hq, D]; one sequence only. */
export function causalPrefixAttentionKernel(
  f: FunctionBuilder,
  q: HloValue,
  k: HloValue,
  v: HloValue,
  validLength: HloValue,
  opts?: AttentionOptions,
): HloValue {
  const { lead, hq, d, p } = causalPrefixLayout('causalPrefixAttentionKernel', q, k, v, validLength);
  if (lead.length)
    throw new HloBuildError(
      `causal attention 'ffi' (the addon's kernel) takes one sequence (validLength s32[]), got validLength ` +
        `${validLength.type}: ` +
        `a pass of several queries runs a StableHLO form (lib/scoring/platform/attention-forms.ts)`,
    );
  if (shapesScores(opts))
    throw new HloBuildError(
      "causal attention 'ffi' (the addon's kernel) takes no sliding window or soft cap: " +
        'such a model runs a StableHLO form (lib/scoring/platform/attention-forms.ts)',
    );
  if (p === 0) return f.full(TensorType.f32([0, hq, d]), 0);
  // The score scale goes into q here, as in the StableHLO forms: the kernel takes no attributes.
  const scaled = f.multiply(q, resolveScale(opts, d));
  const target = f.fn.dotOperands === 'bf16' ? CAUSAL_ATTENTION_BF16_TARGET : CAUSAL_ATTENTION_TARGET;
  return f.customCall(target, [scaled, k, v, validLength], [TensorType.f32([p, hq, d])])[0];
}
