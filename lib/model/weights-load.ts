import * as path from 'node:path';
import { ModelConfig, configFromGguf } from './config';
import { GgufFile } from './gguf';
import { SafetensorsShards } from './safetensors';
import { HostTensor, HostWeights, WeightsError, assembleWeights, checkDims, unpermuteRopeRows } from './weights';

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
    const unpermute = cfg.architecture === 'llama';
    return assembleWeights(cfg, (slot) => {
      const info = gguf.tensors.get(slot.gguf);
      if (!info) throw new WeightsError(`GGUF file ${path.basename(gguf.path)} has no tensor ${slot.gguf}, which a ${cfg.architecture} model needs`);
      const dims = [...info.dims].reverse();
      checkDims(`GGUF tensor ${slot.gguf}`, dims, slot.dims);
      let data = gguf.readTensorFloat32(slot.gguf);
      if (unpermute && slot.ropeHeads !== undefined) data = unpermuteRopeRows(data, slot.ropeHeads, dims.length > 1 ? dims[1] : 1);
      return { dims: slot.dims, data };
    });
  } finally {
    if (typeof file === 'string') gguf.close();
  }
}

/** Load the weights of a Hugging Face directory (*.safetensors, f32/f16/bf16). */
export function loadHfWeights(dir: string, config: ModelConfig): HostWeights {
  const shards = SafetensorsShards.open(dir);
  try {
    return assembleWeights(config, (slot): HostTensor => {
      if (!shards.has(slot.hf)) {
        throw new WeightsError(`${path.resolve(dir)} has no tensor ${slot.hf}, which a ${config.architecture} model needs`);
      }
      checkDims(`safetensors tensor ${slot.hf}`, shards.tensor(slot.hf).shape, slot.dims);
      return { dims: slot.dims, data: shards.readTensorFloat32(slot.hf) };
    });
  } finally {
    shards.close();
  }
}
