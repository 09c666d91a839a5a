/**
 * A layer's projection through the addon's bf16 matmul kernel: one custom call to
 * `pjrt_score_matmul_bf16` (native/kernels/matmul_bf16_ffi.h). It computes what a bf16 x bf16 -> f32
 * dot of the same operands computes, both rounded to bf16 to nearest even, accumulated in f32:
 *
 *   out[t, n] = sum over k of bf16(x[t, k]) * bf16(w[layer, k, n])
 *
 * The weights go in stacked, with the layer's index (clamped like a dynamic slice's start), so no
 * per-layer slice of them is ever copied; the kernel rounds and packs each 32-column panel once a
 * call (docs/performance.md, "The projections' kernel"). It exists only where the runtime
 * registered the addon's kernels (Client.prefixAttentionKernel); the scoring room asks for it
 * through a platform fact (lib/scoring/platform/profiles.ts, matmulKernel).
 */

import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { HloBuildError, TensorType } from '../builder/types';

/** The custom-call target the addon registers (native/kernels/matmul_bf16_ffi.h). */
export const MATMUL_BF16_TARGET = 'pjrt_score_matmul_bf16';

/** The weight element types the kernel reads: f32, or bf16 bits typed u16 or bf16. */
const WEIGHT_TYPES: readonly string[] = ['f32', 'u16', 'bf16'];

/** Whether the kernel reads weights of this element type. */
export function matmulKernelTakes(elementType: string): boolean {
  return WEIGHT_TYPES.includes(elementType);
}

/** x f32 [T, K] . stacked [Ly, K, N] at `layer` (s32 []) -> f32 [T, N], in bf16 with f32 sums. */
export function matmulBf16Kernel(f: FunctionBuilder, x: HloValue, stacked: HloValue, layer: HloValue): HloValue {
  const [t, k] = x.dims;
  if (x.elementType !== 'f32' || x.dims.length !== 2) throw new HloBuildError(`matmulBf16Kernel: x must be f32 [T, K], got ${x.type}`);
  if (stacked.dims.length !== 3 || stacked.dims[1] !== k || !matmulKernelTakes(stacked.elementType)) {
    throw new HloBuildError(`matmulBf16Kernel: weights must be [Ly, ${k}, N] of f32, u16 or bf16, got ${stacked.type}`);
  }
  if (layer.elementType !== 's32' || layer.dims.length !== 0) throw new HloBuildError(`matmulBf16Kernel: layer must be s32[], got ${layer.type}`);
  return f.customCall(MATMUL_BF16_TARGET, [x, stacked, layer], [TensorType.f32([t, stacked.dims[2]])])[0];
}
