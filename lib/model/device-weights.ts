/**
 * Weight upload: host weights (Hugging Face orientation) -> the device arrays
 * the decoder programs take (lib/hlo/transformer.ts `decoderWeightSpecs`):
 * per-layer matrices stacked over layers and stored [in, out], q|k|v and
 * gate|up fused, so each projection is one matmul. Uploaded once; every
 * execution passes the same buffers.
 */
import { decoderWeightSpecs, DecoderWeightName } from '../hlo/transformer';
import { Client } from '../runtime/client';
import { DeviceBuffer } from '../runtime/device-buffer';
import { ModelConfig } from './config';
import { HostLayerWeights, HostTensor, HostWeights } from './weights';

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

function layerTensor(layer: HostLayerWeights, key: keyof HostLayerWeights, what: string): HostTensor {
  const t = layer[key];
  if (!t) throw new Error(`weights: layer tensor ${String(key)} is missing (${what})`);
  return t;
}

/** Host arrays in device layout, keyed by weight name. */
export function stackWeights(config: ModelConfig, weights: HostWeights): Map<DecoderWeightName, Float32Array> {
  const { hiddenSize: Dm, intermediateSize: F, numLayers: Ly, numHeads: Hq, numKvHeads: Hkv, headDim: D } = config;
  const qkv = (Hq + 2 * Hkv) * D;
  const out = new Map<DecoderWeightName, Float32Array>();
  out.set('embedding', weights.embedding.data);
  out.set('lmHead', weights.lmHead.data);
  out.set('finalNorm', weights.finalNorm.data);
  const attnNorm = new Float32Array(Ly * Dm);
  const ffnNorm = new Float32Array(Ly * Dm);
  const wQkv = new Float32Array(Ly * Dm * qkv);
  const wO = new Float32Array(Ly * Hq * D * Dm);
  const wGateUp = new Float32Array(Ly * Dm * 2 * F);
  const wDown = new Float32Array(Ly * F * Dm);
  const bQkv = config.attentionBias ? new Float32Array(Ly * qkv) : undefined;
  const qNorm = config.qkNorm ? new Float32Array(Ly * D) : undefined;
  const kNorm = config.qkNorm ? new Float32Array(Ly * D) : undefined;
  weights.layers.forEach((layer, l) => {
    attnNorm.set(layerTensor(layer, 'attnNorm', 'norm').data, l * Dm);
    ffnNorm.set(layerTensor(layer, 'ffnNorm', 'norm').data, l * Dm);
    // [Hq*D, Dm] etc. -> columns of the fused [Dm, qkv] matrix
    const base = l * Dm * qkv;
    transposeInto(layerTensor(layer, 'wq', 'q').data, Hq * D, Dm, wQkv, base, qkv, 0);
    transposeInto(layerTensor(layer, 'wk', 'k').data, Hkv * D, Dm, wQkv, base, qkv, Hq * D);
    transposeInto(layerTensor(layer, 'wv', 'v').data, Hkv * D, Dm, wQkv, base, qkv, (Hq + Hkv) * D);
    transposeInto(layerTensor(layer, 'wo', 'o').data, Dm, Hq * D, wO, l * Hq * D * Dm, Dm, 0);
    transposeInto(layerTensor(layer, 'wGate', 'gate').data, F, Dm, wGateUp, l * Dm * 2 * F, 2 * F, 0);
    transposeInto(layerTensor(layer, 'wUp', 'up').data, F, Dm, wGateUp, l * Dm * 2 * F, 2 * F, F);
    transposeInto(layerTensor(layer, 'wDown', 'down').data, Dm, F, wDown, l * F * Dm, Dm, 0);
    if (bQkv) {
      bQkv.set(layerTensor(layer, 'bq', 'q bias').data, l * qkv);
      bQkv.set(layerTensor(layer, 'bk', 'k bias').data, l * qkv + Hq * D);
      bQkv.set(layerTensor(layer, 'bv', 'v bias').data, l * qkv + (Hq + Hkv) * D);
    }
    if (qNorm && kNorm) {
      qNorm.set(layerTensor(layer, 'qNorm', 'q norm').data, l * D);
      kNorm.set(layerTensor(layer, 'kNorm', 'k norm').data, l * D);
    }
  });
  out.set('attnNorm', attnNorm);
  out.set('ffnNorm', ffnNorm);
  out.set('wQkv', wQkv);
  out.set('wO', wO);
  out.set('wGateUp', wGateUp);
  out.set('wDown', wDown);
  if (bQkv) out.set('bQkv', bQkv);
  if (qNorm && kNorm) {
    out.set('qNorm', qNorm);
    out.set('kNorm', kNorm);
  }
  return out;
}

/** Uploads the weights in program parameter order. A tied LM head is uploaded once and passed twice. */
export async function uploadWeights(client: Client, config: ModelConfig, weights: HostWeights): Promise<DeviceWeights> {
  const host = stackWeights(config, weights);
  const buffers: DeviceBuffer[] = [];
  const owned: DeviceBuffer[] = [];
  let bytes = 0;
  try {
    for (const spec of decoderWeightSpecs(config)) {
      if (spec.name === 'lmHead' && weights.lmHead === weights.embedding) {
        buffers.push(buffers[0]); // the embedding, uploaded first
        continue;
      }
      const data = host.get(spec.name);
      if (!data) throw new Error(`weights: nothing to upload for ${spec.name}`);
      const buffer = await client.upload(data, spec.dims, 'f32');
      owned.push(buffer);
      buffers.push(buffer);
      bytes += buffer.byteLength;
      host.delete(spec.name); // let the stacked host copy go as soon as it is on the device
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
