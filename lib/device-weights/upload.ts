/**
 * Weight upload: host weights (Hugging Face orientation) -> the device arrays
 * the decoder programs take, as lib/hlo/decoder-layout.ts declares them
 * (per-layer arrays stacked over layers, matrices [in, out], q|k|v and
 * gate|up fused). Uploaded once; every execution passes the same buffers.
 */
import { DecoderWeightName, DecoderWeightSpec, decoderWeightSpecs, HostGlobalName, HostLayerName } from '../hlo/decoder-layout';
import { ModelConfig } from '../model/config';
import { HostLayerWeights, HostTensor, HostWeights } from '../model/weights';
import { Client } from '../runtime/client';
import { DeviceBuffer } from '../runtime/device-buffer';
import { elementCount } from '../util/dims';

export interface DeviceWeights {
  /** In the order of decoderWeightSpecs(config). */
  readonly buffers: readonly DeviceBuffer[];
  readonly bytes: number;
  dispose(): void;
}

/** Writes the transpose of a row-major [rows, cols] matrix into out at `offset`, as [cols, rows]... */
function transposeInto(src: Float32Array, rows: number, cols: number, out: Float32Array, offset: number, outCols: number, colOffset: number): void {
  // out[offset + c * outCols + colOffset + r] = src[r * cols + c]
  for (let r = 0; r < rows; r++) {
    const rowBase = r * cols;
    for (let c = 0; c < cols; c++) out[offset + c * outCols + colOffset + r] = src[rowBase + c];
  }
}

// The layout names host tensors by the model room's keys: indexing with them
// type-checks that the two agree.
function globalTensor(weights: HostWeights, name: HostGlobalName): HostTensor {
  return weights[name];
}

function layerTensor(layer: HostLayerWeights, name: HostLayerName, spec: DecoderWeightName): HostTensor {
  const t = layer[name];
  if (!t) throw new Error(`weights: layer tensor ${name} is missing (needed for ${spec})`);
  return t;
}

/** One device array's host data, in device layout (decoder-layout.ts). */
export function deviceArray(spec: DecoderWeightSpec, weights: HostWeights): Float32Array {
  if ('global' in spec.source) return globalTensor(weights, spec.source.global).data;
  const parts = spec.source.layerParts;
  const slice = spec.dims.slice(1);
  const sliceSize = elementCount(slice);
  const out = new Float32Array(spec.dims[0] * sliceSize);
  weights.layers.forEach((layer, l) => {
    for (const part of parts) {
      const data = layerTensor(layer, part.source, spec.name).data;
      if (slice.length === 1) {
        out.set(data, l * sliceSize + part.offset);
      } else {
        // A Hugging Face [out, in] matrix becomes columns of the [in, width] slice.
        const [inFeatures, width] = slice;
        transposeInto(data, data.length / inFeatures, inFeatures, out, l * sliceSize, width, part.offset);
      }
    }
  });
  return out;
}

/** Uploads the weights in program parameter order. A tied LM head is uploaded once and passed twice. */
export async function uploadWeights(client: Client, config: ModelConfig, weights: HostWeights): Promise<DeviceWeights> {
  const specs = decoderWeightSpecs(config);
  const buffers: DeviceBuffer[] = [];
  const owned: DeviceBuffer[] = [];
  let bytes = 0;
  try {
    for (const spec of specs) {
      const tied = spec.tiedTo === undefined ? -1 : specs.findIndex((s) => s.name === spec.tiedTo);
      if (tied >= 0 && sameHostTensor(weights, spec, specs[tied])) {
        buffers.push(buffers[tied]);
        continue;
      }
      // Built one array at a time, so only one stacked host copy is alive.
      const buffer = await client.upload(deviceArray(spec, weights), spec.dims, 'f32');
      owned.push(buffer);
      buffers.push(buffer);
      bytes += buffer.byteLength;
    }
  } catch (err) {
    owned.forEach((b) => b.dispose());
    throw err;
  }
  return {
    buffers,
    bytes,
    dispose: () => owned.forEach((b) => b.dispose()),
  };
}

/** Both arrays come from the very same host tensor (a tied LM head is the embedding object). */
function sameHostTensor(weights: HostWeights, a: DecoderWeightSpec, b: DecoderWeightSpec): boolean {
  return 'global' in a.source && 'global' in b.source && globalTensor(weights, a.source.global) === globalTensor(weights, b.source.global);
}
