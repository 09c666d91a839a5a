/**
 * Whole-model loads: every tensor of a GGUF file or Hugging Face directory
 * into the canonical f32 host layout (weights.ts), through the same readers
 * a streaming upload uses (weights-reader.ts).
 */
import { ModelConfig, configFromGguf } from './config';
import { GgufFile } from './gguf';
import { HostWeights, assembleWeights } from './weights';
import { WeightReader, ggufWeightReader, hfWeightReader } from './weights-reader';

/** Every tensor, read through `reader` in load order. */
function readAll(config: ModelConfig, reader: WeightReader): HostWeights {
  return assembleWeights(config, (slot) =>
    slot.globalKey ? reader.global(slot.globalKey) : reader.layer(slot.layer!, slot.layerKey!)!,
  );
}

/**
 * Load the weights of a GGUF model into the canonical layout. GGUF lists
 * dims fastest-varying first, so a [Dm, F] GGUF tensor is HF's [F, Dm]
 * with the same bytes: only the dims are reversed. For the llama
 * architecture llama.cpp permutes Q and K rows (see unpermuteRopeRows);
 * qwen2/qwen3 files are converted without that permutation.
 */
export function loadGgufWeights(file: string | GgufFile, config?: ModelConfig): HostWeights {
  const gguf = typeof file === 'string' ? GgufFile.open(file) : file;
  try {
    const cfg = config ?? configFromGguf(gguf);
    return readAll(cfg, ggufWeightReader(gguf, cfg));
  } finally {
    if (typeof file === 'string') gguf.close();
  }
}

/** Load the weights of a Hugging Face directory (*.safetensors, f32/f16/bf16). */
export function loadHfWeights(dir: string, config: ModelConfig): HostWeights {
  const reader = hfWeightReader(dir, config);
  try {
    return readAll(config, reader);
  } finally {
    reader.close();
  }
}
