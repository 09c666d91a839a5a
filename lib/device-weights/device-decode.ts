/**
 * Decoding on the device: matrices a GGUF file stores in a type decode.ts
 * reads go to the device as their raw rows (u8) and a decode program turns
 * them into the weight type there, so the host never holds them in f32.
 */
import { DecoderWeightSpec } from '../hlo';
import { StoredMatrix, WeightReader } from '../model/weights-reader';
import { DeviceBuffer } from '../runtime/device-buffer';
import { Executable } from '../runtime/executable';
import { decodeProgram, DEVICE_DECODED_TYPES } from './decode';
import { Load, OnDevice } from './load-context';

/**
 * The stored rows of each part of `spec` over layers [from, to) (one entry
 * for a table), when the device can decode them: every part stored in a type
 * decode.ts reads, the same type and row size in every layer. Else undefined
 * and the array is built on the host.
 */
export function storedParts(
  spec: DecoderWeightSpec,
  reader: WeightReader,
  from: number,
  to: number,
): StoredMatrix[][] | undefined {
  if (!spec.matrix || !reader.stored) return undefined;
  const lists: (StoredMatrix | undefined)[][] =
    'global' in spec.source
      ? [[reader.stored({ global: spec.source.global })]]
      : spec.source.layerParts.map((part) =>
          Array.from({ length: to - from }, (_, k) => reader.stored!({ layer: from + k, name: part.source })),
        );
  const ok = lists.every((layers) => {
    const first = layers[0];
    return (
      first !== undefined &&
      DEVICE_DECODED_TYPES.has(first.type) &&
      layers.every(
        (m) => m !== undefined && m.type === first.type && m.rowBytes === first.rowBytes && m.rows === first.rows,
      )
    );
  });
  return ok ? (lists as StoredMatrix[][]) : undefined;
}

/** The decode program of `spec` from these parts (prefetched: building and loading it overlaps the reads). */
export function decodePlan(
  spec: DecoderWeightSpec,
  parts: StoredMatrix[][],
  load: Load,
): Promise<{ executable: Executable; release(): void }> {
  const program = load.programs(
    decodeProgram(
      spec,
      parts.map((layers) => layers[0]),
      load.type,
      parts[0].length,
    ),
  );
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
export function stageRaw(
  parts: StoredMatrix[][],
  load: Load,
): { readonly raw: Promise<DeviceBuffer[]>; readonly bytes: number } {
  const { client, clock } = load;
  const uploads: Promise<DeviceBuffer>[] = [];
  let bytes = 0;
  try {
    for (const layers of parts) {
      const { rows, rowBytes } = layers[0];
      const data = load.scratch(layers.length * rows * rowBytes);
      clock.time('read', () =>
        layers.forEach((m, k) => m.readInto(data.subarray(k * rows * rowBytes, (k + 1) * rows * rowBytes))),
      );
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
export async function decode(
  staged: Promise<DeviceBuffer[]>,
  program: Promise<{ executable: Executable; release(): void }>,
): Promise<OnDevice> {
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
