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
 *   kernel, only where the runtime registered it (Client.prefixAttentionKernel).
 */
import { FunctionBuilder } from './builder';
import { HloValue } from './core';
import { AttentionOptions, ItemsOverPrefixInputs, itemsOverPrefixAttention } from './attention';
import { KeyBlocking, checkKeyBlocking, itemsOverPrefixAttentionBlocked, keyBlockingTag, parseKeyBlockingTag } from './attention-blocked';
import { RowChunking, checkRowChunking, itemsOverPrefixAttentionRows, parseRowChunkingTag, rowChunkingTag } from './attention-rows';
import { PREFIX_KERNEL, PrefixKernel, itemsOverPrefixAttentionKernel } from './attention-ffi';
import { HloBuildError } from './types';

export type PrefixAttention = { readonly kind: 'joint' } | KeyBlocking | RowChunking | PrefixKernel;

export const JOINT_PREFIX_ATTENTION: PrefixAttention = Object.freeze({ kind: 'joint' });

/** A short stable name for program names and cache keys: `joint`, `kb256w`, `kb512u`, `ones_own`, `rc4w`, `ffi`. */
export function prefixAttentionTag(a: PrefixAttention): string {
  if (a.kind === 'kernel') return 'ffi';
  return a.kind === 'joint' ? 'joint' : a.kind === 'rows' ? rowChunkingTag(a) : keyBlockingTag(a);
}

/** The inverse of prefixAttentionTag. */
export function parsePrefixAttentionTag(tag: string): PrefixAttention {
  if (tag === 'joint') return JOINT_PREFIX_ATTENTION;
  if (tag === 'ffi') return PREFIX_KERNEL;
  const form = parseRowChunkingTag(tag) ?? parseKeyBlockingTag(tag);
  if (!form) {
    throw new HloBuildError(
      `prefix attention ${JSON.stringify(tag)} is not joint, kb<keys>w (while), kb<keys>u (unrolled), ones, rsum, rdot or rc<items><w|u>[s|d] (row forms, each optionally ending in _own) or ffi (the addon's kernel)`,
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
  throw new HloBuildError(`prefix attention kind must be 'joint', 'blocked', 'rows' or 'kernel', got ${JSON.stringify((a as { kind?: unknown }).kind)}`);
}

/** Items over a prefix in the chosen form (default: joint). */
export function itemsOverPrefix(f: FunctionBuilder, x: ItemsOverPrefixInputs, form: PrefixAttention = JOINT_PREFIX_ATTENTION, opts?: AttentionOptions): HloValue {
  const checked = checkPrefixAttention(form);
  if (checked.kind === 'rows') return itemsOverPrefixAttentionRows(f, x, checked, opts);
  if (checked.kind === 'blocked') return itemsOverPrefixAttentionBlocked(f, x, checked, opts);
  if (checked.kind === 'kernel') return itemsOverPrefixAttentionKernel(f, x, opts);
  return itemsOverPrefixAttention(f, x, opts);
}
