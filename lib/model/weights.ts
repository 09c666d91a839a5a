import { PjrtScoreError } from '../util/errors';
import type { ModelConfig } from './config';

/**
 * Host-side weights in one canonical layout, whatever the file format:
 * f32, row-major, Hugging Face orientation (a Linear weight is
 * [outFeatures, inFeatures], applied as y = W x), and Hugging Face's RoPE
 * convention (rotate_half: dimension i pairs with i + headDim/2 in each head).
 * An RMSNorm weight is the multiplier of the normalized values: a Gemma
 * Hugging Face file stores w for a multiplier of 1 + w, and its reader adds
 * the 1 (in f32, as transformers does); llama.cpp's GGUF conversion already
 * stored 1 + w.
 */
export interface HostTensor {
  /** Row-major, slowest-varying first: [rows, cols] for matrices. */
  readonly dims: readonly number[];
  readonly data: Float32Array;
}

export interface HostLayerWeights {
  /** RMSNorm before attention, [Dm]. */
  readonly attnNorm: HostTensor;
  /** [Hq*D, Dm] */
  readonly wq: HostTensor;
  /** [Hkv*D, Dm] */
  readonly wk: HostTensor;
  /** [Hkv*D, Dm] */
  readonly wv: HostTensor;
  /** [Dm, Hq*D] */
  readonly wo: HostTensor;
  /** q/k/v biases [Hq*D], [Hkv*D], [Hkv*D]: present iff config.attentionBias. */
  readonly bq?: HostTensor;
  readonly bk?: HostTensor;
  readonly bv?: HostTensor;
  /** Per-head RMSNorm weights [D] on q and k: present iff config.qkNorm. */
  readonly qNorm?: HostTensor;
  readonly kNorm?: HostTensor;
  /** RMSNorm of the attention output before the residual add, [Dm]: present iff config.gemma?.postNorms. */
  readonly attnPostNorm?: HostTensor;
  /** RMSNorm before the MLP, [Dm]. */
  readonly ffnNorm: HostTensor;
  /** RMSNorm of the MLP output before the residual add, [Dm]: present iff config.gemma?.postNorms. */
  readonly ffnPostNorm?: HostTensor;
  /** [F, Dm] */
  readonly wGate: HostTensor;
  /** [F, Dm] */
  readonly wUp: HostTensor;
  /** [Dm, F] */
  readonly wDown: HostTensor;
}

export interface HostWeights {
  /** [V, Dm] */
  readonly embedding: HostTensor;
  readonly layers: readonly HostLayerWeights[];
  /** [Dm] */
  readonly finalNorm: HostTensor;
  /** [V, Dm]; the very same object as `embedding` when the embeddings are tied. */
  readonly lmHead: HostTensor;
}

export class WeightsError extends PjrtScoreError {
  declare readonly code: 'WEIGHTS_INVALID';
  constructor(message: string) {
    super(message, 'WEIGHTS_INVALID');
    this.name = 'WeightsError';
  }
}

export type LayerWeightName = keyof HostLayerWeights;

/** One tensor the canonical layout needs: its name per format and its expected dims. */
export interface WeightSlot {
  /** Set with layerKey: which block the tensor belongs to. */
  readonly layer?: number;
  readonly layerKey?: LayerWeightName;
  readonly globalKey?: 'embedding' | 'finalNorm' | 'lmHead';
  readonly gguf: string;
  readonly hf: string;
  readonly dims: readonly number[];
  /** Rows are grouped per head and carry RoPE pairs (q/k weights and biases): `heads` heads. */
  readonly ropeHeads?: number;
  /** A Gemma RMSNorm weight: the Hugging Face file holds w, the multiplier is 1 + w. */
  readonly hfPlusOne?: boolean;
}

/** Every tensor a model with this config has, in load order. */
export function weightSlots(config: ModelConfig): WeightSlot[] {
  const { hiddenSize: dm, intermediateSize: f, numHeads: hq, numKvHeads: hkv, headDim: d, vocabSize: v } = config;
  const gemma = config.gemma !== undefined;
  const postNorms = config.gemma?.postNorms === true;
  const slots: WeightSlot[] = [
    { globalKey: 'embedding', gguf: 'token_embd.weight', hf: 'model.embed_tokens.weight', dims: [v, dm] },
  ];
  for (let i = 0; i < config.numLayers; i++) {
    const g = (s: string): string => `blk.${i}.${s}`;
    const h = (s: string): string => `model.layers.${i}.${s}`;
    const layer = (
      layerKey: LayerWeightName,
      gguf: string,
      hf: string,
      dims: number[],
      ropeHeads?: number,
    ): WeightSlot => ({
      layer: i,
      layerKey,
      gguf: g(gguf),
      hf: h(hf),
      dims,
      ropeHeads,
      ...(gemma && dims.length === 1 && /norm/i.test(layerKey) ? { hfPlusOne: true } : {}),
    });
    slots.push(
      layer('attnNorm', 'attn_norm.weight', 'input_layernorm.weight', [dm]),
      layer('wq', 'attn_q.weight', 'self_attn.q_proj.weight', [hq * d, dm], hq),
      layer('wk', 'attn_k.weight', 'self_attn.k_proj.weight', [hkv * d, dm], hkv),
      layer('wv', 'attn_v.weight', 'self_attn.v_proj.weight', [hkv * d, dm]),
      layer('wo', 'attn_output.weight', 'self_attn.o_proj.weight', [dm, hq * d]),
    );
    if (config.attentionBias) {
      slots.push(
        layer('bq', 'attn_q.bias', 'self_attn.q_proj.bias', [hq * d], hq),
        layer('bk', 'attn_k.bias', 'self_attn.k_proj.bias', [hkv * d], hkv),
        layer('bv', 'attn_v.bias', 'self_attn.v_proj.bias', [hkv * d]),
      );
    }
    if (config.qkNorm) {
      slots.push(
        layer('qNorm', 'attn_q_norm.weight', 'self_attn.q_norm.weight', [d]),
        layer('kNorm', 'attn_k_norm.weight', 'self_attn.k_norm.weight', [d]),
      );
    }
    // Gemma 2/3's post_attention_layernorm is the norm after attention; Llama's (and Gemma's) the one before the MLP.
    if (postNorms)
      slots.push(layer('attnPostNorm', 'post_attention_norm.weight', 'post_attention_layernorm.weight', [dm]));
    slots.push(
      layer(
        'ffnNorm',
        'ffn_norm.weight',
        postNorms ? 'pre_feedforward_layernorm.weight' : 'post_attention_layernorm.weight',
        [dm],
      ),
      layer('wGate', 'ffn_gate.weight', 'mlp.gate_proj.weight', [f, dm]),
      layer('wUp', 'ffn_up.weight', 'mlp.up_proj.weight', [f, dm]),
      layer('wDown', 'ffn_down.weight', 'mlp.down_proj.weight', [dm, f]),
    );
    if (postNorms) slots.push(layer('ffnPostNorm', 'post_ffw_norm.weight', 'post_feedforward_layernorm.weight', [dm]));
  }
  slots.push({
    globalKey: 'finalNorm',
    gguf: 'output_norm.weight',
    hf: 'model.norm.weight',
    dims: [dm],
    ...(gemma ? { hfPlusOne: true } : {}),
  });
  if (!config.tiedEmbeddings)
    slots.push({ globalKey: 'lmHead', gguf: 'output.weight', hf: 'lm_head.weight', dims: [v, dm] });
  return slots;
}

/** Put loaded tensors into a HostWeights, checking nothing is missing. */
export function assembleWeights(config: ModelConfig, load: (slot: WeightSlot) => HostTensor): HostWeights {
  const globals: Partial<Record<'embedding' | 'finalNorm' | 'lmHead', HostTensor>> = {};
  const layers: Array<Partial<Record<LayerWeightName, HostTensor>>> = Array.from(
    { length: config.numLayers },
    () => ({}),
  );
  for (const slot of weightSlots(config)) {
    const tensor = load(slot);
    if (slot.globalKey) globals[slot.globalKey] = tensor;
    else if (slot.layerKey && slot.layer !== undefined) layers[slot.layer][slot.layerKey] = tensor;
  }
  const embedding = globals.embedding!;
  return {
    embedding,
    layers: layers as unknown as HostLayerWeights[],
    finalNorm: globals.finalNorm!,
    lmHead: config.tiedEmbeddings ? embedding : globals.lmHead!,
  };
}

/** Compare dims or explain which tensor has the wrong shape. */
export function checkDims(what: string, actual: readonly number[], expected: readonly number[]): void {
  if (actual.length !== expected.length || actual.some((x, i) => x !== expected[i])) {
    throw new WeightsError(
      `${what} has shape [${actual.join(', ')}], expected [${expected.join(', ')}] from the model config`,
    );
  }
}

/**
 * Undo llama.cpp's Q/K row permutation. convert_hf_to_gguf.py `permute`
 * reshapes the rows as [heads, 2, D/2] and swaps the last two axes, so
 * GGUF row h*D + 2i + j holds HF row h*D + j*D/2 + i (j in {0, 1}): each
 * RoPE pair becomes adjacent for llama.cpp's interleaved kernel. We want
 * HF's rotate_half layout back, so HF row h*D + j*D/2 + i = GGUF row h*D + 2i + j.
 * `rowLength` is 1 for a bias vector.
 */
export function unpermuteRopeRows<T extends Float32Array | Uint8Array>(data: T, heads: number, rowLength: number): T {
  const rows = data.length / rowLength;
  const headDim = rows / heads;
  if (!Number.isInteger(headDim) || headDim % 2 !== 0) {
    throw new WeightsError(
      `cannot undo the RoPE permutation: ${rows} rows do not split into ${heads} heads of even size`,
    );
  }
  const half = headDim / 2;
  // Rows of f32 values or of a file's raw blocks: the same permutation of whole rows.
  const out = new (data.constructor as new (length: number) => T)(data.length);
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) {
        const src = (h * headDim + 2 * i + j) * rowLength;
        const dst = (h * headDim + j * half + i) * rowLength;
        out.set(data.subarray(src, src + rowLength), dst);
      }
    }
  }
  return out;
}
