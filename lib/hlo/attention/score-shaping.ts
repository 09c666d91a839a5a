/**
 * How scores are masked and shaped in the StableHLO attention forms: the
 * masked score (MASKED_SCORE), sliding windows and soft-capped scores
 * (AttentionOptions.window, AttentionOptions.softcap).
 *
 * A window W (an s32 scalar, so one layer loop serves local and global
 * layers: a global layer passes NO_WINDOW) hides every key W or more
 * positions back: a token at position p sees keys at positions in
 * (p - W, p]. Positions are those of the standalone sequence query + item:
 * query token r is at r, item token j at prefixLength + j, so an item token
 * sees exactly the keys it would see in that sequence, window included.
 *
 * Soft-capping (Gemma 2) maps each score s to cap * tanh(s / cap) before
 * the mask, so a masked key's MASKED_SCORE must be added after the cap: with a cap
 * the forms compute raw scores and add the mask as a bias, instead of
 * folding it into the QK product.
 */
import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { HloBuildError, TensorType } from '../builder/types';

/**
 * The score of a masked key where masking is additive (a bias added to the
 * scores, or folded into the QK product): exp(MASKED_SCORE - finite max) == 0
 * in f32, so a masked key gets weight exactly 0. The one place it is written.
 */
export const MASKED_SCORE = -1e30;

/** The window of a layer without one: further back than any sequence. */
export const NO_WINDOW = 2 ** 30;

/** What a form needs to know about the scores beyond the scale. */
export interface ScoreShaping {
  /** s32 scalar: keys this many positions back or more are hidden. */
  readonly window?: HloValue;
  /** Scores become cap * tanh(score / cap) before masking. */
  readonly softcap?: number;
}

/** True when the scores need more than the plain forms do (a window or a cap). */
export function shapesScores(opts: ScoreShaping | undefined): boolean {
  return opts?.window !== undefined || opts?.softcap !== undefined;
}

/** Checks the window and cap of a call; returns them. */
export function checkShaping(op: string, opts: ScoreShaping | undefined): ScoreShaping {
  const w = opts?.window;
  if (w && (w.elementType !== 's32' || w.rank !== 0))
    throw new HloBuildError(`${op}: window must be an s32 scalar, got ${w.type}`);
  const cap = opts?.softcap;
  if (cap !== undefined && !(Number.isFinite(cap) && cap > 0))
    throw new HloBuildError(`${op}: softcap must be a positive number, got ${cap}`);
  return { ...(w ? { window: w } : {}), ...(cap !== undefined ? { softcap: cap } : {}) };
}

/** cap * tanh(scores / cap), or the scores when there is no cap. */
export function capScores(f: FunctionBuilder, scores: HloValue, softcap: number | undefined): HloValue {
  if (softcap === undefined) return scores;
  return f.multiply(f.tanh(f.divide(scores, softcap)), softcap);
}

/** 0 where visible, MASKED_SCORE where not: a bias to add to (capped) scores. */
export function maskBias(f: FunctionBuilder, visible: HloValue): HloValue {
  return f.select(visible, f.full(TensorType.f32(visible.dims), 0), f.full(TensorType.f32(visible.dims), MASKED_SCORE));
}

/** pred [..dims]: queryPosition - keyPosition < window (window undefined: all true, not emitted). */
function inWindow(f: FunctionBuilder, distance: HloValue, window: HloValue): HloValue {
  return f.lt(distance, f.broadcastInDim(window, distance.dims, []));
}

/**
 * Causal visibility with a window for query rows [r0, r0 + rows) against
 * keys [0, keys) of one sequence: pred [rows, keys], key c visible from row r
 * iff c <= r and r - c < window.
 */
export function causalWindowVisible(
  f: FunctionBuilder,
  rows: number,
  keys: number,
  r0: number,
  window: HloValue | undefined,
): HloValue {
  const row = f.iota(TensorType.s32([rows, keys]), 0);
  const query = r0 === 0 ? row : f.add(row, r0);
  const key = f.iota(TensorType.s32([rows, keys]), 1);
  const causal = f.le(key, query);
  return window ? f.and(causal, inWindow(f, f.subtract(query, key), window)) : causal;
}

/**
 * Which prefix keys item token j sees: pred [...lead, L, P], key i visible
 * iff i < prefixLength (when `validity`) and (prefixLength + j) - i < window.
 * `prefixLength` is s32[] or s32[G] (lead = [G]).
 */
export function prefixKeysVisible(
  f: FunctionBuilder,
  lead: readonly number[],
  l: number,
  p: number,
  prefixLength: HloValue,
  window: HloValue | undefined,
  validity: boolean,
): HloValue | undefined {
  if (!window && !validity) return undefined;
  const g = lead.length;
  const dims = [...lead, l, p];
  const axes = lead.map((_, i) => i);
  const key = f.iota(TensorType.s32(dims), g + 1);
  const plen = f.broadcastInDim(prefixLength, dims, axes);
  const valid = validity ? f.lt(key, plen) : undefined;
  if (!window) return valid;
  // The item token's position prefixLength + j, minus the key's.
  const distance = f.subtract(f.add(plen, f.iota(TensorType.s32(dims), g)), key);
  const near = inWindow(f, distance, window);
  return valid ? f.and(valid, near) : near;
}
