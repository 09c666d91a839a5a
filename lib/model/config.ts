import { PjrtScoreError } from '../util/errors';
import type { GgufFile } from './gguf';
import { GgufError } from './gguf-types';
import { GemmaParts, SlidingWindow, gemmaFromGguf, gemmaFromHf, windowFromHf } from './gemma';
import { ggufRopeBase, ropeFromHf } from './rope-config';
import type { RopeScaling } from '../util/rope';

export type { GemmaParts, SlidingWindow } from './gemma';

/**
 * The decoder families pjrt-score runs: Llama, plus Qwen2 (q/k/v bias),
 * Qwen3 (q/k RMSNorm), Gemma, Gemma 2 and Gemma 3 (the Gemma parts: gemma.ts).
 */
export type Architecture = 'llama' | 'qwen2' | 'qwen3' | 'gemma' | 'gemma2' | 'gemma3';
export const ARCHITECTURES: readonly Architecture[] = ['llama', 'qwen2', 'qwen3', 'gemma', 'gemma2', 'gemma3'];

/**
 * Hugging Face model_type values and the architecture each loads as: Mistral
 * is the Llama decoder (with a sliding window where its config sets one), a
 * text-only Gemma 3 config says gemma3_text.
 */
export const HF_MODEL_TYPES: Readonly<Record<string, Architecture>> = {
  llama: 'llama',
  mistral: 'llama',
  qwen2: 'qwen2',
  qwen3: 'qwen3',
  gemma: 'gemma',
  gemma2: 'gemma2',
  gemma3: 'gemma3',
  gemma3_text: 'gemma3',
};

/** Everything the programs and the scorer need to know about a model, independent of the file format. */
export interface ModelConfig {
  readonly architecture: Architecture;
  /** Rows of the embedding and the LM head (may exceed the tokenizer's vocabulary when padded). */
  readonly vocabSize: number;
  /** d_model. */
  readonly hiddenSize: number;
  /** Width of the SwiGLU MLP. */
  readonly intermediateSize: number;
  readonly numLayers: number;
  /** Query heads. */
  readonly numHeads: number;
  /** Key/value heads (grouped-query attention: numHeads is a multiple). */
  readonly numKvHeads: number;
  readonly headDim: number;
  /** RoPE base; rotate-half (NeoX) pairing over the whole head. */
  readonly ropeTheta: number;
  /** RoPE scaling (linear, llama3, yarn, GGUF frequency factors); absent: plain RoPE. Gemma's is in `gemma`. */
  readonly ropeScaling?: RopeScaling;
  readonly rmsEps: number;
  /** Longest sequence the model was trained for. */
  readonly contextLength: number;
  /** The LM head is the embedding matrix. */
  readonly tiedEmbeddings: boolean;
  /** q/k/v projections have biases (Qwen2). */
  readonly attentionBias: boolean;
  /** RMSNorm over each head of q and k before RoPE (Qwen3). */
  readonly qkNorm: boolean;
  readonly bosTokenId?: number;
  readonly eosTokenId?: number;
  /** The tokenizer config asks for a BOS token at the start of every sequence. */
  readonly addBos: boolean;
  /** The Gemma parts (gemma.ts); absent for the other families, whose programs never change. */
  readonly gemma?: GemmaParts;
  /**
   * Sliding-window attention: layer i attends only to keys less than
   * `window` positions back where `layers[i]` is true (Gemma's local layers,
   * every layer of a windowed Mistral). Absent: every layer is global.
   */
  readonly slidingWindow?: SlidingWindow;
}

export class ModelConfigError extends PjrtScoreError {
  declare readonly code: 'MODEL_CONFIG_INVALID';
  constructor(message: string) {
    super(message, 'MODEL_CONFIG_INVALID');
    this.name = 'ModelConfigError';
  }
}

/** Read the config of a llama/qwen2/qwen3 GGUF file (metadata plus which tensors exist). */
export function configFromGguf(file: GgufFile): ModelConfig {
  const meta = file.meta;
  const arch = meta.string('general.architecture');
  if (!(ARCHITECTURES as readonly string[]).includes(arch)) {
    throw new GgufError(
      `GGUF architecture "${arch}" is not supported by pjrt-score (supported: ${ARCHITECTURES.join(', ')})`,
      'GGUF_UNSUPPORTED',
    );
  }
  const architecture = arch as Architecture;
  const k = (suffix: string): string => `${arch}.${suffix}`;
  const hiddenSize = meta.integer(k('embedding_length'));
  const numHeads = meta.integer(k('attention.head_count'));
  const headDim = meta.integer(k('attention.key_length'), 'optional') ?? hiddenSize / numHeads;
  const valueDim = meta.integer(k('attention.value_length'), 'optional') ?? headDim;
  if (valueDim !== headDim) {
    throw new GgufError(
      `GGUF ${k('attention.value_length')} ${valueDim} differs from the key length ${headDim}: not supported`,
      'GGUF_UNSUPPORTED',
    );
  }
  const ropeDims = meta.integer(k('rope.dimension_count'), 'optional') ?? headDim;
  if (ropeDims !== headDim) {
    throw new GgufError(
      `GGUF ${k('rope.dimension_count')} is ${ropeDims} but the head dimension is ${headDim}: ` +
        `partial RoPE is not supported`,
      'GGUF_UNSUPPORTED',
    );
  }
  const gemma =
    architecture === 'gemma' || architecture === 'gemma2' || architecture === 'gemma3'
      ? gemmaFromGguf(meta, architecture, headDim, file.path)
      : undefined;
  const ropeScaling = gemma ? undefined : ggufRopeScaling(file, arch, headDim);
  if (gemma && file.tensors.has('rope_freqs.weight')) {
    throw new GgufError(`GGUF file ${file.path}: rope_freqs.weight is not supported for ${arch}`, 'GGUF_UNSUPPORTED');
  }
  const embedding = file.tensor('token_embd.weight');
  const vocabSize = meta.integer(k('vocab_size'), 'optional') ?? embedding.dims[1];
  const tokenizerModel = meta.string('tokenizer.ggml.model', 'optional');
  return validateConfig(
    {
      architecture,
      vocabSize,
      hiddenSize,
      intermediateSize: meta.integer(k('feed_forward_length')),
      numLayers: meta.integer(k('block_count')),
      numHeads,
      numKvHeads: meta.integer(k('attention.head_count_kv'), 'optional') ?? numHeads,
      headDim,
      ropeTheta: gemma ? gemma.ropeTheta : ggufRopeBase(meta, k('rope.freq_base'), file.path),
      ...(ropeScaling ? { ropeScaling } : {}),
      rmsEps: meta.number(k('attention.layer_norm_rms_epsilon')),
      contextLength: meta.integer(k('context_length')),
      tiedEmbeddings: !file.tensors.has('output.weight'),
      attentionBias: file.tensors.has('blk.0.attn_q.bias'),
      qkNorm: file.tensors.has('blk.0.attn_q_norm.weight'),
      bosTokenId: meta.integer('tokenizer.ggml.bos_token_id', 'optional'),
      eosTokenId: meta.integer('tokenizer.ggml.eos_token_id', 'optional'),
      // llama.cpp's default when the key is absent: SentencePiece ("llama") vocabularies add BOS, BPE ones do not.
      addBos: meta.boolean('tokenizer.ggml.add_bos_token', 'optional') ?? tokenizerModel === 'llama',
      ...(gemma ?? {}),
    },
    `GGUF file ${file.path}`,
  );
}

/**
 * A llama/qwen GGUF's RoPE scaling: `rope.scaling.type` linear (with
 * `rope.scaling.factor`), or the `rope_freqs.weight` tensor llama.cpp's
 * converter writes for Llama 3.1/3.2 (one divisor per rotary pair, which
 * llama.cpp applies whatever the scaling type says).
 */
function ggufRopeScaling(file: GgufFile, arch: string, headDim: number): RopeScaling | undefined {
  const key = `${arch}.rope.scaling.type`;
  const type = file.meta.string(key, 'optional');
  const refuse = (what: string): never => {
    throw new GgufError(
      `GGUF file ${file.path}: ${what} is not supported (supported: none, linear, and the rope_freqs.weight tensor)`,
      'GGUF_UNSUPPORTED',
    );
  };
  if (file.tensors.has('rope_freqs.weight')) {
    if (type === 'linear') refuse(`${key} "linear" together with rope_freqs.weight`);
    const info = file.tensor('rope_freqs.weight');
    if (info.dims.length !== 1 || info.dims[0] !== headDim / 2) {
      refuse(`rope_freqs.weight of shape [${info.dims.join(', ')}] (the head needs [${headDim / 2}])`);
    }
    const factors = Array.from(file.readTensorFloat32('rope_freqs.weight'));
    if (!factors.every((f) => Number.isFinite(f) && f > 0))
      refuse('rope_freqs.weight with a factor that is not positive and finite');
    return { type: 'frequency-factors', factors };
  }
  if (type === undefined || type === 'none') return undefined;
  if (type !== 'linear') refuse(`${key} "${type}"`);
  const factor = file.meta.number(`${arch}.rope.scaling.factor`, 'optional');
  if (factor === undefined || !(factor > 0)) refuse(`${key} "linear" without a positive ${arch}.rope.scaling.factor`);
  return factor === 1 ? undefined : { type: 'linear', factor: factor as number };
}

type Json = Record<string, unknown>;

export interface HfConfigOptions {
  /** The safetensors dtype of the embedding (F32, F16, BF16): Gemma scales embeddings by sqrt(hidden) rounded to it. */
  readonly embeddingDtype?: string;
}

/**
 * Read a Hugging Face config.json (already parsed). `tokenizerConfig`
 * (tokenizer_config.json) and `tokenizerJson` (tokenizer.json) decide addBos:
 * an explicit add_bos_token wins, else a post-processor that inserts a
 * special token before the sequence.
 */
export function configFromHf(
  config: Json,
  tokenizerConfig?: Json,
  tokenizerJson?: Json,
  source = 'config.json',
  options: HfConfigOptions = {},
): ModelConfig {
  const modelType = config.model_type;
  const architecture =
    typeof modelType === 'string' && Object.hasOwn(HF_MODEL_TYPES, modelType) ? HF_MODEL_TYPES[modelType] : undefined;
  if (architecture === undefined) {
    throw new ModelConfigError(
      `${source}: model_type ${JSON.stringify(modelType)} is not supported by pjrt-score (supported: ` +
        `${Object.keys(HF_MODEL_TYPES).join(', ')})`,
    );
  }
  if (config.text_config !== undefined) {
    throw new ModelConfigError(
      `${source}: a multimodal ${String(modelType)} config (text_config) ` +
        `is not supported: load the text-only model (model_type gemma3_text)`,
    );
  }
  const gemmaArch = architecture === 'gemma' || architecture === 'gemma2' || architecture === 'gemma3';
  const int = (key: string, fallback?: number): number => {
    const v = config[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
      throw new ModelConfigError(`${source}: ${key} should be a positive integer, got ${JSON.stringify(v)}`);
    }
    return v;
  };
  const num = (key: string, fallback: number): number => {
    const v = config[key] ?? fallback;
    if (typeof v !== 'number' || !(v > 0))
      throw new ModelConfigError(`${source}: ${key} should be a positive number, got ${JSON.stringify(v)}`);
    return v;
  };
  if (config.mlp_bias === true) throw new ModelConfigError(`${source}: mlp_bias=true is not supported`);
  if (architecture !== 'llama' && !gemmaArch && config.use_sliding_window === true)
    throw new ModelConfigError(`${source}: use_sliding_window=true is not supported`);
  const hiddenSize = int('hidden_size');
  const numHeads = int('num_attention_heads');
  const numLayers = int('num_hidden_layers');
  // GemmaConfig, Gemma2Config and Gemma3TextConfig default to a head dim of 256 and (Gemma 3) a RoPE base of 1e6.
  const headDim = int('head_dim', gemmaArch ? 256 : hiddenSize / numHeads);
  const fail = (message: string): never => {
    throw new ModelConfigError(message);
  };
  const gemma = gemmaArch
    ? gemmaFromHf(
        config,
        architecture,
        { hiddenSize, headDim, numLayers, embeddingDtype: options.embeddingDtype },
        source,
        fail,
      )
    : undefined;
  const window =
    modelType === 'mistral' ? windowFromHf(config, numLayers, int('max_position_embeddings'), source, fail) : undefined;
  // Gemma's RoPE (a base per layer kind, linear scaling of the global layers) is read in gemma.ts.
  const rope = gemma
    ? { theta: gemma.ropeTheta, scaling: undefined }
    : ropeFromHf(config, { defaultTheta: 10000, contextLength: int('max_position_embeddings'), source }, fail);
  return validateConfig(
    {
      architecture,
      vocabSize: int('vocab_size'),
      hiddenSize,
      intermediateSize: int('intermediate_size'),
      numLayers,
      numHeads,
      numKvHeads: int('num_key_value_heads', numHeads),
      headDim,
      ropeTheta: rope.theta,
      ...(rope.scaling ? { ropeScaling: rope.scaling } : {}),
      rmsEps: num('rms_norm_eps', 1e-6),
      contextLength: int('max_position_embeddings'),
      // transformers' LlamaConfig, Qwen2Config and Qwen3Config all default to untied; Gemma's configs to tied.
      tiedEmbeddings: gemmaArch ? config.tie_word_embeddings !== false : config.tie_word_embeddings === true,
      attentionBias: architecture === 'qwen2' || config.attention_bias === true,
      qkNorm: architecture === 'qwen3' || architecture === 'gemma3',
      bosTokenId: firstTokenId(config.bos_token_id),
      eosTokenId: firstTokenId(config.eos_token_id),
      addBos: hfAddBos(tokenizerConfig, tokenizerJson),
      ...(gemma ?? {}),
      ...(window ? { slidingWindow: window } : {}),
    },
    source,
  );
}

function firstTokenId(v: unknown): number | undefined {
  const id = Array.isArray(v) ? v[0] : v;
  return typeof id === 'number' && Number.isInteger(id) && id >= 0 ? id : undefined;
}

function hfAddBos(tokenizerConfig?: Json, tokenizerJson?: Json): boolean {
  if (typeof tokenizerConfig?.add_bos_token === 'boolean') return tokenizerConfig.add_bos_token;
  const post = tokenizerJson?.post_processor as Json | null | undefined;
  const processors = post?.type === 'Sequence' ? ((post.processors as Json[]) ?? []) : post ? [post] : [];
  for (const p of processors) {
    if (p.type !== 'TemplateProcessing' || !Array.isArray(p.single)) continue;
    const first = p.single[0] as Json | undefined;
    if (first && typeof first === 'object' && 'SpecialToken' in first) return true;
  }
  return false;
}

/** Check the numbers fit together; every message names the source and the offending values. */
export function validateConfig(c: ModelConfig, source: string): ModelConfig {
  const fail = (msg: string): never => {
    throw new ModelConfigError(`${source}: ${msg}`);
  };
  for (const key of [
    'vocabSize',
    'hiddenSize',
    'intermediateSize',
    'numLayers',
    'numHeads',
    'numKvHeads',
    'headDim',
    'contextLength',
  ] as const) {
    if (!Number.isInteger(c[key]) || c[key] <= 0) fail(`${key} must be a positive integer, got ${c[key]}`);
  }
  if (c.numHeads % c.numKvHeads !== 0) fail(`numHeads ${c.numHeads} is not a multiple of numKvHeads ${c.numKvHeads}`);
  if (c.headDim % 2 !== 0) fail(`headDim ${c.headDim} must be even for RoPE`);
  if (!(c.rmsEps > 0 && c.rmsEps < 1)) fail(`rmsEps must be in (0, 1), got ${c.rmsEps}`);
  if (!(c.ropeTheta > 0)) fail(`ropeTheta must be positive, got ${c.ropeTheta}`);
  for (const key of ['bosTokenId', 'eosTokenId'] as const) {
    const id = c[key];
    if (id !== undefined && id >= c.vocabSize) fail(`${key} ${id} is outside the vocabulary of ${c.vocabSize}`);
  }
  if (c.addBos && c.bosTokenId === undefined) fail('the tokenizer asks for a BOS token but none is defined');
  const w = c.slidingWindow;
  if (w) {
    if (!(Number.isSafeInteger(w.window) && w.window >= 1))
      fail(`the sliding window must be a positive integer, got ${w.window}`);
    if (w.layers.length !== c.numLayers)
      fail(`the sliding-window pattern has ${w.layers.length} layers, the model ${c.numLayers}`);
  }
  return c;
}
