/**
 * What every attention form shares: the options (scale, window, cap), the
 * head layout of q, k and v, the group axes of a call of several queries,
 * the checks of a causal-prefix or items-over-prefix call's inputs, and the
 * items' output layout.
 */
import { sameDims } from '../../util/dims';
import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { HloBuildError, TensorType, formatDims } from '../builder/types';
import { ScoreShaping } from './score-shaping';

/**
 * How scores are made: the scale, and (score-shaping.ts) a sliding
 * window and soft-capping. The window and cap are the seam the fused
 * kernels would take them through: today a kernel form given either runs
 * refuses them (prefix-kernel.ts, causal-kernel.ts).
 */
export interface AttentionOptions extends ScoreShaping {
  /** Score scale; default 1/sqrt(headDim). */
  scale?: number;
}

interface Heads {
  hq: number;
  hkv: number;
  group: number;
  d: number;
}

/** Checks q [..., Hq, D] against k, v [..., Hkv, D] and returns the head layout. */
export function headLayout(op: string, q: HloValue, k: HloValue, v: HloValue): Heads {
  for (const [name, x] of [
    ['q', q],
    ['k', k],
    ['v', v],
  ] as const) {
    if (x.elementType !== 'f32') throw new HloBuildError(`${op}: ${name} must be f32, got ${x.type}`);
  }
  const hq = q.dims[q.rank - 2];
  const d = q.dims[q.rank - 1];
  const hkv = k.dims[k.rank - 2];
  if (!sameDims(k.dims, v.dims))
    throw new HloBuildError(`${op}: k ${formatDims(k.dims)} and v ${formatDims(v.dims)} must have the same dims`);
  if (k.dims[k.rank - 1] !== d)
    throw new HloBuildError(`${op}: head dims differ: q has D=${d}, k has D=${k.dims[k.rank - 1]}`);
  if (hkv === 0 || hq % hkv !== 0)
    throw new HloBuildError(`${op}: query heads (${hq}) must be a multiple of kv heads (${hkv})`);
  return { hq, hkv, group: hq / hkv, d };
}

export function expectDims(op: string, name: string, x: HloValue, dims: readonly number[], elementType = 'f32'): void {
  if (x.elementType !== elementType || !sameDims(x.dims, dims)) {
    throw new HloBuildError(`${op}: ${name} must be ${elementType}${formatDims(dims)}, got ${x.type}`);
  }
}

export function resolveScale(opts: AttentionOptions | undefined, d: number): number {
  const scale = opts?.scale ?? 1 / Math.sqrt(d);
  if (!Number.isFinite(scale)) throw new HloBuildError(`attention: scale must be a finite number, got ${scale}`);
  return scale;
}

/**
 * The leading group axes of a grouped call, read from its length operand: a
 * scalar length means one query (no group axis), s32[G] means G independent
 * queries (each with its own items) in one call. Every other dim and axis of
 * the call shifts by the number of group axes, and each batched dot gains
 * them as its first batch dims, so the ungrouped call emits exactly the ops
 * it always did.
 */
function groupAxes(op: string, length: HloValue): { lead: number[]; axes: number[] } {
  if (length.elementType !== 's32' || length.rank > 1)
    throw new HloBuildError(`${op}: lengths must be s32[] or s32[G], got ${length.type}`);
  return { lead: [...length.dims], axes: length.dims.map((_, i) => i) };
}

/** Checks the inputs of a causal prefix attention (grouped or not) and returns its sizes and group axes. */
export function causalPrefixLayout(
  op: string,
  q: HloValue,
  k: HloValue,
  v: HloValue,
  validLength: HloValue,
): Heads & { lead: number[]; axes: number[]; p: number } {
  const { lead, axes } = groupAxes(op, validLength);
  const g = lead.length;
  if (q.rank !== g + 3 || k.rank !== g + 3) {
    throw new HloBuildError(
      `${op}: q and k must be [${g ? 'G, ' : ''}P, H, D], got ${formatDims(q.dims)} and ${formatDims(k.dims)}`,
    );
  }
  const heads = headLayout(op, q, k, v);
  const p = q.dims[g];
  expectDims(op, 'q', q, [...lead, p, heads.hq, heads.d]);
  expectDims(op, 'k', k, [...lead, p, heads.hkv, heads.d]);
  return { ...heads, lead, axes, p };
}

export interface ItemsOverPrefixInputs {
  /** Item queries [N, L, Hq, D] (grouped: [G, N, L, Hq, D]). */
  itemQ: HloValue;
  /** Item keys and values [N, L, Hkv, D] (grouped: [G, N, L, Hkv, D]). */
  itemK: HloValue;
  itemV: HloValue;
  /** Item lengths s32 [N] (grouped: [G, N]); tokens j >= length are padding (output 0). */
  itemLengths: HloValue;
  /**
   * Shared prefix keys and values [P, Hkv, D] (the query's, or a cache; grouped: [G, P, Hkv, D], one query per group).
   */
  prefixK: HloValue;
  prefixV: HloValue;
  /** Number of valid prefix keys, s32 scalar (grouped: s32[G]). */
  prefixLength: HloValue;
}

/** The sizes of an items-over-prefix call, and its group axes (none for one query). */
interface ItemsOverPrefixLayout extends Heads {
  lead: number[];
  axes: number[];
  n: number;
  l: number;
  p: number;
}

/** Checks the inputs of an items-over-prefix attention (grouped or not) and returns its sizes. */
export function itemsOverPrefixLayout(op: string, x: ItemsOverPrefixInputs): ItemsOverPrefixLayout {
  const { lead, axes } = groupAxes(op, x.prefixLength);
  const g = lead.length;
  const grid = g ? 'G, N, L, H, D' : 'N, L, H, D';
  if (x.itemQ.rank !== g + 4 || x.itemK.rank !== g + 4) {
    throw new HloBuildError(
      `${op}: item q and k must be [${grid}], got ${formatDims(x.itemQ.dims)} and ${formatDims(x.itemK.dims)}`,
    );
  }
  const heads = headLayout(op, x.itemQ, x.itemK, x.itemV);
  const { hq, hkv, d } = heads;
  const [n, l] = x.itemQ.dims.slice(g);
  expectDims(op, 'itemQ', x.itemQ, [...lead, n, l, hq, d]);
  expectDims(op, 'itemK', x.itemK, [...lead, n, l, hkv, d]);
  if (x.prefixK.rank !== g + 3)
    throw new HloBuildError(`${op}: prefix k must be [${g ? 'G, ' : ''}P, Hkv, D], got ${formatDims(x.prefixK.dims)}`);
  const p = x.prefixK.dims[g];
  expectDims(op, 'prefixK', x.prefixK, [...lead, p, hkv, d]);
  expectDims(op, 'prefixV', x.prefixV, [...lead, p, hkv, d]);
  expectDims(op, 'itemLengths', x.itemLengths, [...lead, n], 's32');
  return { ...heads, lead, axes, n, l, p };
}

/**
 * An items-over-prefix result [..., Hkv, N, L, G, D] (any form) as
 * [..., N, L, Hq, D], tokens first, with padding tokens (j >= len[n]), which
 * computed finite garbage, set to 0. `g` leading group axes.
 */
export function itemOutputs(f: FunctionBuilder, out: HloValue, itemLengths: HloValue, g: number): HloValue {
  const axes = Array.from({ length: g }, (_, i) => i);
  const lead = out.dims.slice(0, g);
  const [hkv, n, l, group, d] = out.dims.slice(g);
  const realRow = f.lt(
    f.iota(TensorType.s32([...lead, n, l]), g + 1),
    f.broadcastInDim(itemLengths, [...lead, n, l], [...axes, g]),
  );
  const tokensFirst = f.transpose(out, [...axes, g + 1, g + 2, g, g + 3, g + 4]); // [..., N, L, Hkv, G, D]
  const zeroed = f.select(f.broadcastInDim(realRow, tokensFirst.dims, [...axes, g, g + 1]), tokensFirst, 0);
  return f.reshape(zeroed, [...lead, n, l, hkv * group, d]);
}

/** [..., D] -> [..., D + 1] with a last column of ones: a value GEMM against it also sums its weights. */
export function withOnesColumn(f: FunctionBuilder, v: HloValue): HloValue {
  return f.concatenate([v, f.full(TensorType.f32([...v.dims.slice(0, -1), 1]), 1)], v.rank - 1);
}
