/**
 * lib/hlo: a typed StableHLO text builder and the programs built with it.
 *
 * Builder: `ModuleBuilder` -> `FunctionBuilder` (params, ops, regions, loops,
 * return) -> MLIR text. `buildProgram` wraps that into an `HloProgram` with
 * input/output descriptions and a hash. `nn` holds softmax/logsumexp/rmsNorm.
 * Programs: `programs.maskedAttention`, `programs.lmHeadGather`; their cores
 * (`maskedAttentionDense`, `maskedAttentionFactored`, `lmHeadGather`, ...) are
 * exported for use inside bigger programs (the transformer). The decoder's
 * device weight layout is declared in decoder-layout.ts.
 * May import: util only (programs are text; nothing here touches a device).
 */

export { HloBuildError, TensorType, tensorType } from './types';
export type { HloElementType } from './types';
export { HloValue } from './core';
export type { Operand } from './core';
export { FunctionBuilder, ModuleBuilder } from './builder';
export type { ComparisonDirection } from './ops-elementwise';
export type { GatherDims } from './ops-shape';
export type { DotDims } from './ops-dot';
export type { ForLoopOptions } from './control-flow';
export * as nn from './nn';
export { buildProgram } from './program';
export type { HloProgram, ProgramTensor } from './program';
export { DUMP_ENV as HLO_DUMP_ENV } from './dump';
export {
  causalPrefixAttention,
  denseSegmentMask,
  itemsOverPrefixAttention,
  maskedAttentionDense,
  maskedAttentionFactored,
} from './attention';
export type { AttentionOptions, FactoredAttentionInputs, ItemsOverPrefixInputs } from './attention';
export { itemsOverPrefixAttentionBlocked } from './attention-blocked';
export { itemsOverPrefix, parsePrefixAttentionTag, prefixAttentionTag } from './prefix-attention';
export type { PrefixAttention } from './prefix-attention';
export { itemsOverPrefixAttentionRows } from './attention-rows';
export type { RowChunking } from './attention-rows';
export { causalPrefix, causalPrefixAttentionChunked, causalAttentionTag, parseCausalAttentionTag } from './attention-causal-chunks';
export { causalPrefixAttentionKernel } from './attention-causal-ffi';
export type { CausalAttention } from './attention-causal-chunks';
export { LOG_NORMALIZER_LABEL, lmHeadGather, lmHeadLabelLogprobs } from './lm-head';
export type { LabelLogprobInputs, LmHeadGatherInputs, LmHeadOptions } from './lm-head';
export { programs } from './programs';
export type { DenseAttentionDims, FactoredAttentionDims, LmHeadGatherDims, MaskedAttentionDims } from './programs';
export { decoderExtend, decoderFused, decoderPrefill } from './transformer';
export type { ExtendShape, FactoredDecoderShape, PrefillShape } from './transformer';
export { decoderWeightSpecs, qkvWidth } from './decoder-layout';
export type { DecoderDims, DecoderWeightName, DecoderWeightSpec, HostGlobalName, HostLayerName, LayerPart, WeightSource } from './decoder-layout';
