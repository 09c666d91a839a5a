/**
 * Weight upload: host weights (Hugging Face orientation) -> the device arrays
 * the decoder programs take, as lib/hlo/decoder-layout.ts declares them
 * (per-layer arrays stacked over layers, matrices [in, out], q|k|v and
 * gate|up fused), in the weight type asked for (f32, bf16, int8 with
 * one scale per INT8_BLOCK input elements). Uploaded once; every execution passes the
 * same buffers.
 *
 * Streaming: tensors come from a WeightReader one at a time; each device
 * array is built, uploaded and dropped before the next, largest first, so
 * peak host memory is about the device arrays plus one array being built.
 */
import { DecoderWeightName, DecoderWeightSpec, decoderWeightSpecs, HostLayerName, INT8_BLOCK, MatrixName, WeightType } from '../hlo/decoder-layout';
import { ModelConfig } from '../model/config';
import { HostWeights } from '../model/weights';
import { hostWeightsReader, WeightReader } from '../model/weights-reader';
import { Client } from '../runtime/client';
import { DeviceBuffer } from '../runtime/device-buffer';
import { elementCount } from '../util/dims';
import { buildProgram } from '../hlo/program';
import { TensorType } from '../hlo/types';
import { f32ToBf16, quantizeBlocksInt8, transposeInto } from './convert';
import { RELEASE_BYTES, releaseHostCopies } from './release';

export interface UploadTimings {
  /** Reading tensors from the file (and dequantizing GGUF blocks). */
  readonly readSeconds: number;
  /** Stacking, transposing and converting to the weight type. */
  readonly convertSeconds: number;
  /** client.upload calls. */
  readonly uploadSeconds: number;
}

export interface DeviceWeights {
  /** In the order of decoderWeightSpecs(config, weightType). */
  readonly buffers: readonly DeviceBuffer[];
  readonly bytes: number;
  /** How the matrices are stored. */
  readonly weightType: WeightType;
  readonly timings: UploadTimings;
  dispose(): void;
}

type DeviceData = Float32Array | Uint16Array | Int8Array;

/** One device array in host memory, and the scales of an int8 matrix. */
interface Built {
  readonly data: DeviceData;
  readonly scales?: Float32Array;
}

class Clock {
  read = 0;
  convert = 0;
  upload = 0;
  time<T>(bucket: 'read' | 'convert' | 'upload', run: () => T): T {
    const start = performance.now();
    try {
      return run();
    } finally {
      this[bucket] += (performance.now() - start) / 1000;
    }
  }
}

/**
 * A host tensor [rows, in] (Hugging Face orientation: a row is an output
 * channel, its elements the input axis) in the matrix storage of `type`: f32
 * as is, bf16 bits (the file's own when it has them), or int8 with one scale
 * per INT8_BLOCK consecutive elements of a row (scales [rows, in / B]).
 */
function storeRows(type: WeightType, f32: () => Float32Array, bf16: () => Uint16Array | undefined, clock: Clock): Built {
  if (type === 'bf16') {
    const raw = clock.time('read', bf16);
    if (raw) return { data: raw };
  }
  const data = clock.time('read', f32);
  if (type === 'f32') return { data };
  return clock.time('convert', () => (type === 'bf16' ? { data: f32ToBf16(data) } : quantizeBlocksInt8(data, INT8_BLOCK)));
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
function buildArray(spec: DecoderWeightSpec, reader: WeightReader, type: WeightType, clock: Clock, from = 0, to = spec.dims[0]): Built {
  const matrixType: WeightType = spec.matrix ? type : 'f32';
  if ('global' in spec.source) {
    const name = spec.source.global;
    // [V, Dm] in both layouts (scales [V, Dm / B]); a vector (the final norm) is f32.
    return storeRows(matrixType, () => reader.global(name).data, () => reader.bf16?.({ global: name }), clock);
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
      const inFeatures = slice[0];
      const stored = storeRows(
        matrixType,
        () => layerPart(reader, l, part.source, spec.name),
        () => reader.bf16?.({ layer: l, name: part.source }),
        clock,
      );
      const rows = stored.data.length / inFeatures;
      clock.time('convert', () => {
        transposeInto(stored.data, rows, inFeatures, out, k * sliceSize, width, part.offset);
        if (stored.scales) transposeInto(stored.scales, rows, inFeatures / INT8_BLOCK, scales!, k * scaleSliceSize, width, part.offset);
      });
    }
  }
  return { data: out, ...(scales ? { scales } : {}) };
}

/**
 * A stacked array at least this large is uploaded layer by layer and joined
 * on the device: client.upload stages its own copy of the host array, so a
 * whole-array upload would briefly hold it three times (host, staging,
 * device); joining holds it twice on the device and one layer on the host.
 */
export const ASSEMBLE_BYTES = 256 * 2 ** 20;

/** Uploads layers one at a time and concatenates them on the device (see ASSEMBLE_BYTES). */
async function uploadByLayer(client: Client, spec: DecoderWeightSpec, reader: WeightReader, type: WeightType, clock: Clock): Promise<{ buffer: DeviceBuffer; scales?: Float32Array }> {
  const layers = spec.dims[0];
  const pieceDims = [1, ...spec.dims.slice(1)];
  const pieces: DeviceBuffer[] = [];
  const scaleSliceSize = elementCount(pieceDims) / INT8_BLOCK;
  const scales = type === 'int8' && spec.matrix ? new Float32Array(layers * scaleSliceSize) : undefined;
  try {
    for (let l = 0; l < layers; l++) {
      const built = buildArray(spec, reader, type, clock, l, l + 1);
      if (built.scales) scales!.set(built.scales, l * scaleSliceSize);
      const start = performance.now();
      pieces.push(await client.upload(built.data, pieceDims, spec.elementType));
      clock.upload += (performance.now() - start) / 1000;
      // Layer slices are tens of MB each: dead ones would pile up between V8's own collections.
      clock.time('convert', releaseHostCopies);
    }
    const start = performance.now();
    const program = buildProgram(`assemble_${spec.name}`, (f) => {
      const params = pieces.map((_, l) => f.param(new TensorType(spec.elementType, pieceDims), `layer${l}`));
      return { stacked: f.concatenate(params, 0) };
    });
    const executable = await client.compile(program.text);
    try {
      const [buffer] = await executable.execute(pieces);
      clock.upload += (performance.now() - start) / 1000;
      return { buffer, ...(scales ? { scales } : {}) };
    } finally {
      executable.dispose();
    }
  } finally {
    pieces.forEach((p) => p.dispose());
  }
}

function assembled(spec: DecoderWeightSpec): boolean {
  return spec.perLayer && hostBytes(spec) >= ASSEMBLE_BYTES;
}

function hostBytes(spec: DecoderWeightSpec): number {
  const size = spec.elementType === 'f32' ? 4 : spec.elementType === 'u16' ? 2 : 1;
  return elementCount(spec.dims) * size;
}

/** The device array `spec` describes, as host data (for tests and tools; uploads stream instead). */
export function deviceArray(spec: DecoderWeightSpec, weights: HostWeights | WeightReader, type: WeightType = 'f32'): Built {
  return buildArray(spec, 'layer' in weights ? weights : hostWeightsReader(weights), type, new Clock());
}

/**
 * Uploads the weights in program parameter order. A tied LM head (and its
 * scales) is uploaded once and passed twice. Arrays are built largest first
 * (whole ones, then those joined by layer): the biggest transient copies
 * then exist while the device holds the least.
 */
export async function uploadWeights(
  client: Client,
  config: ModelConfig,
  weights: HostWeights | WeightReader,
  weightType: WeightType = 'f32',
): Promise<DeviceWeights> {
  const reader = 'layer' in weights ? weights : hostWeightsReader(weights);
  const specs = decoderWeightSpecs(config, weightType);
  const index = new Map(specs.map((s, i) => [s.name, i]));
  const buffers: (DeviceBuffer | undefined)[] = specs.map(() => undefined);
  const owned: DeviceBuffer[] = [];
  const clock = new Clock();
  let bytes = 0;
  const put = async (i: number, data: DeviceData): Promise<void> => {
    const start = performance.now();
    const buffer = await client.upload(data, specs[i].dims, specs[i].elementType);
    clock.upload += (performance.now() - start) / 1000;
    owned.push(buffer);
    buffers[i] = buffer;
    bytes += buffer.byteLength;
  };
  const isTied = (s: DecoderWeightSpec): boolean => s.tiedTo !== undefined && reader.tied;
  // Scales come with their matrix; tied arrays reuse the buffer they are tied to.
  const order = specs
    .map((_, i) => i)
    .filter((i) => specs[i].scaleOf === undefined && !isTied(specs[i]))
    // Whole uploads first (each briefly holds its array three times), then those joined by layer (twice).
    .sort((a, b) => Number(assembled(specs[a])) - Number(assembled(specs[b])) || hostBytes(specs[b]) - hostBytes(specs[a]));
  try {
    for (const i of order) {
      if (assembled(specs[i])) {
        const { buffer, scales } = await uploadByLayer(client, specs[i], reader, weightType, clock);
        owned.push(buffer);
        buffers[i] = buffer;
        bytes += buffer.byteLength;
        if (scales) await put(index.get(`${specs[i].name as MatrixName}Scale`)!, scales);
        continue;
      }
      let built: Built | null = buildArray(specs[i], reader, weightType, clock);
      await put(i, built.data);
      if (built.scales) await put(index.get(`${specs[i].name as MatrixName}Scale`)!, built.scales);
      const large = built.data.byteLength >= RELEASE_BYTES;
      built = null;
      // The device has its copy: free ours before the next array is built (on the CPU, device memory is host memory).
      if (large) clock.time('convert', releaseHostCopies);
    }
    specs.forEach((s, i) => {
      if (isTied(s)) buffers[i] = buffers[index.get(s.tiedTo!)!];
    });
  } catch (err) {
    owned.forEach((b) => b.dispose());
    throw err;
  }
  const missing = specs.find((_, i) => !buffers[i]);
  if (missing) {
    owned.forEach((b) => b.dispose());
    throw new Error(`weights: no device array was built for ${missing.name}`);
  }
  return {
    buffers: buffers as DeviceBuffer[],
    bytes,
    weightType,
    timings: { readSeconds: clock.read, convertSeconds: clock.convert, uploadSeconds: clock.upload },
    dispose: () => owned.forEach((b) => b.dispose()),
  };
}
