/**
 * lib/hlo/decoder: the Llama-family (and Gemma) decoder programs, fused,
 * prefill and extend (pass-programs.ts), built of the layers (layers.ts), the
 * readouts (readout.ts) and the attention forms they are given (options.ts);
 * the device weight layout (layout.ts); Gemma's parts (gemma.ts).
 * May import: builder, nn, attention.
 */

export { decoderExtend, decoderFused, decoderPrefill } from './pass-programs';
export type { ExtendShape, FactoredDecoderShape, PrefillShape } from './pass-programs';
export type { DecoderOptions } from './options';
export { kernelMatrices, packedForm } from './options';
export { BF16_MATRICES, INT8_BLOCK, decoderWeightSpecs, int8Unsupported, qkvWidth } from './layout';
export type {
  Bf16Matrices,
  DecoderDims,
  DecoderWeightName,
  DecoderWeightSpec,
  HostGlobalName,
  HostLayerName,
  KernelMatrixName,
  LayerPart,
  MatrixName,
  WeightSource,
  WeightType,
} from './layout';
