/**
 * Large stacked arrays built one layer at a time (decoded on the device
 * where it can, else built on the host) and joined on the device, so no
 * whole-array copy is held on the host or staged (see ASSEMBLE_BYTES).
 */
import { buildProgram, DecoderWeightSpec, TensorType } from '../hlo';
import { DeviceBuffer } from '../runtime/device-buffer';
import { Executable } from '../runtime/executable';
import { elementCount } from '../util/dims';
import { ELEMENT_TYPES } from '../util/element-types';
import { decode, decodePlan, stageRaw, storedParts } from './device-decode';
import { buildAndUpload } from './host-build';
import { disposeAll, Load, OnDevice } from './load-context';

/**
 * A stacked array at least this large is built layer by layer and joined
 * on the device: client.upload stages its own copy of the host array, so a
 * whole-array upload would briefly hold it three times (host, staging,
 * device), and a whole-array decode would hold its f32 intermediate; joining
 * holds it twice on the device and one layer on the host.
 */
export const ASSEMBLE_BYTES = 256 * 2 ** 20;

/** Joins layer pieces [1, ...] into one stacked array on the device. */
async function joinLayers(
  pieces: readonly DeviceBuffer[],
  elementType: DecoderWeightSpec['elementType'],
  pieceDims: readonly number[],
  name: string,
  load: Load,
): Promise<DeviceBuffer> {
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

/**
 * A stacked array built one layer at a time (on the device when it can decode them) and joined there (see
 * ASSEMBLE_BYTES).
 */
export async function uploadByLayer(
  spec: DecoderWeightSpec,
  scaleSpec: DecoderWeightSpec | undefined,
  load: Load,
): Promise<OnDevice> {
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
        pieces.push(
          await load.clock.timeAsync('convert', () =>
            decode(raw, Promise.resolve({ executable: lease.executable, release: () => undefined })),
          ),
        );
      } else {
        pieces.push(await buildAndUpload(spec, load, pieceDims, scalePieceDims, l, l + 1));
      }
    }
    const data = await joinLayers(
      pieces.map((p) => p.data),
      spec.elementType,
      pieceDims,
      spec.name,
      load,
    );
    if (!scaleSpec) return { data };
    try {
      return {
        data,
        scales: await joinLayers(
          pieces.map((p) => p.scales!),
          'f32',
          scalePieceDims!,
          scaleSpec.name,
          load,
        ),
      };
    } catch (err) {
      data.dispose();
      throw err;
    }
  } finally {
    disposeAll(...pieces);
    if (program)
      void program.then(
        (lease) => lease.release(),
        () => undefined,
      );
  }
}

export function assembled(spec: DecoderWeightSpec, load: Load): boolean {
  return spec.perLayer && hostBytes(spec) >= load.assembleBytes;
}

export function hostBytes(spec: DecoderWeightSpec): number {
  return elementCount(spec.dims) * ELEMENT_TYPES[spec.elementType].bytes;
}
