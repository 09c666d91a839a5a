/**
 * The Gemma family's parts of a model config (Gemma, Gemma 2, Gemma 3), read
 * from GGUF metadata as llama.cpp writes and reads it, or from a Hugging
 * Face config.json as transformers reads it. What differs from the Llama
 * decoder (docs/models.md, "Architectures"):
 *
 * - embeddings multiplied by sqrt(hidden), that factor rounded to the
 *   embedding's dtype as transformers does (f32 for GGUF, as llama.cpp);
 * - RMSNorm weights used as (1 + w): transformers stores w, llama.cpp's
 *   conversion stores 1 + w; the canonical host layout holds the multiplier
 *   (weights.ts adds the 1 to a Hugging Face file's norms);
 * - GeGLU (gelu, tanh approximation) instead of SwiGLU;
 * - Gemma 2 and 3: four norms per layer (before and after attention, before
 *   and after the MLP); Gemma (1) has Llama's two (`postNorms` false);
 * - the score scale query_pre_attn_scalar^-0.5 (llama.cpp, which has no key
 *   for it, uses 1/sqrt(head dim), or 1/sqrt(hidden / heads) for the 27B);
 *   Gemma (1): 1/sqrt(head dim), as transformers' GemmaAttention;
 * - Gemma 2: attention-logit and final-logit soft-capping (cap * tanh(x / cap));
 * - sliding-window local layers interleaved with global ones (Gemma 2:
 *   layers 0, 2, 4, ... local; Gemma 3: five local then one global), the
 *   local layers with their own RoPE base (Gemma 3: 10,000) and no RoPE
 *   scaling, the global ones with the file's base and linear scaling.
 */
import type { GgufMetadata } from './gguf-metadata';
import { GgufError } from './gguf-types';
import { ggufRopeBase, ropeFromHf } from './rope-config';

/** What a Gemma decoder computes beyond the Llama one. */
export interface GemmaParts {
  /** Embeddings are multiplied by this: sqrt(hidden) in the embedding's dtype. */
  readonly embeddingScale: number;
  /** A norm after attention and after the MLP, before each residual add (Gemma 2 and 3; not Gemma). */
  readonly postNorms: boolean;
  /** Attention scores are q.k times this. */
  readonly attentionScale: number;
  /** Attention logits soft-capped: cap * tanh(score / cap) (Gemma 2). */
  readonly attentionSoftcap?: number;
  /** Final logits soft-capped the same way (Gemma 2). */
  readonly finalSoftcap?: number;
  /** RoPE base of the sliding-window (local) layers; the global layers use the config's ropeTheta. */
  readonly ropeThetaLocal: number;
  /** Linear RoPE scaling of the global layers: positions divided by this factor. */
  readonly ropeLinearFactor?: number;
}

/** Layers with a sliding window: layer i sees keys less than `window` positions back iff layers[i]. */
export interface SlidingWindow {
  readonly window: number;
  readonly layers: readonly boolean[];
}

interface GemmaConfigPart {
  /** The global layers' RoPE base. */
  readonly ropeTheta: number;
  readonly gemma: GemmaParts;
  readonly slidingWindow?: SlidingWindow;
}

type GemmaArch = 'gemma' | 'gemma2' | 'gemma3';

/** The local/global pattern transformers and llama.cpp use when the file names none: true = sliding. */
function defaultSlidingLayers(
  arch: 'gemma2' | 'gemma3',
  numLayers: number,
  pattern = arch === 'gemma2' ? 2 : 6,
): boolean[] {
  // Layer i is local unless it closes a period of `pattern` layers (gemma2: i odd is global).
  return Array.from({ length: numLayers }, (_, i) => (i + 1) % pattern !== 0);
}

/** sqrt(hidden) rounded to a float dtype (F32, F16, BF16), as torch.tensor(hidden**0.5, dtype=...) does. */
function embeddingScaleIn(hiddenSize: number, dtype: string | undefined): number {
  const x = Math.fround(Math.sqrt(hiddenSize));
  if (dtype === 'BF16') {
    const u = new Uint32Array(new Float32Array([x]).buffer)[0];
    const rounded = ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) << 16;
    return new Float32Array(new Uint32Array([rounded >>> 0]).buffer)[0];
  }
  if (dtype === 'F16') {
    // f16 has 11 significant bits: round to nearest even at that precision (the value is a normal f16).
    const e = Math.floor(Math.log2(x));
    const ulp = 2 ** (e - 10);
    const q = x / ulp;
    const r = Math.floor(q);
    const rounded = q - r > 0.5 || (q - r === 0.5 && r % 2 === 1) ? r + 1 : r;
    return rounded * ulp;
  }
  return x;
}

/** Gemma's parts from GGUF metadata (`arch.*` keys as llama.cpp's converter writes them). */
export function gemmaFromGguf(meta: GgufMetadata, arch: GemmaArch, headDim: number, file: string): GemmaConfigPart {
  const k = (suffix: string): string => `${arch}.${suffix}`;
  const hiddenSize = meta.integer(k('embedding_length'));
  const numLayers = meta.integer(k('block_count'));
  const numHeads = meta.integer(k('attention.head_count'));
  // llama.cpp's rule (it has no key for query_pre_attn_scalar): the 27B models scale by hidden / heads.
  const is27b = arch !== 'gemma' && numLayers === (arch === 'gemma2' ? 46 : 62);
  const attentionScale = 1 / Math.sqrt(is27b ? Math.floor(hiddenSize / numHeads) : headDim);
  const cap = (key: string): number | undefined => {
    const v = meta.number(k(key), 'optional');
    return v !== undefined && v > 0 ? v : undefined;
  };
  const scaling = meta.string(k('rope.scaling.type'), 'optional');
  const factor = scaling === 'linear' ? meta.number(k('rope.scaling.factor'), 'optional') : undefined;
  if (factor !== undefined && !(factor > 0))
    throw new GgufError(
      `GGUF file ${file}: ${k('rope.scaling.factor')} must be positive, got ${factor}`,
      'GGUF_UNSUPPORTED',
    );
  const theta = ggufRopeBase(meta, k('rope.freq_base'), file);
  if (arch === 'gemma') {
    // Gemma (1): no post norms, soft caps or windows; one RoPE base.
    return {
      ropeTheta: theta,
      gemma: {
        embeddingScale: embeddingScaleIn(hiddenSize, 'F32'),
        postNorms: false,
        attentionScale,
        ropeThetaLocal: theta,
      },
    };
  }
  const window = meta.integer(k('attention.sliding_window'), 'optional');
  const pattern = meta.integer(k('attention.sliding_window_pattern'), 'optional');
  return {
    ropeTheta: theta,
    gemma: {
      embeddingScale: embeddingScaleIn(hiddenSize, 'F32'),
      postNorms: true,
      attentionScale,
      ...optional('attentionSoftcap', cap('attn_logit_softcapping')),
      ...optional('finalSoftcap', cap('final_logit_softcapping')),
      // llama.cpp: Gemma 3's local layers use base 10,000 unscaled; Gemma 2 has one base.
      ropeThetaLocal: arch === 'gemma3' ? 10000 : theta,
      ...optional('ropeLinearFactor', factor !== undefined && factor !== 1 ? factor : undefined),
    },
    ...(window !== undefined && window > 0
      ? { slidingWindow: { window, layers: defaultSlidingLayers(arch, numLayers, pattern) } }
      : {}),
  };
}

type Json = Record<string, unknown>;

/** Gemma's parts from a Hugging Face config.json (GemmaConfig, Gemma2Config, Gemma3TextConfig). */
export function gemmaFromHf(
  config: Json,
  arch: GemmaArch,
  sizes: { hiddenSize: number; headDim: number; numLayers: number; embeddingDtype?: string },
  source: string,
  fail: (message: string) => never,
): GemmaConfigPart {
  // transformers' defaults apply to an absent key; an explicit null means none (a cap, a window).
  const positive = (key: string, fallback?: number): number | undefined => {
    const v = Object.hasOwn(config, key) ? config[key] : fallback;
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !(v > 0))
      fail(`${source}: ${key} should be a positive number, got ${JSON.stringify(v)}`);
    return v as number;
  };
  if (arch === 'gemma') return gemma1FromHf(config, sizes, source, fail);
  const gemma2 = arch === 'gemma2';
  const activation = config.hidden_activation ?? config.hidden_act ?? 'gelu_pytorch_tanh';
  if (activation !== 'gelu_pytorch_tanh' && activation !== 'gelu_tanh') {
    fail(`${source}: hidden_activation ${JSON.stringify(activation)} is not supported (gelu_pytorch_tanh is)`);
  }
  // Gemma2Config / Gemma3TextConfig defaults: one base of 10,000 (Gemma 2); 1e6 global, 10,000 local (Gemma 3).
  const contextLength = typeof config.max_position_embeddings === 'number' ? config.max_position_embeddings : 0;
  const global = ropeFromHf(
    config,
    { defaultTheta: gemma2 ? 10000 : 1000000, layerType: 'full_attention', contextLength, source },
    fail,
  );
  if (global.scaling && global.scaling.type !== 'linear')
    fail(`${source}: RoPE scaling ${global.scaling.type} is not supported for ${arch} (linear is)`);
  const factor = global.scaling?.type === 'linear' ? global.scaling.factor : undefined;
  const theta = global.theta;
  const nested = config.rope_parameters as Json | null | undefined;
  const localTheta = (): number => {
    if (gemma2) return theta;
    if (
      nested &&
      typeof nested === 'object' &&
      typeof nested.sliding_attention === 'object' &&
      nested.sliding_attention !== null
    ) {
      const local = ropeFromHf(
        config,
        { defaultTheta: 10000, layerType: 'sliding_attention', contextLength, source },
        fail,
      );
      if (local.scaling) fail(`${source}: RoPE scaling of the sliding-window layers is not supported`);
      return local.theta;
    }
    return positive('rope_local_base_freq', 10000) ?? 10000;
  };
  const window = positive('sliding_window', 4096);
  return {
    ropeTheta: theta,
    gemma: {
      embeddingScale: embeddingScaleIn(sizes.hiddenSize, sizes.embeddingDtype),
      postNorms: true,
      attentionScale: Math.fround((positive('query_pre_attn_scalar', 256) ?? sizes.headDim) ** -0.5),
      ...optional('attentionSoftcap', positive('attn_logit_softcapping', gemma2 ? 50 : undefined)),
      ...optional('finalSoftcap', positive('final_logit_softcapping', gemma2 ? 30 : undefined)),
      ropeThetaLocal: localTheta(),
      ...optional('ropeLinearFactor', factor !== undefined && factor !== 1 ? factor : undefined),
    },
    ...(window !== undefined
      ? { slidingWindow: { window, layers: hfLayerTypes(config, arch, sizes.numLayers, source, fail) } }
      : {}),
  };
}

/**
 * Gemma (1), as transformers 5's GemmaConfig and GemmaForCausalLM read it:
 * the activation is `hidden_act` (its legacy value "gelu" means the tanh
 * approximation, as GemmaConfig rewrites it; `hidden_activation` is not
 * read), scores scaled by head_dim^-0.5, one RoPE base (default 10,000), no
 * post norms, soft caps or windows.
 */
function gemma1FromHf(
  config: Json,
  sizes: { hiddenSize: number; headDim: number; embeddingDtype?: string },
  source: string,
  fail: (message: string) => never,
): GemmaConfigPart {
  const activation = config.hidden_act ?? 'gelu_pytorch_tanh';
  if (activation !== 'gelu_pytorch_tanh' && activation !== 'gelu_tanh' && activation !== 'gelu') {
    fail(`${source}: hidden_act ${JSON.stringify(activation)} is not supported for gemma (gelu_pytorch_tanh is)`);
  }
  if (config.use_bidirectional_attention === true) fail(`${source}: use_bidirectional_attention=true is not supported`);
  const contextLength = typeof config.max_position_embeddings === 'number' ? config.max_position_embeddings : 0;
  const rope = ropeFromHf(config, { defaultTheta: 10000, contextLength, source }, fail);
  if (rope.scaling) fail(`${source}: RoPE scaling ${rope.scaling.type} is not supported for gemma`);
  return {
    ropeTheta: rope.theta,
    gemma: {
      embeddingScale: embeddingScaleIn(sizes.hiddenSize, sizes.embeddingDtype),
      postNorms: false,
      attentionScale: Math.fround(sizes.headDim ** -0.5),
      ropeThetaLocal: rope.theta,
    },
  };
}

/** `layer_types` (newer configs), else `sliding_window_pattern` (Gemma 3), else the family's default. */
function hfLayerTypes(
  config: Json,
  arch: 'gemma2' | 'gemma3',
  numLayers: number,
  source: string,
  fail: (message: string) => never,
): boolean[] {
  const types = config.layer_types;
  if (Array.isArray(types)) {
    if (types.length !== numLayers || types.some((t) => t !== 'sliding_attention' && t !== 'full_attention')) {
      fail(`${source}: layer_types should list sliding_attention or full_attention for each of ${numLayers} layers`);
    }
    return types.map((t) => t === 'sliding_attention');
  }
  const pattern = config.sliding_window_pattern;
  if (pattern !== undefined && !(Number.isSafeInteger(pattern) && (pattern as number) >= 1)) {
    fail(`${source}: sliding_window_pattern should be a positive integer, got ${JSON.stringify(pattern)}`);
  }
  return defaultSlidingLayers(arch, numLayers, pattern as number | undefined);
}

/**
 * A Mistral config's window: `sliding_window` on every layer (Mistral 7B
 * v0.1: 4096), none when it is null or not shorter than the context.
 */
export function windowFromHf(
  config: Json,
  numLayers: number,
  contextLength: number,
  source: string,
  fail: (message: string) => never,
): SlidingWindow | undefined {
  const w = config.sliding_window;
  if (w === undefined || w === null) return undefined;
  if (!(Number.isSafeInteger(w) && (w as number) >= 1))
    fail(`${source}: sliding_window should be a positive integer or null, got ${JSON.stringify(w)}`);
  if ((w as number) >= contextLength) return undefined;
  return { window: w as number, layers: new Array<boolean>(numLayers).fill(true) };
}

function optional<K extends string>(key: K, value: number | undefined): Partial<Record<K, number>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, number>);
}
