/**
 * How item tokens attend over the prefix keys: one choice among equivalent
 * forms (the same numbers within f32 rounding), made per platform (docs/design.md
 * "Platforms and precision"; lib/scoring/platform.ts) or by the Scorer's `prefixAttention`
 * option, and written into program names and cache keys by its tag.
 *
 * - joint (attention.ts): one softmax over all prefix and own keys; what
 *   every plugin runs;
 * - blocked (attention-blocked.ts): prefix keys in blocks with an online softmax;
 * - rows (attention-rows.ts): the joint softmax with fewer passes over the
 *   scores (the denominator from the value GEMM, the own keys' max as the
 *   shift, item-row chunks);
 * - kernel (attention-ffi.ts, tag `ffi`): a custom call to the addon's fused
 *   kernel, only where the runtime registered it (Client.prefixAttentionKernel);
 * - cudnn (attention-cudnn-forms.ts, tags `cudnn`, `cudnn_ownhlo`, each optionally
 *   ending in `_join`, and their stand-ins `cudnnsim`, `cudnnsim_ownhlo`, ...): cuDNN's
 *   fused attention on XLA GPU.
 */
import { FunctionBuilder } from './builder';
import { HloValue } from './core';
import { AttentionOptions, ItemsOverPrefixInputs, itemsOverPrefixAttention } from './attention';
import { KeyBlocking, checkKeyBlocking, itemsOverPrefixAttentionBlocked, keyBlockingTag, parseKeyBlockingTag } from './attention-blocked';
import { RowChunking, checkRowChunking, itemsOverPrefixAttentionRows, parseRowChunkingTag, rowChunkingTag } from './attention-rows';
import { PREFIX_KERNEL, PrefixKernel, itemsOverPrefixAttentionKernel } from './attention-ffi';
import { CudnnAttention, checkCudnnAttention, cudnnTag, parseCudnnTag } from './attention-cudnn';
import { itemsOverPrefixAttentionCudnn } from './attention-cudnn-forms';
import { HloBuildError } from './types';
import { shapesScores } from './attention-window';

/** The form windowed or soft-capped calls of the blocked form run instead (`ones_own`, the CPU's default). */
const SHAPED_BLOCKED_FALLBACK: RowChunking = Object.freeze({ kind: 'rows', loop: 'unrolled', denominator: 'values', shift: 'own' });

export type PrefixAttention = { readonly kind: 'joint' } | KeyBlocking | RowChunking | PrefixKernel | CudnnAttention;

export const JOINT_PREFIX_ATTENTION: PrefixAttention = Object.freeze({ kind: 'joint' });

/** A short stable name for program names and cache keys: `joint`, `kb256w`, `kb512u`, `ones_own`, `rc4w`, `ffi`, `cudnn`, `cudnn_ownhlo`, `cudnn_join`. */
export function prefixAttentionTag(a: PrefixAttention): string {
  if (a.kind === 'kernel') return 'ffi';
  if (a.kind === 'cudnn') return cudnnTag(a);
  return a.kind === 'joint' ? 'joint' : a.kind === 'rows' ? rowChunkingTag(a) : keyBlockingTag(a);
}

/** The inverse of prefixAttentionTag. */
export function parsePrefixAttentionTag(tag: string): PrefixAttention {
  if (tag === 'joint') return JOINT_PREFIX_ATTENTION;
  if (tag === 'ffi') return PREFIX_KERNEL;
  const cudnn = parseCudnnTag(tag);
  if (cudnn) return cudnn;
  const form = parseRowChunkingTag(tag) ?? parseKeyBlockingTag(tag);
  if (!form) {
    throw new HloBuildError(
      `prefix attention ${JSON.stringify(tag)} is not joint, kb<keys>w (while), kb<keys>u (unrolled), ones, rsum, rdot or rc<items><w|u>[s|d] (row forms, each optionally ending in _own) ffi (the addon's kernel), cudnn (cuDNN's fused attention), cudnnsim (its StableHLO stand-in), either ending in _ownhlo or _ownred (the own keys in StableHLO, with dots or without)`,
    );
  }
  return form;
}

/** Checks a PrefixAttention value from a caller; returns it. */
export function checkPrefixAttention(a: PrefixAttention): PrefixAttention {
  if (a === null || typeof a !== 'object') {
    throw new HloBuildError(`prefix attention must be { kind: 'joint' }, { kind: 'blocked', keyBlock, loop } or { kind: 'rows', itemsPerChunk?, loop, denominator, shift? } or { kind: 'kernel' }, got ${String(a)}`);
  }
  if (a.kind === 'joint') return a;
  if (a.kind === 'rows') return checkRowChunking(a);
  if (a.kind === 'blocked') return checkKeyBlocking(a);
  if (a.kind === 'kernel') return a;
  if (a.kind === 'cudnn') return checkCudnnAttention(a, true);
  throw new HloBuildError(`prefix attention kind must be 'joint', 'blocked', 'rows', 'kernel' or 'cudnn', got ${JSON.stringify((a as { kind?: unknown }).kind)}`);
}

/** Items over a prefix in the chosen form (default: joint). */
export function itemsOverPrefix(f: FunctionBuilder, x: ItemsOverPrefixInputs, form: PrefixAttention = JOINT_PREFIX_ATTENTION, opts?: AttentionOptions): HloValue {
  const checked = checkPrefixAttention(form);
  if (checked.kind === 'rows') return itemsOverPrefixAttentionRows(f, x, checked, opts);
  // The blocked form has no window or cap: such layers run the rows form (the CPU's default).
  if (checked.kind === 'blocked') return shapesScores(opts) ? itemsOverPrefixAttentionRows(f, x, SHAPED_BLOCKED_FALLBACK, opts) : itemsOverPrefixAttentionBlocked(f, x, checked, opts);
  if (checked.kind === 'kernel') return itemsOverPrefixAttentionKernel(f, x, opts);
  if (checked.kind === 'cudnn') return itemsOverPrefixAttentionCudnn(f, x, checked, opts);
  return itemsOverPrefixAttention(f, x, opts);
}
