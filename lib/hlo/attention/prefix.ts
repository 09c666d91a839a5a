/**
 * How item tokens attend over the prefix keys: one choice among equivalent
 * forms (the same numbers within f32 rounding), made by the scoring room's
 * form chooser (lib/scoring/platform/attention-forms.ts) per platform and per pass, or
 * by the Scorer's `prefixAttention` option, and written into program names
 * and cache keys by its tag. A form is built as asked or refused with an
 * HloBuildError: nothing here runs another form in its place.
 *
 * - joint (prefix-joint.ts): one softmax over all prefix and own keys; what
 *   every plugin runs;
 * - rows (prefix-rows.ts, tag `ones_own`): the joint softmax with fewer
 *   passes over the scores (the denominator from the value GEMM, the own
 *   keys' max as the shift); the CPU's default with the kernels off;
 * - kernel (prefix-kernel.ts, tag `ffi`): a custom call to the addon's fused
 *   kernel, only where the runtime registered it (Client.prefixAttentionKernel);
 *   one query, no window or soft cap;
 * - cudnn (cudnn-forms.ts, tags `cudnn`, `cudnn_ownhlo`, each optionally
 *   ending in `_join`, and their stand-ins `cudnnsim`, `cudnnsim_ownhlo`, ...):
 *   cuDNN's fused attention on XLA GPU; no window or soft cap.
 */
import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { HloBuildError } from '../builder/types';
import { AttentionOptions, ItemsOverPrefixInputs } from './layout';
import { itemsOverPrefixAttention } from './prefix-joint';
import { ROWS_FORM, ROWS_TAG, RowsForm, checkRowsForm, itemsOverPrefixAttentionRows } from './prefix-rows';
import { PREFIX_KERNEL, PrefixKernel, itemsOverPrefixAttentionKernel } from './prefix-kernel';
import { CudnnAttention, checkCudnnAttention, cudnnTag, parseCudnnTag } from './cudnn-call';
import { itemsOverPrefixAttentionCudnn } from './cudnn-forms';

export type PrefixAttention = { readonly kind: 'joint' } | RowsForm | PrefixKernel | CudnnAttention;

export const JOINT_PREFIX_ATTENTION: PrefixAttention = Object.freeze({ kind: 'joint' });

/**
 * A short stable name for program names and cache keys: `joint`, `ones_own`, `ffi`, `cudnn`, `cudnn_ownhlo`,
 * `cudnn_join`, ...
 */
export function prefixAttentionTag(a: PrefixAttention): string {
  if (a.kind === 'kernel') return 'ffi';
  if (a.kind === 'cudnn') return cudnnTag(a);
  return a.kind === 'rows' ? ROWS_TAG : 'joint';
}

/** The inverse of prefixAttentionTag. */
export function parsePrefixAttentionTag(tag: string): PrefixAttention {
  if (tag === 'joint') return JOINT_PREFIX_ATTENTION;
  if (tag === ROWS_TAG) return ROWS_FORM;
  if (tag === 'ffi') return PREFIX_KERNEL;
  const cudnn = parseCudnnTag(tag);
  if (cudnn) return cudnn;
  throw new HloBuildError(
    `prefix attention ${JSON.stringify(tag)} is not joint, ${ROWS_TAG} (the rows form), ffi (the addon's kernel), ` +
      `cudnn (cuDNN's fused attention) or cudnnsim (its StableHLO stand-in), ` +
      `either ending in _ownhlo (the own keys in StableHLO) and then optionally _join`,
  );
}

/** Checks a PrefixAttention value from a caller; returns it. */
export function checkPrefixAttention(a: PrefixAttention): PrefixAttention {
  if (a === null || typeof a !== 'object') {
    throw new HloBuildError(
      `prefix attention must be { kind: 'joint' }, { kind: 'rows' }, ` +
        `{ kind: 'kernel' } or { kind: 'cudnn', ... }, got ${String(a)}`,
    );
  }
  if (a.kind === 'joint' || a.kind === 'kernel') return a;
  if (a.kind === 'rows') return checkRowsForm(a);
  if (a.kind === 'cudnn') return checkCudnnAttention(a, true);
  throw new HloBuildError(
    `prefix attention kind must be 'joint', 'rows', 'kernel' or 'cudnn', ` +
      `got ${JSON.stringify((a as { kind?: unknown }).kind)}`,
  );
}

/** Items over a prefix in the chosen form (default: joint); a form that cannot take this call refuses it. */
export function itemsOverPrefix(
  f: FunctionBuilder,
  x: ItemsOverPrefixInputs,
  form: PrefixAttention = JOINT_PREFIX_ATTENTION,
  opts?: AttentionOptions,
): HloValue {
  const checked = checkPrefixAttention(form);
  if (checked.kind === 'rows') return itemsOverPrefixAttentionRows(f, x, opts);
  if (checked.kind === 'kernel') return itemsOverPrefixAttentionKernel(f, x, opts);
  if (checked.kind === 'cudnn') return itemsOverPrefixAttentionCudnn(f, x, checked, opts);
  return itemsOverPrefixAttention(f, x, opts);
}
