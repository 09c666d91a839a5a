/**
 * A layer's projection through the addon's bf16 matmul kernel: one custom call to
 * `pjrt_score_matmul_bf16` (native/kernels/matmul_bf16_ffi.h). It computes what a bf16 x bf16 -> f32
 * dot of the same operands computes, both rounded to bf16 to nearest even, accumulated in f32:
 *
 *   out[t, n] = sum over k of bf16(x[t, k]) * bf16(w[layer, k, n])
 *
 * where x may first be computed from the call's input row by a prologue, in f32, as the program
 * would compute it before the dot (functions.ts): the layer's RMSNorm (`rmsNorm`: its stacked
 * weights [Ly, K] and eps), or the SwiGLU activation of a gate | up input [T, 2K] (`swiglu`).
 * The weights go in stacked, with the layer's index (clamped like a dynamic slice's start), so no
 * per-layer slice of them is ever copied; the kernel rounds and packs each 32-column panel once a
 * call (docs/performance.md, "The projections' kernel"). It exists only where the runtime
 * registered the addon's kernels (Client.prefixAttentionKernel); the scoring room asks for it
 * through a platform fact (lib/scoring/platform/profiles.ts, matmulKernel).
 */

import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { HloBuildError, TensorType } from '../builder/types';

/** The custom-call targets the addon registers (native/kernels/matmul_bf16_ffi.h). */
export const MATMUL_BF16_TARGET = 'pjrt_score_matmul_bf16';
export const MATMUL_BF16_RMSNORM_TARGET = 'pjrt_score_matmul_bf16_rmsnorm';
export const MATMUL_BF16_SWIGLU_TARGET = 'pjrt_score_matmul_bf16_swiglu';

/** What the kernel computes from its input before rounding it. */
export type MatmulPrologue = { readonly kind: 'rmsNorm'; readonly weights: HloValue; readonly eps: number } | { readonly kind: 'swiglu' };

/** The weight element types the kernel reads: f32, or bf16 bits typed u16 or bf16. */
const WEIGHT_TYPES: readonly string[] = ['f32', 'u16', 'bf16'];

/** Whether the kernel reads weights of this element type. */
export function matmulKernelTakes(elementType: string): boolean {
  return WEIGHT_TYPES.includes(elementType);
}

/**
 * x f32 [T, K] (after the prologue; [T, 2K] before `swiglu`) . stacked [Ly, K, N] at `layer` (s32 [])
 * -> f32 [T, N], in bf16 with f32 sums.
 */
export function matmulBf16Kernel(f: FunctionBuilder, x: HloValue, stacked: HloValue, layer: HloValue, prologue?: MatmulPrologue): HloValue {
  if (stacked.dims.length !== 3 || !matmulKernelTakes(stacked.elementType)) {
    throw new HloBuildError(`matmulBf16Kernel: weights must be [Ly, K, N] of f32, u16 or bf16, got ${stacked.type}`);
  }
  const [layers, k, n] = stacked.dims;
  const width = prologue?.kind === 'swiglu' ? 2 * k : k;
  if (x.elementType !== 'f32' || x.dims.length !== 2 || x.dims[1] !== width) {
    throw new HloBuildError(`matmulBf16Kernel: x must be f32 [T, ${width}]${prologue?.kind === 'swiglu' ? ' (gate | up)' : ''} for weights ${stacked.type}, got ${x.type}`);
  }
  if (layer.elementType !== 's32' || layer.dims.length !== 0) throw new HloBuildError(`matmulBf16Kernel: layer must be s32[], got ${layer.type}`);
  const result = [TensorType.f32([x.dims[0], n])];
  if (prologue?.kind === 'rmsNorm') {
    const w = prologue.weights;
    if (w.elementType !== 'f32' || w.dims.length !== 2 || w.dims[0] !== layers || w.dims[1] !== k) {
      throw new HloBuildError(`matmulBf16Kernel: RMSNorm weights must be f32 [${layers}, ${k}], got ${w.type}`);
    }
    if (!(prologue.eps >= 0)) throw new HloBuildError(`matmulBf16Kernel: RMSNorm eps must be a non-negative number, got ${prologue.eps}`);
    return f.customCall(MATMUL_BF16_RMSNORM_TARGET, [x, w, f.scalar(prologue.eps), stacked, layer], result)[0];
  }
  const target = prologue?.kind === 'swiglu' ? MATMUL_BF16_SWIGLU_TARGET : MATMUL_BF16_TARGET;
  return f.customCall(target, [x, stacked, layer], result)[0];
}
