/**
 * How the prefill's causal attention is computed: one choice among
 * equivalent forms (the same numbers within f32 rounding), made by the
 * scoring room's form chooser (lib/scoring/platform/attention-forms.ts) per platform
 * and per pass, or by the Scorer's `causalAttention` option, and written into
 * program names and cache keys by its tag. A form is built as asked or
 * refused with an HloBuildError: nothing here runs another form in its place.
 *
 * - square (causal-square.ts): all P x P scores, the upper half masked;
 * - chunked (causal-chunks.ts, tag `qc<chunks>`): query rows in chunks, each
 *   against the keys it can see; the CPU's default with the kernels off;
 * - kernel (causal-kernel.ts, tag `ffi`): the addon's fused kernel, one
 *   sequence, no window or soft cap;
 * - cudnn (cudnn-forms.ts, tags `cudnn`, `cudnnsim`): cuDNN's fused call on
 *   XLA GPU, no window or soft cap.
 */

import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { HloBuildError } from '../builder/types';
import { AttentionOptions } from './layout';
import { causalPrefixAttention } from './causal-square';
import { CausalChunks, causalPrefixAttentionChunked, checkCausalChunks } from './causal-chunks';
import { CAUSAL_KERNEL, CausalKernel, causalPrefixAttentionKernel } from './causal-kernel';
import { CudnnAttention, checkCudnnAttention, cudnnTag } from './cudnn-call';
import { causalPrefixAttentionCudnn } from './cudnn-forms';

/** How the prefill's causal attention is computed (docs/design.md "Platforms and precision": chosen per platform). */
export type CausalAttention =
  /** All P x P scores with the upper half masked (causalPrefixAttention). */
  | { readonly kind: 'square' }
  /** Query rows in `queryChunks` chunks, each against the keys it can see. */
  | CausalChunks
  /** The addon's fused kernel (causal-kernel.ts), where the runtime registered it. */
  | CausalKernel
  /** One cuDNN fused call (cudnn-forms.ts), or its StableHLO stand-in. */
  | CudnnAttention;

export const SQUARE_CAUSAL_ATTENTION: CausalAttention = Object.freeze({ kind: 'square' });

/** `square`, `qc4`, `ffi`, `cudnn` or `cudnnsim`: for options, benchmarks and logs. */
export function causalAttentionTag(a: CausalAttention): string {
  if (a.kind === 'cudnn') return cudnnTag(a);
  return a.kind === 'square' ? 'square' : a.kind === 'kernel' ? 'ffi' : `qc${a.queryChunks}`;
}

/**
 * The form's part of program names and in-memory cache keys: its tag, but `cffi` for the kernel,
 * whose tag `ffi` would read as the prefix kernel's in a name that carries both forms.
 */
export function causalAttentionNameTag(a: CausalAttention): string {
  return a.kind === 'kernel' || a.kind === 'cudnn' ? `c${causalAttentionTag(a)}` : causalAttentionTag(a);
}

/** The inverse of causalAttentionTag. */
export function parseCausalAttentionTag(tag: string): CausalAttention {
  if (tag === 'square') return SQUARE_CAUSAL_ATTENTION;
  if (tag === 'ffi') return CAUSAL_KERNEL;
  if (tag === 'cudnn' || tag === 'cudnnsim') return Object.freeze({ kind: 'cudnn', standIn: tag === 'cudnnsim' });
  const m = /^qc([1-9][0-9]*)$/.exec(tag);
  if (!m)
    throw new HloBuildError(
      `causal attention ${JSON.stringify(tag)} is not square, qc<chunks> ffi (the addon's kernel), cudnn or cudnnsim`,
    );
  return { kind: 'chunked', queryChunks: Number(m[1]) };
}

/** Checks a CausalAttention value from a caller; returns it. */
export function checkCausalAttention(a: CausalAttention): CausalAttention {
  if (a === null || typeof a !== 'object')
    throw new HloBuildError(
      `causal attention must be { kind: 'square' }, { kind: 'chunked', ` +
        `queryChunks }, { kind: 'kernel' } or { kind: 'cudnn' }, got ${String(a)}`,
    );
  if (a.kind === 'cudnn') return checkCudnnAttention(a, false);
  if (a.kind === 'square' || a.kind === 'kernel') return a;
  if (a.kind !== 'chunked')
    throw new HloBuildError(
      `causal attention kind must be 'square', 'chunked', 'kernel' or 'cudnn', ` +
        `got ${JSON.stringify((a as { kind?: unknown }).kind)}`,
    );
  return checkCausalChunks(a);
}

/**
 * The prefill's causal attention in the chosen form (default: the square); a form that cannot take this call refuses
 * it.
 */
export function causalPrefix(
  f: FunctionBuilder,
  q: HloValue,
  k: HloValue,
  v: HloValue,
  validLength: HloValue,
  form: CausalAttention = SQUARE_CAUSAL_ATTENTION,
  opts?: AttentionOptions,
): HloValue {
  const checked = checkCausalAttention(form);
  if (checked.kind === 'cudnn') return causalPrefixAttentionCudnn(f, q, k, v, validLength, checked, opts);
  if (checked.kind === 'kernel') return causalPrefixAttentionKernel(f, q, k, v, validLength, opts);
  return checked.kind === 'square'
    ? causalPrefixAttention(f, q, k, v, validLength, opts)
    : causalPrefixAttentionChunked(f, q, k, v, validLength, checked.queryChunks, opts);
}
