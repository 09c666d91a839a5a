/**
 * lib/hlo/nn: the network pieces built of builder ops: softmax, logsumexp,
 * RMSNorm, SiLU, RoPE (functions.ts), and the LM head's label logprobs and
 * gather (lm-head.ts), and a projection through the addon's bf16 matmul
 * kernel (matmul-kernel.ts).
 * May import: builder.
 */

export * as nn from './functions';
export { LOG_NORMALIZER_LABEL, lmHeadGather, lmHeadLabelLogprobs } from './lm-head';
export type { LabelLogprobInputs, LmHeadGatherInputs, LmHeadOptions } from './lm-head';
export {
  MATMUL_BF16_RMSNORM_TARGET,
  MATMUL_BF16_SWIGLU_TARGET,
  MATMUL_BF16_TARGET,
  MATMUL_F32_RMSNORM_TARGET,
  MATMUL_F32_SWIGLU_TARGET,
  MATMUL_F32_TARGET,
  MATMUL_PANEL_COLUMNS,
  matmulBf16Kernel,
  matmulF32Kernel,
  matmulKernelTakes,
  packMatmulRows,
  packMatmulWeights,
  packedMatmulDims,
  packedMatmulDimsF32,
  packedMatmulForm,
  type PackedFor,
} from './matmul-kernel';
export type { MatmulPrologue, MatmulRows } from './matmul-kernel';
