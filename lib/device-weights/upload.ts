/**
 * Weight upload: host weights (Hugging Face orientation) -> the device arrays
 * the decoder programs take, as lib/hlo/decoder/layout.ts declares them
 * (per-layer arrays stacked over layers, matrices [in, out], q|k|v and
 * gate|up fused), in the weight type asked for (f32, bf16, int8 with
 * one scale per INT8_BLOCK input elements). Uploaded once; every execution passes the
 * same buffers.
 *
 * Streaming: tensors come from a WeightReader one at a time; each device
 * array is built, uploaded and dropped before the next, largest first, so
 * peak host memory is about the device arrays plus one array being built.
 */
import { Bf16Matrices, buildProgram, DecoderWeightName, DecoderWeightSpec, decoderWeightSpecs, HloProgram, HostLayerName, INT8_BLOCK, MatrixName, TensorType, WeightType } from '../hlo';
import { ModelConfig } from '../model/config';
import { HostWeights } from '../model/weights';
import { hostWeightsReader, StoredMatrix, WeightReader } from '../model/weights-reader';
import { Client } from '../runtime/client';
import { DeviceBuffer } from '../runtime/device-buffer';
import { deferExternalMemoryReports } from '../runtime/external-memory';
import { Executable } from '../runtime/executable';
import { elementCount } from '../util/dims';
import { ELEMENT_TYPES } from '../util/element-types';
import { f32ToBf16, quantizeBlocksInt8, transposeInto } from './convert';
import { decodeProgram, DEVICE_DECODED_TYPES } from './decode';
import { RELEASE_BYTES, releaseHostCopies } from './release';

export interface UploadTimings {
  /** Reading tensors from the file (and, on the host path, dequantizing GGUF blocks). */
  readonly readSeconds: number;
  /**
   * Stacking, transposing and converting to the weight type: on the host,
   * or waiting for the device's decodes where they did not overlap the rest
   * (a decode whose program is still loading waits here too).
   */
  readonly convertSeconds: number;
  /** client.upload calls, and joining layer pieces on the device. */
  readonly uploadSeconds: number;
  /** Waiting for the load's own programs outside the decodes (layer-by-layer decodes, joins): from the disk cache after a restart, else compiled. */
  readonly programSeconds: number;
}

export interface DeviceWeights {
  /** In the order of decoderWeightSpecs(config, weightType, bf16Matrices). */
  readonly buffers: readonly DeviceBuffer[];
  readonly bytes: number;
  /** How the matrices are stored. */
  readonly weightType: WeightType;
  /** How bf16 matrices are typed on the device (the same bits either way); matters only for bf16 weights. */
  readonly bf16Matrices: Bf16Matrices;
  readonly timings: UploadTimings;
  dispose(): void;
}

type DeviceData = Float32Array | Uint16Array | Int8Array;

/** One device array in host memory, and the scales of an int8 matrix. */
interface Built {
  readonly data: DeviceData;
  readonly scales?: Float32Array;
}

type Step = 'read' | 'convert' | 'upload' | 'program';

class Clock {
  read = 0;
  convert = 0;
  upload = 0;
  program = 0;
  time<T>(step: Step, run: () => T): T {
    const start = performance.now();
    try {
      return run();
    } finally {
      this[step] += (performance.now() - start) / 1000;
    }
  }
  async timeAsync<T>(step: Step, run: () => Promise<T>): Promise<T> {
    const start = performance.now();
    try {
      return await run();
    } finally {
      this[step] += (performance.now() - start) / 1000;
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
 * A stacked array at least this large is built layer by layer and joined
 * on the device: client.upload stages its own copy of the host array, so a
 * whole-array upload would briefly hold it three times (host, staging,
 * device), and a whole-array decode would hold its f32 intermediate; joining
 * holds it twice on the device and one layer on the host.
 */
export const ASSEMBLE_BYTES = 256 * 2 ** 20;

/**
 * Loads a program the load itself runs (decoding, joining layers) and hands
 * it back until released. The Scorer passes its disk-cached JIT, so a
 * restart reads them from disk; the default compiles each time.
 */
export type LoadPrograms = (program: HloProgram) => Promise<{ readonly executable: Executable; release(): void }>;

export interface UploadOptions {
  readonly programs?: LoadPrograms;
  /** How bf16 matrices are typed on the device (default u16 bits): a platform fact, lib/scoring/platform.ts. */
  readonly bf16Matrices?: Bf16Matrices;
  /** Stacked arrays of at least this many bytes are built by layer (default ASSEMBLE_BYTES; tests lower it). */
  readonly assembleBytes?: number;
}

/**
 * Raw rows staged on the device and not yet decoded, at most this many bytes:
 * decodes run while the host reads the next arrays, and a file stored in f32
 * does not put all of itself on the device twice.
 */
const STAGED_BYTES = 256 * 2 ** 20;

function compileEachTime(client: Client): LoadPrograms {
  return async (program) => {
    const executable = await client.compile(program.text);
    return { executable, release: () => executable.dispose() };
  };
}

/** One device array (or layer piece of one), and its scales for an int8 matrix. */
interface OnDevice {
  readonly data: DeviceBuffer;
  readonly scales?: DeviceBuffer;
}

function disposeAll(...arrays: (OnDevice | undefined)[]): void {
  for (const a of arrays) {
    a?.data.dispose();
    a?.scales?.dispose();
  }
}

interface Load {
  readonly client: Client;
  readonly reader: WeightReader;
  readonly type: WeightType;
  readonly programs: LoadPrograms;
  readonly clock: Clock;
  readonly assembleBytes: number;
  /**
   * Host memory for raw rows, reused: fresh arrays cost page faults and
   * count as external memory, which made V8 run extra full collections.
   */
  scratch(bytes: number): Uint8Array;
}

function scratchMemory(): (bytes: number) => Uint8Array {
  let buffer = new Uint8Array(0);
  return (bytes) => {
    if (buffer.byteLength < bytes) buffer = new Uint8Array(bytes);
    return buffer.subarray(0, bytes);
  };
}

/**
 * The stored rows of each part of `spec` over layers [from, to) (one entry
 * for a table), when the device can decode them: every part stored in a type
 * decode.ts reads, the same type and row size in every layer. Else undefined
 * and the array is built on the host.
 */
function storedParts(spec: DecoderWeightSpec, reader: WeightReader, from: number, to: number): StoredMatrix[][] | undefined {
  if (!spec.matrix || !reader.stored) return undefined;
  const lists: (StoredMatrix | undefined)[][] =
    'global' in spec.source
      ? [[reader.stored({ global: spec.source.global })]]
      : spec.source.layerParts.map((part) => Array.from({ length: to - from }, (_, k) => reader.stored!({ layer: from + k, name: part.source })));
  const ok = lists.every((layers) => {
    const first = layers[0];
    return first !== undefined && DEVICE_DECODED_TYPES.has(first.type) && layers.every((m) => m !== undefined && m.type === first.type && m.rowBytes === first.rowBytes && m.rows === first.rows);
  });
  return ok ? (lists as StoredMatrix[][]) : undefined;
}

/** The decode program of `spec` from these parts (prefetched: building and loading it overlaps the reads). */
function decodePlan(spec: DecoderWeightSpec, parts: StoredMatrix[][], load: Load): Promise<{ executable: Executable; release(): void }> {
  const program = load.programs(decodeProgram(spec, parts.map((layers) => layers[0]), load.type, parts[0].length));
  // Awaited when its array comes; a failure before then must not be an unhandled rejection.
  program.catch(() => undefined);
  return program;
}

/**
 * Reads each part's rows over its layers into one u8 [layers, rows, rowBytes]
 * array and starts its upload. client.upload copies the array before it
 * returns, so the next read need not wait for the device (and reuses the
 * same scratch memory): the returned promise settles when every part is on
 * the device.
 */
function stageRaw(parts: StoredMatrix[][], load: Load): { readonly raw: Promise<DeviceBuffer[]>; readonly bytes: number } {
  const { client, clock } = load;
  const uploads: Promise<DeviceBuffer>[] = [];
  let bytes = 0;
  try {
    for (const layers of parts) {
      const { rows, rowBytes } = layers[0];
      const data = load.scratch(layers.length * rows * rowBytes);
      clock.time('read', () => layers.forEach((m, k) => m.readInto(data.subarray(k * rows * rowBytes, (k + 1) * rows * rowBytes))));
      uploads.push(clock.time('upload', () => client.upload(data, [layers.length, rows, rowBytes], 'u8')));
      bytes += data.byteLength;
    }
  } catch (err) {
    void freeAll(uploads);
    throw err;
  }
  return { raw: allOrFree(uploads), bytes };
}

/** Every upload's buffer, or (when one fails) the first error, once the others are freed. */
async function allOrFree(uploads: Promise<DeviceBuffer>[]): Promise<DeviceBuffer[]> {
  const settled = await Promise.allSettled(uploads);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (!failed) return settled.map((r) => (r as PromiseFulfilledResult<DeviceBuffer>).value);
  await freeAll(uploads);
  throw failed.reason;
}

async function freeAll(uploads: Promise<DeviceBuffer>[]): Promise<void> {
  for (const r of await Promise.allSettled(uploads)) if (r.status === 'fulfilled') r.value.dispose();
}

/** Runs a decode program on staged raw rows (and frees them). Not timed here: decodes overlap the host's work. */
async function decode(staged: Promise<DeviceBuffer[]>, program: Promise<{ executable: Executable; release(): void }>): Promise<OnDevice> {
  const raw = await staged;
  try {
    const lease = await program;
    try {
      const [data, scales] = await lease.executable.execute(raw);
      return { data, ...(scales ? { scales } : {}) };
    } finally {
      lease.release();
    }
  } finally {
    raw.forEach((b) => b.dispose());
  }
}

/** Builds layers [from, to) of `spec` on the host and uploads them (and int8 scales). */
async function buildAndUpload(spec: DecoderWeightSpec, load: Load, dims: readonly number[], scaleDims: readonly number[] | undefined, from?: number, to?: number): Promise<OnDevice> {
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

/** Joins layer pieces [1, ...] into one stacked array on the device. */
async function joinLayers(pieces: readonly DeviceBuffer[], elementType: DecoderWeightSpec['elementType'], pieceDims: readonly number[], name: string, load: Load): Promise<DeviceBuffer> {
  const program = buildProgram(`assemble_${name}_${pieces.length}`, (f) => {
    const params = pieces.map((_, l) => f.param(new TensorType(elementType, pieceDims), `layer${l}`));
    return { stacked: f.concatenate(params, 0) };
  });
  const lease = await load.clock.timeAsync('program', () => load.programs(program));
  try {
    const [stacked] = await load.clock.timeAsync('upload', () => lease.executable.execute(pieces));
    return stacked;
  } finally {
    lease.release();
  }
}

/** A stacked array built one layer at a time (on the device when it can decode them) and joined there (see ASSEMBLE_BYTES). */
async function uploadByLayer(spec: DecoderWeightSpec, scaleSpec: DecoderWeightSpec | undefined, load: Load): Promise<OnDevice> {
  const layers = spec.dims[0];
  const pieceDims = [1, ...spec.dims.slice(1)];
  const scalePieceDims = scaleSpec && [1, ...scaleSpec.dims.slice(1)];
  const pieces: OnDevice[] = [];
  let program: Promise<{ executable: Executable; release(): void }> | undefined;
  try {
    for (let l = 0; l < layers; l++) {
      const parts = storedParts(spec, load.reader, l, l + 1);
      if (parts) {
        // One program decodes any layer: load it once.
        program ??= decodePlan(spec, parts, load);
        const lease = await load.clock.timeAsync('program', () => program!);
        const { raw } = stageRaw(parts, load);
        pieces.push(await load.clock.timeAsync('convert', () => decode(raw, Promise.resolve({ executable: lease.executable, release: () => undefined }))));
      } else {
        pieces.push(await buildAndUpload(spec, load, pieceDims, scalePieceDims, l, l + 1));
      }
    }
    const data = await joinLayers(pieces.map((p) => p.data), spec.elementType, pieceDims, spec.name, load);
    if (!scaleSpec) return { data };
    try {
      return { data, scales: await joinLayers(pieces.map((p) => p.scales!), 'f32', scalePieceDims!, scaleSpec.name, load) };
    } catch (err) {
      data.dispose();
      throw err;
    }
  } finally {
    disposeAll(...pieces);
    if (program) void program.then((lease) => lease.release(), () => undefined);
  }
}

function assembled(spec: DecoderWeightSpec, load: Load): boolean {
  return spec.perLayer && hostBytes(spec) >= load.assembleBytes;
}

function hostBytes(spec: DecoderWeightSpec): number {
  return elementCount(spec.dims) * ELEMENT_TYPES[spec.elementType].bytes;
}

/** The device array `spec` describes, as host data (for tests and tools; uploads stream instead). */
export function deviceArray(spec: DecoderWeightSpec, weights: HostWeights | WeightReader, type: WeightType = 'f32'): Built {
  return buildArray(spec, 'layer' in weights ? weights : hostWeightsReader(weights), type, new Clock());
}

/**
 * Uploads the weights in program parameter order. A tied LM head (and its
 * scales) is uploaded once and passed twice. Matrices a GGUF file stores in
 * a type decode.ts reads are decoded on the device from their raw blocks;
 * the rest (vectors, safetensors, weights already in memory) are built on
 * the host. Arrays go largest first (whole ones, then those joined by
 * layer): the biggest transient copies then exist while the device holds
 * the least. The decode programs are all asked for at the start, so loading
 * them (from the disk cache after a restart) overlaps the reads.
 */
export async function uploadWeights(
  client: Client,
  config: ModelConfig,
  weights: HostWeights | WeightReader,
  weightType: WeightType = 'f32',
  options: UploadOptions = {},
): Promise<DeviceWeights> {
  // V8 hears of the new device arrays once, at the end, not in ~64 MB steps that each start a full collection.
  return deferExternalMemoryReports(() => uploadArrays(client, config, weights, weightType, options));
}

async function uploadArrays(client: Client, config: ModelConfig, weights: HostWeights | WeightReader, weightType: WeightType, options: UploadOptions): Promise<DeviceWeights> {
  const reader = 'layer' in weights ? weights : hostWeightsReader(weights);
  const bf16Matrices = options.bf16Matrices ?? 'u16';
  const specs = decoderWeightSpecs(config, weightType, bf16Matrices);
  const index = new Map(specs.map((s, i) => [s.name, i]));
  const buffers: (DeviceBuffer | undefined)[] = specs.map(() => undefined);
  const owned: DeviceBuffer[] = [];
  const load: Load = {
    client,
    reader,
    type: weightType,
    programs: options.programs ?? compileEachTime(client),
    clock: new Clock(),
    assembleBytes: options.assembleBytes ?? ASSEMBLE_BYTES,
    scratch: scratchMemory(),
  };
  const isTied = (s: DecoderWeightSpec): boolean => s.tiedTo !== undefined && reader.tied;
  const scaleSpecOf = (s: DecoderWeightSpec): DecoderWeightSpec | undefined => {
    const i = index.get(`${s.name as MatrixName}Scale`);
    return i === undefined ? undefined : specs[i];
  };
  // Scales come with their matrix; tied arrays reuse the buffer they are tied to.
  const order = specs
    .map((_, i) => i)
    .filter((i) => specs[i].scaleOf === undefined && !isTied(specs[i]))
    // Whole uploads first (each briefly holds its array three times), then those joined by layer (twice).
    .sort((a, b) => Number(assembled(specs[a], load)) - Number(assembled(specs[b], load)) || hostBytes(specs[b]) - hostBytes(specs[a]));
  const decoded = new Map<number, { parts: StoredMatrix[][]; program: ReturnType<typeof decodePlan> }>();
  for (const i of order) {
    const parts = assembled(specs[i], load) ? undefined : storedParts(specs[i], reader, 0, specs[i].dims[0]);
    if (parts) decoded.set(i, { parts, program: decodePlan(specs[i], parts, load) });
  }
  const place = (i: number, array: OnDevice): void => {
    owned.push(array.data);
    buffers[i] = array.data;
    if (array.scales) {
      owned.push(array.scales);
      buffers[index.get(`${specs[i].name as MatrixName}Scale`)!] = array.scales;
    }
  };
  // Decodes in flight, with the bytes they hold staged; waited for before more is staged past STAGED_BYTES.
  const decoding: { done: Promise<void>; bytes: number }[] = [];
  const clock = load.clock;
  const drain = async (keepBytes: number): Promise<void> => {
    while (decoding.length && decoding.reduce((sum, d) => sum + d.bytes, 0) > keepBytes) await clock.timeAsync('convert', () => decoding.shift()!.done);
  };
  try {
    for (const i of order) {
      const spec = specs[i];
      const scaleSpec = scaleSpecOf(spec);
      const plan = decoded.get(i);
      if (assembled(spec, load)) {
        await drain(0);
        place(i, await uploadByLayer(spec, scaleSpec, load));
      } else if (plan) {
        const { raw, bytes } = stageRaw(plan.parts, load);
        const done = decode(raw, plan.program).then((array) => place(i, array));
        // Handled here so a failure waits for its turn in drain() instead of becoming an unhandled rejection.
        done.catch(() => undefined);
        decoding.push({ done, bytes });
        await drain(STAGED_BYTES);
      } else {
        place(i, await buildAndUpload(spec, load, spec.dims, scaleSpec?.dims));
      }
    }
    await drain(0);
    specs.forEach((s, i) => {
      if (isTied(s)) buffers[i] = buffers[index.get(s.tiedTo!)!];
    });
  } catch (err) {
    // Decodes still running finish (their staged rows are freed then) before what they made is freed.
    await Promise.allSettled(decoding.map((d) => d.done));
    owned.forEach((b) => b.dispose());
    // Programs asked for and not used: release them once loaded.
    for (const plan of decoded.values()) void plan.program.then((lease) => lease.release(), () => undefined);
    throw err;
  }
  const missing = specs.find((_, i) => !buffers[i]);
  if (missing) {
    owned.forEach((b) => b.dispose());
    throw new Error(`weights: no device array was built for ${missing.name}`);
  }
  return {
    buffers: buffers as DeviceBuffer[],
    bytes: owned.reduce((sum, b) => sum + b.byteLength, 0),
    weightType,
    bf16Matrices,
    timings: { readSeconds: clock.read, convertSeconds: clock.convert, uploadSeconds: clock.upload, programSeconds: clock.program },
    dispose: () => owned.forEach((b) => b.dispose()),
  };
}
