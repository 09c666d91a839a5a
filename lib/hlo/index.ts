/**
 * lib/hlo: a typed StableHLO text builder and the programs built with it
 * (docs/design.md "Rooms": its sub-rooms and what each may import).
 *
 * - builder/: `ModuleBuilder` -> `FunctionBuilder` (params, ops, regions,
 *   loops, return) -> MLIR text; `buildProgram` wraps that into an
 *   `HloProgram` with input/output descriptions and a hash;
 * - nn/: softmax, logsumexp, rmsNorm, RoPE (`nn`), the LM head;
 * - attention/: the attention forms, and the dispatchers that build the form
 *   they are given or refuse it (which form a pass runs is the scoring room's
 *   decision, lib/scoring/platform/attention-forms.ts);
 * - decoder/: the decoder programs (fused, prefill, extend) and the device
 *   weight layout.
 * programs.ts: `programs.maskedAttention`, `programs.lmHeadGather`; their
 * cores (`maskedAttentionDense`, `maskedAttentionFactored`, `lmHeadGather`,
 * ...) are exported for use inside bigger programs.
 * Other rooms import this index, not the files under it.
 * May import: util only (programs are text; nothing here touches a device).
 */

export {
  FunctionBuilder,
  HloBuildError,
  HloValue,
  ModuleBuilder,
  TensorType,
  buildProgram,
  tensorType,
} from './builder';
export type {
  ComparisonDirection,
  DotDims,
  ForLoopOptions,
  GatherDims,
  HloElementType,
  HloProgram,
  Operand,
  ProgramTensor,
} from './builder';
export { DUMP_ENV as HLO_DUMP_ENV } from './builder';
export * from './nn';
export * from './attention';
export * from './decoder';
export { programs } from './programs';
export type { DenseAttentionDims, FactoredAttentionDims, LmHeadGatherDims, MaskedAttentionDims } from './programs';
