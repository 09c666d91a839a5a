/**
 * lib/model: model files. GGUF and safetensors readers, dequantization, the
 * model config, the canonical f32 host weights and the tokenizer adapter.
 * Reads files only: putting weights on the device is lib/device-weights.
 * May import: util, and assets (to fetch the default model on first use).
 */
export * from './default-model';
export { GgufFile } from './gguf';
export { GgufMetadata } from './gguf-metadata';
export { GgmlType, GgufValueType, GgufError, DEQUANTIZABLE_TYPES, ggmlTypeName, ggmlTypeLayout } from './gguf-types';
export type { GgufArray, GgufScalar, GgufValue, GgufTensorInfo, GgmlTypeLayout } from './gguf-types';
export { dequantize, tensorByteLength } from './dequantize';
export { SafetensorsFile, SafetensorsShards, SafetensorsError } from './safetensors';
export type { SafetensorsTensorInfo } from './safetensors';
export {
  ARCHITECTURES,
  HF_MODEL_TYPES,
  ModelConfigError,
  configFromGguf,
  configFromHf,
  validateConfig,
} from './config';
export type { Architecture, GemmaParts, HfConfigOptions, ModelConfig, SlidingWindow } from './config';
export { WeightsError, weightSlots, unpermuteRopeRows } from './weights';
export type { HostTensor, HostLayerWeights, HostWeights, WeightSlot } from './weights';
export { loadGgufWeights, loadHfWeights } from './weights-load';
export { NORMALIZER_FOLD, Tokenizer, TokenizerError } from './tokenizer';
export { TokenizerPool } from './tokenizer-pool';
export type { TokenizerOptions } from './tokenizer';
export { tokenizerJsonFromGguf } from './gguf-tokenizer';
export { loadModel, loadModelInfo, openModel } from './load';
export type { LoadedModel, OpenedModel, StoredMatrixType } from './load';
export { hostWeightsReader, ggufWeightReader, hfWeightReader } from './weights-reader';
export type { WeightReader } from './weights-reader';
