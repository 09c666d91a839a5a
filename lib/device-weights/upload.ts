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
 *
 * Matrices packed for the matmul kernel (layout.ts, packedFrom) are built
 * as their stacked arrays first, then packed by one program on the device:
 * from the host, as the checkpoint's rows [Ly, N, K] (a copy, no transpose);
 * decoded on the device, as [Ly, K, N].
 */
import {
  Bf16Matrices,
  buildProgram,
  DecoderWeightSpec,
  decoderWeightSpecs,
  KernelMatrixName,
  MatrixName,
  PackedFor,
  packMatmulRows,
  packMatmulWeights,
  TensorType,
  WeightType,
} from '../hlo';
import { ModelConfig } from '../model/config';
import { HostWeights } from '../model/weights';
import { hostWeightsReader, StoredMatrix, WeightReader } from '../model/weights-reader';
import { Client } from '../runtime/client';
import { DeviceBuffer } from '../runtime/device-buffer';
import { deferExternalMemoryReports } from '../runtime/external-memory';
import { decode, decodePlan, stageRaw, storedParts } from './device-decode';
import { buildAndUpload } from './host-build';
import { ASSEMBLE_BYTES, assembled, hostBytes, uploadByLayer } from './layer-assembly';
import { Clock, compileEachTime, Load, LoadPrograms, OnDevice, scratchMemory } from './load-context';

export type { LoadPrograms };

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
  /**
   * Waiting for the load's own programs outside the decodes (layer-by-layer decodes, joins): from the disk cache after
   * a restart, else compiled.
   */
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
  /** The layer matrices held packed for the matmul kernel (layout.ts); the programs must declare them so. */
  readonly packed: readonly KernelMatrixName[];
  /** The kernel they are packed for. */
  readonly packedFor: PackedFor;
  readonly timings: UploadTimings;
  dispose(): void;
}

interface UploadOptions {
  readonly programs?: LoadPrograms;
  /**
   * How bf16 matrices are typed on the device (default u16 bits): a platform fact, lib/scoring/platform/profiles.ts.
   */
  readonly bf16Matrices?: Bf16Matrices;
  /** Stacked arrays of at least this many bytes are built by layer (default ASSEMBLE_BYTES; tests lower it). */
  readonly assembleBytes?: number;
  /**
   * Layer matrices to hold packed for the matmul kernel (the decoder's kernelMatrices under the
   * Scorer's options: lib/hlo/decoder/options.ts); default none. Not with int8 weights.
   */
  readonly packed?: readonly KernelMatrixName[];
  /** Which kernel they are packed for (default the bf16 one; the f32 one packs f32 weights only). */
  readonly packedFor?: PackedFor;
}

/**
 * Raw rows staged on the device and not yet decoded, at most this many bytes:
 * decodes run while the host reads the next arrays, and a file stored in f32
 * does not put all of itself on the device twice.
 */
const STAGED_BYTES = 256 * 2 ** 20;

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

async function uploadArrays(
  client: Client,
  config: ModelConfig,
  weights: HostWeights | WeightReader,
  weightType: WeightType,
  options: UploadOptions,
): Promise<DeviceWeights> {
  const reader = 'layer' in weights ? weights : hostWeightsReader(weights);
  const bf16Matrices = options.bf16Matrices ?? 'u16';
  const packed = options.packed ?? [];
  const packedFor = options.packedFor ?? 'bf16';
  const specs = decoderWeightSpecs(config, weightType, bf16Matrices, packed, packedFor).map((s) =>
    builtAs(s, reader, packedFor),
  );
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
    .sort(
      (a, b) =>
        Number(assembled(specs[a], load)) - Number(assembled(specs[b], load)) ||
        hostBytes(specs[b]) - hostBytes(specs[a]),
    );
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
  // A packed matrix: its stacked array, then the packing program's (the stacked array freed).
  const placePacked = async (i: number, array: OnDevice): Promise<void> => {
    const packs = specs[i].packs;
    if (!packs) return place(i, array);
    try {
      place(i, {
        data: await load.clock.timeAsync('convert', () =>
          packOnDevice(array.data, specs[i].rows === true, packs, load),
        ),
      });
    } finally {
      array.data.dispose();
    }
  };
  // Decodes in flight, with the bytes they hold staged; waited for before more is staged past STAGED_BYTES.
  const decoding: { done: Promise<void>; bytes: number }[] = [];
  const clock = load.clock;
  const drain = async (keepBytes: number): Promise<void> => {
    while (decoding.length && decoding.reduce((sum, d) => sum + d.bytes, 0) > keepBytes)
      await clock.timeAsync('convert', () => decoding.shift()!.done);
  };
  try {
    for (const i of order) {
      const spec = specs[i];
      const scaleSpec = scaleSpecOf(spec);
      const plan = decoded.get(i);
      if (assembled(spec, load)) {
        await drain(0);
        await placePacked(i, await uploadByLayer(spec, scaleSpec, load));
      } else if (plan) {
        const { raw, bytes } = stageRaw(plan.parts, load);
        const done = decode(raw, plan.program).then((array) => placePacked(i, array));
        // Handled here so a failure waits for its turn in drain() instead of becoming an unhandled rejection.
        done.catch(() => undefined);
        decoding.push({ done, bytes });
        await drain(STAGED_BYTES);
      } else {
        await placePacked(i, await buildAndUpload(spec, load, spec.dims, scaleSpec?.dims));
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
    for (const plan of decoded.values())
      void plan.program.then(
        (lease) => lease.release(),
        () => undefined,
      );
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
    packed,
    packedFor,
    timings: {
      readSeconds: clock.read,
      convertSeconds: clock.convert,
      uploadSeconds: clock.upload,
      programSeconds: clock.program,
    },
    dispose: () => owned.forEach((b) => b.dispose()),
  };
}

/**
 * A spec as the load builds it: a matrix packed for the matmul kernel as its stacked array first
 * (`packs`): where the host builds it, as the checkpoint's rows [Ly, N, K] (`rows`: stacked by copies,
 * packed by packMatmulRows); where the device decodes it from a file's blocks, as [Ly, K, N].
 */
type BuildSpec = DecoderWeightSpec & { readonly packs?: PackedFor; readonly rows?: true };

function builtAs(spec: DecoderWeightSpec, reader: WeightReader, packedFor: PackedFor): BuildSpec {
  if (!spec.packedFrom) return spec;
  const { packedFrom, ...rest } = spec;
  const decoded = storedParts(spec, reader, 0, 1) !== undefined;
  if (decoded) return { ...rest, dims: packedFrom.dims, elementType: packedFrom.elementType, packs: packedFor };
  const [layers, k, n] = packedFrom.dims;
  return { ...rest, dims: [layers, n, k], elementType: packedFrom.elementType, packs: packedFor, rows: true };
}

/**
 * Packs one stacked matrix on the device (lib/hlo/nn/matmul-kernel.ts: packMatmulRows from [Ly, N, K] rows,
 * packMatmulWeights from [Ly, K, N]); the caller frees the input.
 */
async function packOnDevice(
  stacked: DeviceBuffer,
  rows: boolean,
  packedFor: PackedFor,
  load: Load,
): Promise<DeviceBuffer> {
  const program = buildProgram(
    `pack_matmul_${packedFor}_${rows ? 'rows_' : ''}${stacked.dtype}_${stacked.dims.join('x')}`,
    (f) => {
      const param = f.param(new TensorType(stacked.dtype, stacked.dims), 'stacked');
      return { packed: rows ? packMatmulRows(f, param, packedFor) : packMatmulWeights(f, param, packedFor) };
    },
  );
  const lease = await load.programs(program);
  try {
    const [packed] = await lease.executable.execute([stacked]);
    return packed;
  } finally {
    lease.release();
  }
}
