/**
 * Building a device array on the host: host tensors (Hugging Face
 * orientation) stacked over layers, transposed to [in, out] (or kept as rows
 * [out, in] for a matrix the device packs: upload.ts), fused (q|k|v,
 * gate|up) and stored in the weight type (f32, bf16, or int8 with one scale
 * per INT8_BLOCK input elements), then uploaded. The path of vectors,
 * safetensors and weights already in memory.
 */
import { DecoderWeightName, DecoderWeightSpec, HostLayerName, INT8_BLOCK, WeightType } from '../hlo';
import { HostWeights } from '../model/weights';
import { hostWeightsReader, WeightReader } from '../model/weights-reader';
import { DeviceBuffer } from '../runtime/device-buffer';
import { elementCount } from '../util/dims';
import { copyInto, f32ToBf16, quantizeBlocksInt8, transposeInto } from './convert';
import { Clock, Load, OnDevice } from './load-context';
import { RELEASE_BYTES, releaseHostCopies } from './release';

type DeviceData = Float32Array | Uint16Array | Int8Array;

/** One device array in host memory, and the scales of an int8 matrix. */
export interface Built {
  readonly data: DeviceData;
  readonly scales?: Float32Array;
}

/**
 * A host tensor [rows, in] (Hugging Face orientation: a row is an output
 * channel, its elements the input axis) in the matrix storage of `type`: f32
 * as is, bf16 bits (the file's own when it has them), or int8 with one scale
 * per INT8_BLOCK consecutive elements of a row (scales [rows, in / B]).
 */
function storeRows(
  type: WeightType,
  f32: () => Float32Array,
  bf16: () => Uint16Array | undefined,
  clock: Clock,
): Built {
  if (type === 'bf16') {
    const raw = clock.time('read', bf16);
    if (raw) return { data: raw };
  }
  const data = clock.time('read', f32);
  if (type === 'f32') return { data };
  return clock.time('convert', () =>
    type === 'bf16' ? { data: f32ToBf16(data) } : quantizeBlocksInt8(data, INT8_BLOCK),
  );
}

function emptyLike(type: WeightType, matrix: boolean, length: number): DeviceData {
  if (!matrix || type === 'f32') return new Float32Array(length);
  return type === 'bf16' ? new Uint16Array(length) : new Int8Array(length);
}

function layerPart(reader: WeightReader, l: number, name: HostLayerName, spec: DecoderWeightName): Float32Array {
  const t = reader.layer(l, name);
  if (!t) throw new Error(`weights: layer tensor ${name} is missing (needed for ${spec})`);
  return t.data;
}

/**
 * One device array (and its scales, for an int8 matrix), built from the
 * reader; for a per-layer array, only layers [from, to) when given.
 */
function buildArray(
  spec: DecoderWeightSpec & { readonly rows?: true },
  reader: WeightReader,
  type: WeightType,
  clock: Clock,
  from = 0,
  to = spec.dims[0],
): Built {
  const matrixType: WeightType = spec.matrix ? type : 'f32';
  if ('global' in spec.source) {
    const name = spec.source.global;
    // [V, Dm] in both layouts (scales [V, Dm / B]); a vector (the final norm) is f32.
    return storeRows(
      matrixType,
      () => reader.global(name).data,
      () => reader.bf16?.({ global: name }),
      clock,
    );
  }
  const parts = spec.source.layerParts;
  const slice = spec.dims.slice(1);
  const sliceSize = elementCount(slice);
  const layers = to - from;
  const out = emptyLike(matrixType, spec.matrix, layers * sliceSize);
  const width = slice[slice.length - 1];
  // int8: a layer's scales are [in / B, width], the slice's blocks of rows.
  const scaleSliceSize = sliceSize / INT8_BLOCK;
  const scales = matrixType === 'int8' ? new Float32Array(layers * scaleSliceSize) : undefined;
  for (let k = 0; k < layers; k++) {
    const l = from + k;
    for (const part of parts) {
      if (slice.length === 1) {
        const vector = clock.time('read', () => layerPart(reader, l, part.source, spec.name));
        (out as Float32Array).set(vector, k * sliceSize + part.offset);
        continue;
      }
      // A Hugging Face [out, in] matrix becomes columns [offset, offset + out) of the [in, width] slice;
      // int8 is quantized along HF rows first (the input axis), its [out, in / B] scales transposed the same way.
      // Where the spec is built as rows ([width, in]: a matrix packed on the device, upload.ts), it becomes
      // rows [offset, offset + out) as it lies.
      const inFeatures = spec.rows ? slice[1] : slice[0];
      const stored = storeRows(
        matrixType,
        () => layerPart(reader, l, part.source, spec.name),
        () => reader.bf16?.({ layer: l, name: part.source }),
        clock,
      );
      const rows = stored.data.length / inFeatures;
      if (spec.rows) {
        clock.time('convert', () => copyInto(stored.data, out, k * sliceSize + part.offset * inFeatures));
        continue;
      }
      clock.time('convert', () => {
        transposeInto(stored.data, rows, inFeatures, out, k * sliceSize, width, part.offset);
        if (stored.scales)
          transposeInto(stored.scales, rows, inFeatures / INT8_BLOCK, scales!, k * scaleSliceSize, width, part.offset);
      });
    }
  }
  return { data: out, ...(scales ? { scales } : {}) };
}

/** The device array `spec` describes, as host data (for tests and tools; uploads stream instead). */
export function deviceArray(
  spec: DecoderWeightSpec,
  weights: HostWeights | WeightReader,
  type: WeightType = 'f32',
): Built {
  return buildArray(spec, 'layer' in weights ? weights : hostWeightsReader(weights), type, new Clock());
}

/** Builds layers [from, to) of `spec` on the host and uploads them (and int8 scales). */
export async function buildAndUpload(
  spec: DecoderWeightSpec & { readonly rows?: true },
  load: Load,
  dims: readonly number[],
  scaleDims: readonly number[] | undefined,
  from?: number,
  to?: number,
): Promise<OnDevice> {
  const { client, clock } = load;
  let built: Built | null = buildArray(spec, load.reader, load.type, clock, from, to);
  const data = await clock.timeAsync('upload', () => client.upload(built!.data, dims, spec.elementType));
  let scales: DeviceBuffer | undefined;
  try {
    if (built.scales) scales = await clock.timeAsync('upload', () => client.upload(built!.scales!, scaleDims!, 'f32'));
  } catch (err) {
    data.dispose();
    throw err;
  }
  const large = built.data.byteLength >= RELEASE_BYTES || to !== undefined;
  built = null;
  // The device has its copy: free ours before the next array is built (on the CPU, device memory is host memory).
  if (large) clock.time('convert', releaseHostCopies);
  return { data, ...(scales ? { scales } : {}) };
}
