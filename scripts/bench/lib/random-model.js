'use strict';
/**
 * A random model in Hugging Face form (config.json, tokenizer.json,
 * model.safetensors in bf16), written tensor by tensor from a PRNG so that a
 * 4B model never sits in memory whole. For benchmarks where only the shapes
 * matter (bench:gpu: Qwen3-0.6B's shape on an H100; npm run bench's models
 * section: the rerankers' shapes on the CPU; both with token-id inputs) and
 * for the streaming-load test. The tokenizer is a 256-token byte-level BPE
 * without merges: requests use token ids, and ids up to the config's vocab
 * size are valid. Architectures: llama, qwen2 (q/k/v biases), qwen3 (q/k
 * RMSNorm) and gemma (Gemma 1: GeGLU with the tanh GELU, embeddings scaled by
 * sqrt(hidden), norms stored as w for a multiplier of 1 + w, so written as 0).
 *
 *   PRESETS.qwen3_0_6b / qwen3_4b / qwen2_0_5b / qwen2_1_5b / gemma_2b / smollm2_135m   dims
 *   PRESETS.qwen3_tiny / qwen2_tiny / gemma_tiny   the same architectures at toy size
 *   writeRandomModel(dir, dims, { seed }) -> { params, fileBytes }
 *   hfConfig(dims) -> config.json's object
 *   hfTensors(dims) -> [{ name, dims, norm }]       HF tensor names and shapes
 */
const fs = require('node:fs');
const path = require('node:path');

/** Dims in Hugging Face config terms; arch selects qk-norm (qwen3), q/k/v biases (qwen2), Gemma 1 (gemma) or none of them (llama). */
const PRESETS = {
  // Qwen3-0.6B: 28 layers, hidden 1024, 16 query / 8 KV heads of 128, MLP 3072, vocab 151,936, tied.
  qwen3_0_6b: {
    arch: 'qwen3',
    vocab: 151936,
    hidden: 1024,
    mlp: 3072,
    layers: 28,
    heads: 16,
    kvHeads: 8,
    headDim: 128,
  },
  // The same architecture at toy size, for the suite (runs on the CPU plugin in seconds).
  qwen3_tiny: { arch: 'qwen3', vocab: 512, hidden: 64, mlp: 128, layers: 2, heads: 4, kvHeads: 2, headDim: 16 },
  // SmolLM2-135M (the default model's shape): 30 layers, hidden 576, 9 query / 3 KV heads of 64, MLP 1536, vocab 49,152, tied.
  smollm2_135m: {
    arch: 'llama',
    vocab: 49152,
    hidden: 576,
    mlp: 1536,
    layers: 30,
    heads: 9,
    kvHeads: 3,
    headDim: 64,
    ropeTheta: 100000,
  },
  // Qwen2-1.5B: 28 layers, hidden 1536, 12 query / 2 KV heads of 128, MLP 8960, vocab 151,936, tied.
  qwen2_1_5b: {
    arch: 'qwen2',
    vocab: 151936,
    hidden: 1536,
    mlp: 8960,
    layers: 28,
    heads: 12,
    kvHeads: 2,
    headDim: 128,
  },
  // Qwen3-4B (Qwen3-Reranker-4B): 36 layers, hidden 2560, 32 query / 8 KV heads of 128, MLP 9728, vocab 151,936, tied.
  qwen3_4b: { arch: 'qwen3', vocab: 151936, hidden: 2560, mlp: 9728, layers: 36, heads: 32, kvHeads: 8, headDim: 128 },
  // Qwen2-0.5B (mxbai-rerank-base-v2): 24 layers, hidden 896, 14 query / 2 KV heads of 64, MLP 4864, vocab 151,936, tied.
  qwen2_0_5b: { arch: 'qwen2', vocab: 151936, hidden: 896, mlp: 4864, layers: 24, heads: 14, kvHeads: 2, headDim: 64 },
  // Gemma-2B (bge-reranker-v2-gemma): 18 layers, hidden 2048, 8 query / 1 KV head of 256, GeGLU MLP 16384, vocab 256,000, tied.
  gemma_2b: {
    arch: 'gemma',
    vocab: 256000,
    hidden: 2048,
    mlp: 16384,
    layers: 18,
    heads: 8,
    kvHeads: 1,
    headDim: 256,
    ropeTheta: 10000,
  },
  // Qwen2 and Gemma at toy size (the models section's smoke runs and the suite).
  qwen2_tiny: { arch: 'qwen2', vocab: 512, hidden: 64, mlp: 128, layers: 2, heads: 4, kvHeads: 2, headDim: 16 },
  gemma_tiny: {
    arch: 'gemma',
    vocab: 512,
    hidden: 64,
    mlp: 192,
    layers: 2,
    heads: 4,
    kvHeads: 1,
    headDim: 32,
    ropeTheta: 10000,
  },
};

/** transformers' class and hidden activation of each architecture. */
const ARCHITECTURES = {
  llama: { architecture: 'LlamaForCausalLM', act: 'silu' },
  qwen2: { architecture: 'Qwen2ForCausalLM', act: 'silu' },
  qwen3: { architecture: 'Qwen3ForCausalLM', act: 'silu' },
  gemma: { architecture: 'GemmaForCausalLM', act: 'gelu_pytorch_tanh' },
};

/**
 * The tensors of a tied-embedding checkpoint of the preset's architecture, in file order. `norm`:
 * the value every element of a norm weight holds (1.0 for a multiplier w; 0 for Gemma's 1 + w).
 */
function hfTensors(d) {
  const norm = d.arch === 'gemma' ? 0 : 1;
  const list = [{ name: 'model.embed_tokens.weight', dims: [d.vocab, d.hidden] }];
  for (let l = 0; l < d.layers; l++) {
    const p = `model.layers.${l}.`;
    list.push(
      { name: `${p}input_layernorm.weight`, dims: [d.hidden], norm },
      { name: `${p}self_attn.q_proj.weight`, dims: [d.heads * d.headDim, d.hidden] },
      { name: `${p}self_attn.k_proj.weight`, dims: [d.kvHeads * d.headDim, d.hidden] },
      { name: `${p}self_attn.v_proj.weight`, dims: [d.kvHeads * d.headDim, d.hidden] },
      { name: `${p}self_attn.o_proj.weight`, dims: [d.hidden, d.heads * d.headDim] },
    );
    if (d.arch === 'qwen2') {
      list.push(
        { name: `${p}self_attn.q_proj.bias`, dims: [d.heads * d.headDim] },
        { name: `${p}self_attn.k_proj.bias`, dims: [d.kvHeads * d.headDim] },
        { name: `${p}self_attn.v_proj.bias`, dims: [d.kvHeads * d.headDim] },
      );
    }
    if (d.arch === 'qwen3') {
      list.push(
        { name: `${p}self_attn.q_norm.weight`, dims: [d.headDim], norm },
        { name: `${p}self_attn.k_norm.weight`, dims: [d.headDim], norm },
      );
    }
    list.push(
      { name: `${p}post_attention_layernorm.weight`, dims: [d.hidden], norm },
      { name: `${p}mlp.gate_proj.weight`, dims: [d.mlp, d.hidden] },
      { name: `${p}mlp.up_proj.weight`, dims: [d.mlp, d.hidden] },
      { name: `${p}mlp.down_proj.weight`, dims: [d.hidden, d.mlp] },
    );
  }
  list.push({ name: 'model.norm.weight', dims: [d.hidden], norm });
  return list;
}

const count = (dims) => dims.reduce((a, b) => a * b, 1);

/**
 * Writes the tensors as bf16 safetensors from a xorshift PRNG: a tensor with `norm` true or 1 holds
 * 1.0 and one with `norm` 0 holds 0 (norms),
 * everything else has a random sign and a magnitude in [2^-8, 2^-4) (small
 * weights of both signs: activations stay in range through many layers).
 */
function writeRandomBf16Safetensors(file, tensors, seed = 1) {
  const header = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const t of tensors) {
    const bytes = count(t.dims) * 2;
    header[t.name] = { dtype: 'BF16', shape: t.dims, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = Buffer.from(JSON.stringify(header), 'utf8');
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
  const fd = fs.openSync(file, 'w');
  try {
    const length = Buffer.alloc(8);
    length.writeBigUInt64LE(BigInt(json.length));
    fs.writeSync(fd, length);
    fs.writeSync(fd, json);
    const chunk = new Uint16Array(8 << 20);
    let a = seed >>> 0 || 1;
    for (const t of tensors) {
      for (let left = count(t.dims); left > 0;) {
        const n = Math.min(left, chunk.length);
        if (t.norm === true || typeof t.norm === 'number') {
          chunk.fill(t.norm === 0 ? 0 : 0x3f80, 0, n); // bf16 0 or 1.0
        } else {
          for (let i = 0; i < n; i++) {
            a ^= a << 13;
            a ^= a >>> 17;
            a ^= a << 5;
            a >>>= 0;
            // sign | exponent 2^-8 .. 2^-5 | 7 mantissa bits
            chunk[i] = ((a & 1) << 15) | ((0x77 + ((a >>> 1) & 3)) << 7) | ((a >>> 3) & 0x7f);
          }
        }
        fs.writeSync(fd, chunk.subarray(0, n));
        left -= n;
      }
    }
  } finally {
    fs.closeSync(fd);
  }
  return 8 + json.length + offset;
}

/** A byte-level BPE over the 256 byte symbols, no merges: enough for a model driven by token ids. */
function byteTokenizerJson() {
  // GPT-2's byte-to-unicode map: printable bytes stand for themselves, the rest move to 256+.
  const printable = (b) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  const vocab = {};
  let shifted = 0;
  for (let b = 0; b < 256; b++) vocab[String.fromCodePoint(printable(b) ? b : 256 + shifted++)] = b;
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: [],
    },
  };
}

/** The config.json of a preset, in transformers' keys for its architecture. */
function hfConfig(dims) {
  const arch = ARCHITECTURES[dims.arch];
  if (!arch) throw new Error(`random models are ${Object.keys(ARCHITECTURES).join(', ')}, not ${dims.arch}`);
  return {
    architectures: [arch.architecture],
    model_type: dims.arch,
    vocab_size: dims.vocab,
    hidden_size: dims.hidden,
    intermediate_size: dims.mlp,
    num_hidden_layers: dims.layers,
    num_attention_heads: dims.heads,
    num_key_value_heads: dims.kvHeads,
    head_dim: dims.headDim,
    hidden_act: arch.act,
    rope_theta: dims.ropeTheta ?? 1000000,
    rms_norm_eps: 1e-6,
    max_position_embeddings: 40960,
    tie_word_embeddings: true,
    attention_bias: dims.arch === 'qwen2',
    bos_token_id: 1,
    eos_token_id: 2,
    rope_scaling: null,
    torch_dtype: 'bfloat16',
  };
}

/** Writes a whole random model directory; returns its parameter count and file size. */
function writeRandomModel(dir, dims, { seed = 1 } = {}) {
  const config = hfConfig(dims);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config, null, 2));
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(byteTokenizerJson()));
  fs.writeFileSync(
    path.join(dir, 'tokenizer_config.json'),
    JSON.stringify({ add_bos_token: false, clean_up_tokenization_spaces: false }),
  );
  const tensors = hfTensors(dims);
  const fileBytes = writeRandomBf16Safetensors(path.join(dir, 'model.safetensors'), tensors, seed);
  return { params: tensors.reduce((n, t) => n + count(t.dims), 0), fileBytes, tensors };
}

module.exports = { PRESETS, hfConfig, hfTensors, writeRandomModel, writeRandomBf16Safetensors };
