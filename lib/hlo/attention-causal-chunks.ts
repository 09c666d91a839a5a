/**
 * Causal attention within the prefix (the prefill's), with the query rows in
 * chunks: chunk c of rows [r0, r1) scores only keys [0, r1), the keys it can
 * see, instead of all P. The joint form (causalPrefixAttention) computes the
 * whole [P, P] square and masks its upper half; with n chunks the score,
 * softmax and value work is (n + 1) / 2n of that (62.5% for 4 chunks).
 * Every row's softmax is still one pass over all its visible keys, with the
 * causal mask as an additive -1e30 bias, so a masked key has weight exactly 0
 * and the numbers equal the joint form's within f32 rounding.
 */

import { FunctionBuilder } from './builder';
import { HloValue } from './core';
import { AttentionOptions, MASKED_SCORE, causalPrefixAttention, expectDims, headLayout, resolveScale } from './attention';
import { HloBuildError, TensorType, formatDims } from './types';

/** How the prefill's causal attention is computed (SPEC.md section 12: chosen per platform). */
export type CausalAttention =
  /** All P x P scores with the upper half masked (causalPrefixAttention). */
  | { readonly kind: 'square' }
  /** Query rows in `queryChunks` chunks, each against the keys it can see. */
  | { readonly kind: 'chunked'; readonly queryChunks: number };

export const SQUARE_CAUSAL_ATTENTION: CausalAttention = Object.freeze({ kind: 'square' });

/** `square` or `qc4`: for program names and cache keys. */
export function causalAttentionTag(a: CausalAttention): string {
  return a.kind === 'square' ? 'square' : `qc${a.queryChunks}`;
}

/** The inverse of causalAttentionTag. */
export function parseCausalAttentionTag(tag: string): CausalAttention {
  if (tag === 'square') return SQUARE_CAUSAL_ATTENTION;
  const m = /^qc([1-9][0-9]*)$/.exec(tag);
  if (!m) throw new HloBuildError(`causal attention ${JSON.stringify(tag)} is not square or qc<chunks>`);
  return { kind: 'chunked', queryChunks: Number(m[1]) };
}

/** The prefill's causal attention in the chosen form (default: the square). */
export function causalPrefix(f: FunctionBuilder, q: HloValue, k: HloValue, v: HloValue, validLength: HloValue, form: CausalAttention = SQUARE_CAUSAL_ATTENTION, opts?: AttentionOptions): HloValue {
  const checked = checkCausalAttention(form);
  return checked.kind === 'square' ? causalPrefixAttention(f, q, k, v, validLength, opts) : causalPrefixAttentionChunked(f, q, k, v, validLength, checked.queryChunks, opts);
}

/** Checks a CausalAttention value from a caller; returns it. */
export function checkCausalAttention(a: CausalAttention): CausalAttention {
  if (a === null || typeof a !== 'object') throw new HloBuildError(`causal attention must be { kind: 'square' } or { kind: 'chunked', queryChunks }, got ${String(a)}`);
  if (a.kind === 'square') return a;
  if (a.kind !== 'chunked') throw new HloBuildError(`causal attention kind must be 'square' or 'chunked', got ${JSON.stringify((a as { kind?: unknown }).kind)}`);
  if (!Number.isSafeInteger(a.queryChunks) || a.queryChunks < 1) throw new HloBuildError(`causal attention queryChunks must be a positive integer, got ${String(a.queryChunks)}`);
  return a;
}

/**
 * causalPrefixAttention with the query rows in chunks: q [P, Hq, D], k and v
 * [P, Hkv, D], validLength s32 scalar -> [P, Hq, D] (rows >= validLength: 0).
 * More chunks than rows gives one row per chunk.
 */
export function causalPrefixAttentionChunked(f: FunctionBuilder, q: HloValue, k: HloValue, v: HloValue, validLength: HloValue, queryChunks: number, opts?: AttentionOptions): HloValue {
  const op = 'causalPrefixAttentionChunked';
  if (q.rank !== 3 || k.rank !== 3) throw new HloBuildError(`${op}: q and k must be [P, H, D], got ${formatDims(q.dims)} and ${formatDims(k.dims)}`);
  const { hq, hkv, group, d } = headLayout(op, q, k, v);
  const p = q.dims[0];
  expectDims(op, 'k', k, [p, hkv, d]);
  expectDims(op, 'validLength', validLength, [], 's32');
  checkCausalAttention({ kind: 'chunked', queryChunks });

  if (p === 0) return f.full(TensorType.f32([0, hq, d]), 0);
  const qScaled = f.multiply(q, resolveScale(opts, d));
  const kT = f.transpose(k, [1, 2, 0]); // [Hkv, D, Pk]
  const vT = f.transpose(v, [1, 0, 2]); // [Hkv, Pk, D]
  const chunks = Math.min(queryChunks, p);
  const bounds = Array.from({ length: chunks + 1 }, (_, c) => Math.round((c * p) / chunks));
  const outs: HloValue[] = [];
  for (let c = 0; c < chunks; c++) {
    const [r0, r1] = [bounds[c], bounds[c + 1]];
    const rows = r1 - r0;
    if (rows === 0) continue;
    // Rows [r0, r1) against keys [0, r1), one GEMM per kv head as in the square form.
    const qc = f.reshape(f.transpose(f.reshape(f.slice(qScaled, [r0, 0, 0], [r1, hq, d]), [rows, hkv, group, d]), [1, 0, 2, 3]), [hkv, rows * group, d]);
    const kc = f.slice(kT, [0, 0, 0], [hkv, d, r1]);
    const vc = f.slice(vT, [0, 0, 0], [hkv, r1, d]);
    // Row r0 + i sees key j iff j <= r0 + i; built [rows, keys] and broadcast over the group.
    const causal = f.le(f.iota(TensorType.s32([rows, r1]), 1), f.add(f.iota(TensorType.s32([rows, r1]), 0), r0));
    const bias = f.select(causal, f.full(TensorType.f32([rows, r1]), 0), f.full(TensorType.f32([rows, r1]), MASKED_SCORE));
    const causalBias = f.reshape(f.broadcastInDim(bias, [rows, group, r1], [0, 2]), [rows * group, r1]);
    const scores = f.add(
      f.dotGeneral(qc, kc, { lhsBatch: [0], rhsBatch: [0], lhsContract: [2], rhsContract: [1] }),
      f.broadcastInDim(causalBias, [hkv, rows * group, r1], [1, 2]),
    ); // [Hkv, rows*G, keys]
    const max = f.reduceMax(scores, [2]);
    const weights = f.exponential(f.subtract(scores, f.expandReduced(max, scores.dims, [2])));
    const denominator = f.reduceSum(weights, [2]);
    const numerator = f.dotGeneral(weights, vc, { lhsBatch: [0], rhsBatch: [0], lhsContract: [2], rhsContract: [1] }); // [Hkv, rows*G, D]
    const out = f.divide(numerator, f.expandReduced(denominator, numerator.dims, [2]));
    outs.push(f.reshape(f.transpose(f.reshape(out, [hkv, rows, group, d]), [1, 0, 2, 3]), [rows, hq, d]));
  }
  const attended = outs.length === 1 ? outs[0] : f.concatenate(outs, 0);
  const real = f.lt(f.iota(TensorType.s32([p]), 0), f.broadcastScalar(validLength, [p]));
  return f.select(f.broadcastInDim(real, [p, hq, d], [0]), attended, 0);
}
