/**
 * A layer's projection through the addon's bf16 matmul kernel: one custom call to
 * `pjrt_score_matmul_bf16` (native/kernels/matmul_bf16_ffi.h). It computes what a bf16 x bf16 -> f32
 * dot of the same operands computes, both rounded to bf16 to nearest even, accumulated in f32:
 *
 *   out[t, n] = sum over k of bf16(x[t, k]) * bf16(w[layer, k, n])
 *
 * where x may first be computed from the call's input row by a prologue, in f32, as the program
 * would compute it before the dot (functions.ts): the layer's RMSNorm (`rmsNorm`: its stacked
 * weights [Ly, K] and eps), or the activation of a gate | up input [T, 2K]: SwiGLU (`swiglu`) or Gemma's
 * GeGLU, the tanh GELU (`geglu`).
 * The weights go in stacked, with the layer's index (clamped like a dynamic slice's start), so no
 * per-layer slice of them is ever copied: either as the matrices [Ly, K, N], which the kernel rounds
 * and packs into 32-column panels every call, or already packed (`packMatmulWeights`, run once when a
 * model's weights load: docs/performance.md, "The projections' kernels"). It exists only where the runtime
 * registered the addon's kernels (Client.prefixAttentionKernel); the scoring room asks for it
 * through a platform fact (lib/scoring/platform/profiles.ts, matmulKernel).
 */

import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { HloBuildError, TensorType } from '../builder/types';
import { bf16Bits } from './functions';

/** The custom-call targets the addon registers (native/kernels/matmul_bf16_ffi.h). */
export const MATMUL_BF16_TARGET = 'pjrt_score_matmul_bf16';
export const MATMUL_BF16_RMSNORM_TARGET = 'pjrt_score_matmul_bf16_rmsnorm';
export const MATMUL_BF16_SWIGLU_TARGET = 'pjrt_score_matmul_bf16_swiglu';
const MATMUL_BF16_GEGLU_TARGET = 'pjrt_score_matmul_bf16_geglu';
/**
 * The f32 kernel's targets: the same operands and prologues, f32 products and sums, f32 weights [Ly, K, N] or packed.
 */
export const MATMUL_F32_TARGET = 'pjrt_score_matmul_f32';
export const MATMUL_F32_RMSNORM_TARGET = 'pjrt_score_matmul_f32_rmsnorm';
export const MATMUL_F32_SWIGLU_TARGET = 'pjrt_score_matmul_f32_swiglu';
const MATMUL_F32_GEGLU_TARGET = 'pjrt_score_matmul_f32_geglu';

/** What the kernel computes from its input before rounding it. */
export type MatmulPrologue =
  | { readonly kind: 'rmsNorm'; readonly weights: HloValue; readonly eps: number }
  | { readonly kind: 'swiglu' }
  | { readonly kind: 'geglu' };

/** A kernel's custom-call target per prologue (none: the plain product). */
type KernelTargets = Readonly<Record<'none' | MatmulPrologue['kind'], string>>;
const BF16_TARGETS: KernelTargets = {
  none: MATMUL_BF16_TARGET,
  rmsNorm: MATMUL_BF16_RMSNORM_TARGET,
  swiglu: MATMUL_BF16_SWIGLU_TARGET,
  geglu: MATMUL_BF16_GEGLU_TARGET,
};
const F32_TARGETS: KernelTargets = {
  none: MATMUL_F32_TARGET,
  rmsNorm: MATMUL_F32_RMSNORM_TARGET,
  swiglu: MATMUL_F32_SWIGLU_TARGET,
  geglu: MATMUL_F32_GEGLU_TARGET,
};

/** The prologue reads a gate | up input [T, 2K]. */
function gated(prologue: MatmulPrologue | undefined): boolean {
  return prologue?.kind === 'swiglu' || prologue?.kind === 'geglu';
}

/** The weight element types the kernel reads: f32, or bf16 bits typed u16 or bf16. */
const WEIGHT_TYPES: readonly string[] = ['f32', 'u16', 'bf16'];

/** Columns of a packed panel (native/kernels/matmul_bf16.h, kMatmulPanelColumns). */
export const MATMUL_PANEL_COLUMNS = 32;

/**
 * The packed form of stacked matrices [Ly, K, N]: [Ly, ceil(N / 32), ceil(K / 2), 32, 2] bf16 bits,
 * panel j of layer l holding w[l][2p + e][32j + c] at [l, j, p, c, e] (0 past K and N): the pairs of
 * rows vdpbf16ps multiplies, in the order the kernel's tiles read them.
 */
export function packedMatmulDims(dims: readonly number[]): number[] {
  if (dims.length !== 3) throw new HloBuildError(`packedMatmulDims: want [Ly, K, N], got [${dims.join(', ')}]`);
  const [layers, k, n] = dims;
  return [layers, Math.ceil(n / MATMUL_PANEL_COLUMNS), Math.ceil(k / 2), MATMUL_PANEL_COLUMNS, 2];
}

/**
 * The f32 kernel's packed form of stacked f32 matrices [Ly, K, N]: [Ly, ceil(N / 32), K, 32], panel j
 * of layer l holding w[l][k][32j + c] at [l, j, k, c] (0 past N): each panel one contiguous run, the
 * order the kernel's tiles stream it.
 */
export function packedMatmulDimsF32(dims: readonly number[]): number[] {
  if (dims.length !== 3) throw new HloBuildError(`packedMatmulDimsF32: want [Ly, K, N], got [${dims.join(', ')}]`);
  const [layers, k, n] = dims;
  return [layers, Math.ceil(n / MATMUL_PANEL_COLUMNS), k, MATMUL_PANEL_COLUMNS];
}

/**
 * A packed form, by what it holds: bf16 values in pairs of rows (the bf16 kernel's form, which the f32
 * kernel also reads, widening them), or f32 panels (the f32 kernel's alone).
 */
export type PackedFor = 'bf16' | 'f32';

/** The packed form of stacked matrices [Ly, K, N] for a kernel: its dims and element type. */
export function packedMatmulForm(
  dims: readonly number[],
  packedFor: PackedFor,
): { dims: number[]; elementType: 'u16' | 'f32' } {
  return packedFor === 'f32'
    ? { dims: packedMatmulDimsF32(dims), elementType: 'f32' }
    : { dims: packedMatmulDims(dims), elementType: 'u16' };
}

/**
 * Stacked f32 matrices as the f32 kernel's panels (packedMatmulDimsF32), from [Ly, K, N] or, with
 * `rows`, from the checkpoint's rows [Ly, N, K]: padding, one reshape and one transpose, the values
 * untouched.
 */
function packMatmulF32(f: FunctionBuilder, stacked: HloValue, rows: boolean): HloValue {
  const name = rows ? 'packMatmulRows' : 'packMatmulWeights';
  if (stacked.dims.length !== 3 || stacked.elementType !== 'f32')
    throw new HloBuildError(
      `${name}: the f32 kernel's weights must be f32 [Ly, ${rows ? 'N, K' : 'K, N'}], got ${stacked.type}`,
    );
  const [layers, k, n] = rows ? [stacked.dims[0], stacked.dims[2], stacked.dims[1]] : stacked.dims;
  const [, panels] = packedMatmulDimsF32([layers, k, n]);
  const wide = MATMUL_PANEL_COLUMNS * panels;
  if (rows) {
    // [Ly, N, K] -> [Ly, 32 * panels, K] (zeros past N) -> [Ly, panels, 32, K] -> [Ly, panels, K, 32].
    const padded = f.pad(stacked, 0, [0, 0, 0], [0, wide - n, 0]);
    return f.transpose(f.reshape(padded, [layers, panels, MATMUL_PANEL_COLUMNS, k]), [0, 1, 3, 2]);
  }
  // [Ly, K, N] -> [Ly, K, 32 * panels] (zeros past N) -> [Ly, K, panels, 32] -> [Ly, panels, K, 32].
  const padded = f.pad(stacked, 0, [0, 0, 0], [0, 0, wide - n]);
  return f.transpose(f.reshape(padded, [layers, k, panels, MATMUL_PANEL_COLUMNS]), [0, 2, 1, 3]);
}

/**
 * Stacked matrices [Ly, K, N] (f32, or bf16 bits typed u16 or bf16) -> their packed form for the bf16
 * kernel (u16, packedMatmulDims), f32 rounded to bf16 to nearest even as the kernel rounds them, or,
 * `packedFor` 'f32', f32 matrices as the f32 kernel's panels: padding, one reshape and one
 * transpose, so a reviewer can read the layout off it.
 */
export function packMatmulWeights(f: FunctionBuilder, stacked: HloValue, packedFor: PackedFor = 'bf16'): HloValue {
  if (packedFor === 'f32') return packMatmulF32(f, stacked, false);
  if (stacked.dims.length !== 3 || !matmulKernelTakes(stacked.elementType)) {
    throw new HloBuildError(`packMatmulWeights: weights must be [Ly, K, N] of f32, u16 or bf16, got ${stacked.type}`);
  }
  const [layers, k, n] = stacked.dims;
  const [, panels, pairs] = packedMatmulDims(stacked.dims);
  const bits =
    stacked.elementType === 'f32'
      ? bf16Bits(f, stacked)
      : stacked.elementType === 'bf16'
        ? f.bitcastConvert(stacked, 'u16')
        : stacked;
  // [Ly, K, N] -> [Ly, 2 * pairs, 32 * panels] (zeros past K and N)
  // -> [Ly, pairs, 2, panels, 32] -> [Ly, panels, pairs, 32, 2].
  const padded = f.pad(bits, 0, [0, 0, 0], [0, 2 * pairs - k, MATMUL_PANEL_COLUMNS * panels - n]);
  const split = f.reshape(padded, [layers, pairs, 2, panels, MATMUL_PANEL_COLUMNS]);
  return f.transpose(split, [0, 3, 1, 4, 2]);
}

/**
 * The same packed forms from the matrices as Hugging Face stores them, rows of outputs [Ly, N, K]
 * (f32, u16 or bf16; f32 for the f32 kernel): the load stacks a checkpoint's rows as they lie (a
 * copy, no transpose on the host) and this program moves them: pad, one reshape, one transpose.
 */
export function packMatmulRows(f: FunctionBuilder, rows: HloValue, packedFor: PackedFor = 'bf16'): HloValue {
  if (packedFor === 'f32') return packMatmulF32(f, rows, true);
  if (rows.dims.length !== 3 || !matmulKernelTakes(rows.elementType)) {
    throw new HloBuildError(`packMatmulRows: weights must be [Ly, N, K] of f32, u16 or bf16, got ${rows.type}`);
  }
  const [layers, n, k] = rows.dims;
  const [, panels, pairs] = packedMatmulDims([layers, k, n]);
  const bits =
    rows.elementType === 'f32' ? bf16Bits(f, rows) : rows.elementType === 'bf16' ? f.bitcastConvert(rows, 'u16') : rows;
  // [Ly, N, K] -> [Ly, 32 * panels, 2 * pairs] (zeros past N and K)
  // -> [Ly, panels, 32, pairs, 2] -> [Ly, panels, pairs, 32, 2].
  const padded = f.pad(bits, 0, [0, 0, 0], [0, MATMUL_PANEL_COLUMNS * panels - n, 2 * pairs - k]);
  const split = f.reshape(padded, [layers, panels, MATMUL_PANEL_COLUMNS, pairs, 2]);
  return f.transpose(split, [0, 1, 3, 2, 4]);
}

/** Whether the kernel reads weights of this element type. */
export function matmulKernelTakes(elementType: string): boolean {
  return WEIGHT_TYPES.includes(elementType);
}

/**
 * x f32 [T, K] (after the prologue; [T, 2K] before `swiglu` or `geglu`) . stacked [Ly, K, N] at `layer` (s32 [])
 * -> f32 [T, N], in bf16 with f32 sums. Packed weights (u16 or bf16, packedMatmulDims) round K and N
 * up, so `columns` gives N (K is x's).
 */
export function matmulBf16Kernel(
  f: FunctionBuilder,
  x: HloValue,
  stacked: HloValue,
  layer: HloValue,
  prologue?: MatmulPrologue,
  columns?: number,
  rows: MatmulRows = {},
): HloValue {
  const packed = stacked.dims.length === 5;
  if (
    !(packed
      ? stacked.elementType === 'u16' || stacked.elementType === 'bf16'
      : stacked.dims.length === 3 && matmulKernelTakes(stacked.elementType))
  ) {
    throw new HloBuildError(
      `matmulBf16Kernel: weights must be [Ly, K, N] of f32, u16 or bf16, ` +
        `or packed [Ly, N / 32, K / 2, 32, 2] of u16 or bf16, got ${stacked.type}`,
    );
  }
  const gate = gated(prologue);
  const layers = stacked.dims[0];
  const k = packed ? (gate ? x.dims[1] / 2 : x.dims[1]) : stacked.dims[1];
  const n = packed ? columns : stacked.dims[2];
  if (
    packed &&
    (n === undefined ||
      !Number.isInteger(n) ||
      n < 0 ||
      !Number.isInteger(k) ||
      packedMatmulDims([layers, k, n]).some((d, i) => d !== stacked.dims[i]))
  ) {
    throw new HloBuildError(
      `matmulBf16Kernel: packed weights ${stacked.type} do not hold [${layers}, K, ` +
        `N] for x ${x.type}${gate ? ' (gate | up)' : ''} and ${columns ?? 'no'} columns`,
    );
  }
  checkRowsAndLayer('matmulBf16Kernel', x, gate ? 2 * k : k, gate, stacked, layer);
  return kernelCall(f, x, stacked, layer, prologue, n as number, BF16_TARGETS, rows);
}

/**
 * x f32 [T, K] (after the prologue; [T, 2K] before `swiglu` or `geglu`) . stacked f32 [Ly, K, N] at `layer`
 * (s32 []) -> f32 [T, N], f32 products and sums (the f32 kernel: native/kernels/matmul_f32.h), each
 * output one FMA chain over k. Packed weights round N up, so `columns` gives N: f32 panels
 * (packedMatmulDimsF32), or a bf16 checkpoint's matrices as the bf16 kernel's pairs (packedMatmulDims,
 * u16 or bf16), which the kernel widens to f32 exactly, so the products are those of the f32 matrices.
 */
export function matmulF32Kernel(
  f: FunctionBuilder,
  x: HloValue,
  stacked: HloValue,
  layer: HloValue,
  prologue?: MatmulPrologue,
  rows: MatmulRows = {},
  columns?: number,
): HloValue {
  const pairs = stacked.dims.length === 5 && (stacked.elementType === 'u16' || stacked.elementType === 'bf16');
  const packed = pairs || (stacked.dims.length === 4 && stacked.elementType === 'f32');
  if (!(packed || (stacked.dims.length === 3 && stacked.elementType === 'f32')))
    throw new HloBuildError(
      `matmulF32Kernel: weights must be f32 [Ly, K, N], packed f32 [Ly, N / 32, K, 32] ` +
        `or packed bf16 pairs [Ly, N / 32, K / 2, 32, 2] of u16 or bf16, got ${stacked.type}`,
    );
  const gate = gated(prologue);
  // Pair panels round K up too: x says it.
  const k = pairs ? (gate ? x.dims[1] / 2 : x.dims[1]) : packed ? stacked.dims[2] : stacked.dims[1];
  const n = packed ? columns : stacked.dims[2];
  const form = pairs ? packedMatmulDims : packedMatmulDimsF32;
  if (
    packed &&
    (n === undefined ||
      !Number.isInteger(n) ||
      n < 0 ||
      !Number.isInteger(k) ||
      form([stacked.dims[0], k, n]).some((d, i) => d !== stacked.dims[i]))
  ) {
    throw new HloBuildError(
      `matmulF32Kernel: packed weights ${stacked.type} do not hold [${stacked.dims[0]}, ` +
        `${pairs ? 'K' : k}, N] for x ${x.type}${gate ? ' (gate | up)' : ''} and ${columns ?? 'no'} columns`,
    );
  }
  checkRowsAndLayer('matmulF32Kernel', x, gate ? 2 * k : k, gate, stacked, layer);
  return kernelCall(f, x, stacked, layer, prologue, n as number, F32_TARGETS, rows);
}

/** x f32 [T, width] (gate | up where `gate`) and the layer s32 [] of a kernel product, or `op`'s error. */
function checkRowsAndLayer(
  op: string,
  x: HloValue,
  width: number,
  gate: boolean,
  stacked: HloValue,
  layer: HloValue,
): void {
  if (x.elementType !== 'f32' || x.dims.length !== 2 || x.dims[1] !== width) {
    throw new HloBuildError(
      `${op}: x must be f32 [T, ${width}]${gate ? ' (gate | up)' : ''} for weights ${stacked.type}, got ${x.type}`,
    );
  }
  if (layer.elementType !== 's32' || layer.dims.length !== 0)
    throw new HloBuildError(`${op}: layer must be s32[], got ${layer.type}`);
}

/**
 * Beside its product's operands, a call may take the pass's live rows (s32 [T]: rows marked 0 are
 * padding, never computed, their product 0: native/kernels/matmul_rows.h) and a residual f32 [T, N]
 * added to its result (the layer's residual add as the kernel's epilogue: residual + product, as XLA
 * adds them).
 */
export interface MatmulRows {
  live?: HloValue;
  residual?: HloValue;
}

/** The custom call of a checked kernel product, to its prologue's target. */
function kernelCall(
  f: FunctionBuilder,
  x: HloValue,
  stacked: HloValue,
  layer: HloValue,
  prologue: MatmulPrologue | undefined,
  n: number,
  targets: KernelTargets,
  rows: MatmulRows,
): HloValue {
  const t = x.dims[0];
  const result = [TensorType.f32([t, n])];
  const { live, residual } = rows;
  if (live && (live.elementType !== 's32' || live.dims.length !== 1 || live.dims[0] !== t)) {
    throw new HloBuildError(`matmul kernel: live rows must be s32 [${t}] for x ${x.type}, got ${live.type}`);
  }
  if (
    residual &&
    (residual.elementType !== 'f32' || residual.dims.length !== 2 || residual.dims[0] !== t || residual.dims[1] !== n)
  ) {
    throw new HloBuildError(
      `matmul kernel: the residual must be f32 [${t}, ${n}] (the result's shape), got ${residual.type}`,
    );
  }
  const extra = [...(live ? [live] : []), ...(residual ? [residual] : [])];
  if (prologue?.kind === 'rmsNorm') {
    const w = prologue.weights;
    const [layers] = stacked.dims;
    const k = x.dims[1];
    if (w.elementType !== 'f32' || w.dims.length !== 2 || w.dims[0] !== layers || w.dims[1] !== k) {
      throw new HloBuildError(`matmul kernel: RMSNorm weights must be f32 [${layers}, ${k}], got ${w.type}`);
    }
    if (!(prologue.eps >= 0))
      throw new HloBuildError(`matmul kernel: RMSNorm eps must be a non-negative number, got ${prologue.eps}`);
    return f.customCall(targets.rmsNorm, [x, w, f.scalar(prologue.eps), stacked, layer, ...extra], result)[0];
  }
  return f.customCall(targets[prologue?.kind ?? 'none'], [x, stacked, layer, ...extra], result)[0];
}
