/**
 * Weights read one tensor at a time: what a streaming upload needs, so that
 * only one host tensor (and the device array being built) is alive at once.
 * A reader over an open GGUF file or Hugging Face directory reads each
 * tensor when asked; one over HostWeights hands out what is already loaded.
 */
import * as path from 'node:path';
import { ModelConfig } from './config';
import { GgufFile } from './gguf';
import { GgmlType, ggmlTypeLayout } from './gguf-types';
import { SafetensorsShards } from './safetensors';
import {
  HostLayerWeights,
  HostTensor,
  HostWeights,
  LayerWeightName,
  WeightSlot,
  WeightsError,
  checkDims,
  unpermuteRopeRows,
  weightSlots,
} from './weights';

type GlobalWeightName = 'embedding' | 'finalNorm' | 'lmHead';

/** Names one tensor of a reader: a whole-model one or a layer's. */
type WeightSlotName =
  { readonly global: GlobalWeightName } | { readonly layer: number; readonly name: LayerWeightName };

/**
 * A matrix as the file stores it: rows of blocks of its ggml type, in
 * Hugging Face orientation (a row is an output channel, its elements the
 * input axis), RoPE rows already in Hugging Face order.
 */
export interface StoredMatrix {
  readonly type: GgmlType;
  readonly rows: number;
  /** Elements per row. */
  readonly rowLength: number;
  /** Bytes per row: rowLength / blockSize blocks. */
  readonly rowBytes: number;
  /** Reads the rows into `target` (rows * rowBytes bytes). */
  readInto(target: Uint8Array): void;
}

export interface WeightReader {
  /** The LM head is the embedding (tied): read it once. */
  readonly tied: boolean;
  /** A whole-model tensor as f32, in the canonical layout (weights.ts). */
  global(name: GlobalWeightName): HostTensor;
  /** Layer `layer`'s tensor as f32; undefined when this model has none (a bias of a Llama). */
  layer(layer: number, name: LayerWeightName): HostTensor | undefined;
  /**
   * The same tensor as bf16 bits when the file stores it so: a bf16 upload
   * then needs no f32 copy. Undefined when the file holds another type.
   */
  bf16?(slot: WeightSlotName): Uint16Array | undefined;
  /**
   * A matrix's stored blocks, for decoding on the device (GGUF files):
   * undefined for a vector, a missing tensor, or a format without blocks.
   */
  stored?(slot: WeightSlotName): StoredMatrix | undefined;
  /** Closes the file (a reader over HostWeights has none). Idempotent. */
  close(): void;
}

/** A reader over weights already in memory. */
export function hostWeightsReader(weights: HostWeights): WeightReader {
  return {
    tied: weights.lmHead === weights.embedding,
    global: (name) => weights[name],
    layer: (l, name) => (weights.layers[l] as HostLayerWeights)[name],
    close: () => undefined,
  };
}

/** Reads slots by the name the file uses; `bf16` when the format can hand out raw bf16 bits. */
interface SlotSource {
  read(slot: WeightSlot): HostTensor;
  bf16?(slot: WeightSlot): Uint16Array | undefined;
  stored?(slot: WeightSlot): StoredMatrix | undefined;
  close(): void;
}

function slotReader(config: ModelConfig, source: SlotSource): WeightReader {
  const globals = new Map<string, WeightSlot>();
  const layers = new Map<string, WeightSlot>();
  for (const slot of weightSlots(config)) {
    if (slot.globalKey) globals.set(slot.globalKey, slot);
    else layers.set(`${slot.layer}.${slot.layerKey}`, slot);
  }
  const globalSlot = (name: GlobalWeightName): WeightSlot =>
    globals.get(config.tiedEmbeddings && name === 'lmHead' ? 'embedding' : name)!;
  const slotOf = (which: WeightSlotName): WeightSlot | undefined =>
    'global' in which ? globalSlot(which.global) : layers.get(`${which.layer}.${which.name}`);
  return {
    tied: config.tiedEmbeddings,
    global: (name) => source.read(globalSlot(name)),
    layer: (l, name) => {
      const slot = layers.get(`${l}.${name}`);
      return slot && source.read(slot);
    },
    ...(source.bf16 ? { bf16: (which) => slotOf(which) && source.bf16!(slotOf(which)!) } : {}),
    ...(source.stored ? { stored: (which) => slotOf(which) && source.stored!(slotOf(which)!) } : {}),
    close: () => source.close(),
  };
}

/** A reader over an open GGUF file (closed with the reader when `owned`). */
export function ggufWeightReader(gguf: GgufFile, config: ModelConfig, owned = false): WeightReader {
  const unpermute = config.architecture === 'llama';
  return slotReader(config, {
    read: (slot) => {
      const info = gguf.tensors.get(slot.gguf);
      if (!info)
        throw new WeightsError(
          `GGUF file ${path.basename(gguf.path)} has no tensor ${slot.gguf}, ` +
            `which a ${config.architecture} model needs`,
        );
      const dims = [...info.dims].reverse();
      checkDims(`GGUF tensor ${slot.gguf}`, dims, slot.dims);
      let data = gguf.readTensorFloat32(slot.gguf);
      if (unpermute && slot.ropeHeads !== undefined)
        data = unpermuteRopeRows(data, slot.ropeHeads, dims.length > 1 ? dims[1] : 1);
      return { dims: slot.dims, data };
    },
    stored: (slot) => {
      const info = gguf.tensors.get(slot.gguf);
      const layout = info && ggmlTypeLayout(info.type);
      if (!info || !layout || slot.dims.length !== 2) return undefined;
      const dims = [...info.dims].reverse();
      checkDims(`GGUF tensor ${slot.gguf}`, dims, slot.dims);
      const [rows, rowLength] = slot.dims;
      if (rowLength % layout.blockSize !== 0) return undefined;
      const rowBytes = (rowLength / layout.blockSize) * layout.bytesPerBlock;
      const ropeHeads = unpermute ? slot.ropeHeads : undefined;
      return {
        type: info.type,
        rows,
        rowLength,
        rowBytes,
        readInto: (target) => {
          if (ropeHeads === undefined) return gguf.readTensorBytesInto(slot.gguf, target);
          // Whole rows move, so the file's blocks are permuted as the f32 rows would be.
          const bytes = gguf.readTensorBytes(slot.gguf);
          target.set(
            unpermuteRopeRows(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), ropeHeads, rowBytes),
          );
        },
      };
    },
    close: () => {
      if (owned) gguf.close();
    },
  });
}

/** A reader over a Hugging Face directory's *.safetensors (closed with the reader). */
export function hfWeightReader(dir: string, config: ModelConfig): WeightReader {
  const shards = SafetensorsShards.open(dir);
  const check = (slot: WeightSlot): void => {
    if (!shards.has(slot.hf))
      throw new WeightsError(
        `${path.resolve(dir)} has no tensor ${slot.hf}, which a ${config.architecture} model needs`,
      );
    checkDims(`safetensors tensor ${slot.hf}`, shards.tensor(slot.hf).shape, slot.dims);
  };
  return slotReader(config, {
    read: (slot) => {
      check(slot);
      const data = shards.readTensorFloat32(slot.hf);
      // Gemma's norms: the file holds w, the multiplier is 1 + w (f32, as transformers computes it).
      if (slot.hfPlusOne) for (let i = 0; i < data.length; i++) data[i] = Math.fround(1 + data[i]);
      return { dims: slot.dims, data };
    },
    bf16: (slot) => {
      check(slot);
      // A norm's bits are not its multiplier's: those go through read().
      return slot.hfPlusOne ? undefined : shards.readTensorBf16Bits(slot.hf);
    },
    close: () => shards.close(),
  });
}
