'use strict';
/**
 * A tiny random Llama-family model for tests, written as GGUF and as a
 * Hugging Face directory by writers that are independent of lib/ (GGUF v3,
 * safetensors, and llama.cpp's reference quantizers quantize_row_*_ref).
 *
 *   makeTinyModel(arch = 'llama', seed = 1) -> { arch, config, weights, tokenizer }
 *     config:  a ModelConfig (2 layers, Dm 32, 4 q heads / 2 kv heads, vocab 64;
 *              qwen3 uses head dim 16 so Hq*D != Dm). gemma3: 6 layers (5 local
 *              with a window of 3 and RoPE base 10,000, then 1 global with base
 *              1e6 and linear RoPE scaling 2), q/k norms, head dim 16; gemma2:
 *              3 layers (local, global, local; window 4), attention soft cap 2
 *              and final soft cap 3, so that windows and caps change the numbers;
 *              gemma (Gemma 1): 2 layers, head dim 16, no post norms, caps or windows.
 *              Gemma's 2-D weights are f16-representable (an F16 file holds them
 *              exactly); its norm weights are the multipliers (llama.cpp's 1 + w;
 *              the Hugging Face writer stores w).
 *     weights: HF orientation, Float64Array per tensor (already f32-representable),
 *              lmHead === embedding when tied. Shape of lib's HostWeights.
 *     tokenizer: { tokens, types, merges } of a 64-token byte-level BPE
 *              (ids 0-2 control tokens, 3 "<tool>" user-defined).
 *   writeTinyGguf(model, file, { matrixType, embeddingType, permute, metadata, extraTensors })
 *     extraTensors: more { name, dims (GGUF order), type, bytes } after the model's (rope_freqs.weight);
 *     dropMetadata: keys of the usual metadata left out.
 *     matrixType/embeddingType: 'F32' | 'F16' | 'BF16' | 'Q8_0' | 'Q4_0' | 'Q4_1' for the
 *     2-D tensors (1-D norms and biases stay F32, as llama.cpp does). For llama,
 *     Q and K rows are permuted as convert_hf_to_gguf.py does (unless permute: false).
 *   writeTinyHfDir(model, dir, { dtype: 'F32' | 'F16' | 'BF16', shards: 1 | 2, config: {...} })
 *     config: keys merged into config.json (model_type: 'mistral', sliding_window, ...)
 *   TINY_TEXTS: strings inside the tiny vocabulary's alphabet.
 */
const fs = require('node:fs');
const path = require('node:path');

const GGML = {
  F32: 0,
  F16: 1,
  Q4_0: 2,
  Q4_1: 3,
  Q5_0: 6,
  Q5_1: 7,
  Q8_0: 8,
  Q2_K: 10,
  Q3_K: 11,
  Q4_K: 12,
  Q5_K: 13,
  Q6_K: 14,
  IQ2_XXS: 16,
  IQ2_XS: 17,
  IQ4_NL: 20,
  IQ4_XS: 23,
  BF16: 30,
};
const VALUE = {
  U8: 0,
  I8: 1,
  U16: 2,
  I16: 3,
  U32: 4,
  I32: 5,
  F32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  U64: 10,
  I64: 11,
  F64: 12,
};

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** f32 -> IEEE half bits, round to nearest even (what ggml's GGML_FP32_TO_FP16 does on x86/ARM). */
function f32ToF16Bits(value) {
  f32[0] = value;
  const bits = u32[0];
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  let mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rem > mid || (rem === mid && half & 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && half & 1)) half++; // a carry into the exponent is correct rounding
  return sign | half;
}

/** f32 -> bf16 bits, round to nearest even (torch's conversion). */
function f32ToBf16Bits(value) {
  f32[0] = value;
  const bits = u32[0];
  if ((bits & 0x7fffffff) > 0x7f800000) return (bits >>> 16) | 0x40;
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

/** half bits -> number, by the textbook formula (kept separate from lib's lookup table). */
function f16BitsToNumber(h) {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * Math.pow(2, -24);
  if (e === 31) return m ? NaN : s * Infinity;
  return s * Math.pow(2, e - 15) * (1 + m / 1024);
}

/**
 * Decode `count` values of a ggml type from raw bytes, one element at a time
 * with DataView, straight from the block layouts (independent of lib/).
 */
function referenceDecode(type, bytes, count) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const half = (at) => f16BitsToNumber(view.getUint16(at, true));
  const out = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const blk = Math.floor(i / 32);
    const j = i % 32;
    if (type === 'F32') out[i] = view.getFloat32(4 * i, true);
    else if (type === 'F16') out[i] = half(2 * i);
    else if (type === 'BF16')
      out[i] = new Float32Array(new Uint32Array([view.getUint16(2 * i, true) * 65536]).buffer)[0];
    else if (type === 'Q8_0') out[i] = view.getInt8(blk * 34 + 2 + j) * half(blk * 34);
    else if (type === 'Q4_0' || type === 'Q4_1') {
      const size = type === 'Q4_0' ? 18 : 20;
      const byte = view.getUint8(blk * size + (type === 'Q4_0' ? 2 : 4) + (j % 16));
      const q = j < 16 ? byte & 15 : byte >> 4; // low nibbles: elements 0-15, high: 16-31
      out[i] = type === 'Q4_0' ? (q - 8) * half(blk * 18) : q * half(blk * 20) + half(blk * 20 + 2);
    } else throw new Error(`referenceDecode: no decoder for ${type}`);
  }
  return out;
}

function encodeF32(values) {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeFloatLE(v, i * 4));
  return b;
}
function encodeF16(values) {
  const b = Buffer.alloc(values.length * 2);
  values.forEach((v, i) => b.writeUInt16LE(f32ToF16Bits(v), i * 2));
  return b;
}
function encodeBF16(values) {
  const b = Buffer.alloc(values.length * 2);
  values.forEach((v, i) => b.writeUInt16LE(f32ToBf16Bits(v), i * 2));
  return b;
}

/** quantize_row_q8_0_ref: d = amax/127, q = round(x/d). */
function quantizeQ8_0(values) {
  const out = Buffer.alloc((values.length / 32) * 34);
  for (let blk = 0; blk < values.length / 32; blk++) {
    const x = values.slice(blk * 32, blk * 32 + 32);
    const amax = Math.max(...x.map(Math.abs));
    const d = Math.fround(amax / 127);
    const id = d ? Math.fround(1 / d) : 0;
    out.writeUInt16LE(f32ToF16Bits(d), blk * 34);
    x.forEach((v, j) => out.writeInt8(roundHalfAway(Math.fround(v * id)), blk * 34 + 2 + j));
  }
  return out;
}

/** quantize_row_q4_0_ref: d = max / -8 (max = the value of largest magnitude), q = min(15, trunc(x/d + 8.5)). */
function quantizeQ4_0(values) {
  const out = Buffer.alloc((values.length / 32) * 18);
  for (let blk = 0; blk < values.length / 32; blk++) {
    const x = values.slice(blk * 32, blk * 32 + 32);
    let amax = 0;
    let max = 0;
    for (const v of x) if (Math.abs(v) > amax) ((amax = Math.abs(v)), (max = v));
    const d = Math.fround(max / -8);
    const id = d ? Math.fround(1 / d) : 0;
    out.writeUInt16LE(f32ToF16Bits(d), blk * 18);
    for (let j = 0; j < 16; j++) {
      const q0 = Math.min(15, Math.trunc(Math.fround(x[j] * id) + 8.5));
      const q1 = Math.min(15, Math.trunc(Math.fround(x[j + 16] * id) + 8.5));
      out[blk * 18 + 2 + j] = q0 | (q1 << 4);
    }
  }
  return out;
}

/** quantize_row_q4_1_ref: d = (max - min)/15, m = min, q = min(15, trunc((x - min)/d + 0.5)). */
function quantizeQ4_1(values) {
  const out = Buffer.alloc((values.length / 32) * 20);
  for (let blk = 0; blk < values.length / 32; blk++) {
    const x = values.slice(blk * 32, blk * 32 + 32);
    const min = Math.min(...x);
    const max = Math.max(...x);
    const d = Math.fround((max - min) / 15);
    const id = d ? Math.fround(1 / d) : 0;
    out.writeUInt16LE(f32ToF16Bits(d), blk * 20);
    out.writeUInt16LE(f32ToF16Bits(min), blk * 20 + 2);
    for (let j = 0; j < 16; j++) {
      const q0 = Math.min(15, Math.trunc(Math.fround((x[j] - min) * id) + 0.5));
      const q1 = Math.min(15, Math.trunc(Math.fround((x[j + 16] - min) * id) + 0.5));
      out[blk * 20 + 4 + j] = q0 | (q1 << 4);
    }
  }
  return out;
}

function roundHalfAway(v) {
  return Math.sign(v) * Math.round(Math.abs(v));
}

/** Encode f32-rounded `values` as ggml type `type` (a GGML key). */
function encodeTensor(type, values) {
  const v = Array.from(values, (x) => Math.fround(x));
  switch (type) {
    case 'F32':
      return encodeF32(v);
    case 'F16':
      return encodeF16(v);
    case 'BF16':
      return encodeBF16(v);
    case 'Q8_0':
      return quantizeQ8_0(v);
    case 'Q4_0':
      return quantizeQ4_0(v);
    case 'Q4_1':
      return quantizeQ4_1(v);
    default:
      throw new Error(`tiny writer cannot encode ${type}`);
  }
}

class ByteSink {
  constructor() {
    this.chunks = [];
    this.length = 0;
  }
  push(buf) {
    this.chunks.push(buf);
    this.length += buf.length;
  }
  u8(v) {
    const b = Buffer.alloc(1);
    b.writeUInt8(v);
    this.push(b);
  }
  i8(v) {
    const b = Buffer.alloc(1);
    b.writeInt8(v);
    this.push(b);
  }
  u16(v) {
    const b = Buffer.alloc(2);
    b.writeUInt16LE(v);
    this.push(b);
  }
  i16(v) {
    const b = Buffer.alloc(2);
    b.writeInt16LE(v);
    this.push(b);
  }
  u32(v) {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.push(b);
  }
  i32(v) {
    const b = Buffer.alloc(4);
    b.writeInt32LE(v);
    this.push(b);
  }
  f32(v) {
    const b = Buffer.alloc(4);
    b.writeFloatLE(v);
    this.push(b);
  }
  f64(v) {
    const b = Buffer.alloc(8);
    b.writeDoubleLE(v);
    this.push(b);
  }
  u64(v) {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }
  i64(v) {
    const b = Buffer.alloc(8);
    b.writeBigInt64LE(BigInt(v));
    this.push(b);
  }
  str(s) {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.push(b);
  }
}

/** A metadata value with an explicit GGUF type: { type: 'U32', value } or { type: 'ARRAY', elementType, value: [...] }. */
function writeValue(sink, type, value, elementType) {
  switch (type) {
    case 'U8':
      return sink.u8(value);
    case 'I8':
      return sink.i8(value);
    case 'U16':
      return sink.u16(value);
    case 'I16':
      return sink.i16(value);
    case 'U32':
      return sink.u32(value);
    case 'I32':
      return sink.i32(value);
    case 'F32':
      return sink.f32(value);
    case 'F64':
      return sink.f64(value);
    case 'U64':
      return sink.u64(value);
    case 'I64':
      return sink.i64(value);
    case 'BOOL':
      return sink.u8(value ? 1 : 0);
    case 'STRING':
      return sink.str(value);
    case 'ARRAY':
      sink.u32(VALUE[elementType]);
      sink.u64(value.length);
      for (const v of value) writeValue(sink, elementType, v);
      return undefined;
    default:
      throw new Error(`unknown metadata type ${type}`);
  }
}

/**
 * Write a GGUF v3 file.
 * metadata: [[key, {type, value, elementType?}], ...]
 * tensors:  [{ name, dims (GGUF order, fastest first), type: 'F32'|..., bytes: Buffer }]
 */
function writeGguf(file, metadata, tensors, { alignment = 32, version = 3, magic = 'GGUF' } = {}) {
  const sink = new ByteSink();
  sink.push(Buffer.from(magic, 'latin1'));
  sink.u32(version);
  sink.u64(tensors.length);
  sink.u64(metadata.length);
  for (const [key, { type, value, elementType }] of metadata) {
    sink.str(key);
    sink.u32(VALUE[type]);
    writeValue(sink, type, value, elementType);
  }
  let offset = 0;
  const offsets = [];
  for (const t of tensors) {
    offsets.push(offset);
    offset += Math.ceil(t.bytes.length / alignment) * alignment;
  }
  tensors.forEach((t, i) => {
    sink.str(t.name);
    sink.u32(t.dims.length);
    for (const d of t.dims) sink.u64(d);
    sink.u32(GGML[t.type]);
    sink.u64(offsets[i]);
  });
  const pad = (n) => sink.push(Buffer.alloc((alignment - (n % alignment)) % alignment));
  pad(sink.length);
  for (const t of tensors) {
    sink.push(t.bytes);
    pad(t.bytes.length);
  }
  fs.writeFileSync(file, Buffer.concat(sink.chunks));
}

/** Write a safetensors file: tensors [{ name, shape, dtype: 'F32'|'F16'|'BF16', values }]. */
function writeSafetensors(file, tensors) {
  const header = { __metadata__: { format: 'pt' } };
  const datas = [];
  let offset = 0;
  for (const t of tensors) {
    const data =
      t.dtype === 'F32' ? encodeF32(t.values) : t.dtype === 'F16' ? encodeF16(t.values) : encodeBF16(t.values);
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + data.length] };
    offset += data.length;
    datas.push(data);
  }
  let json = Buffer.from(JSON.stringify(header), 'utf8');
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]); // pad with spaces, as the spec allows
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  fs.writeFileSync(file, Buffer.concat([len, json, ...datas]));
}

// ---- the model --------------------------------------------------------------

/** mulberry32: small, seedable, good enough for test weights. */
function prng(seed) {
  let a = seed >>> 0;
  const uniform = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const normal = () => Math.sqrt(-2 * Math.log(uniform() + 1e-12)) * Math.cos(2 * Math.PI * uniform());
  return { uniform, normal };
}

const SPECIALS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'];
const USER_DEFINED = ['<tool>'];
const CHARS = [...'abcdefghijklmnopqrstuvwxyz', '\u0120', '.', ',', ...'0123456789', '<', '|', '>', '_', '\u010a'];
const MERGES = [
  '\u0120 t',
  'h e',
  '\u0120t he',
  't h',
  'i n',
  '\u0120 a',
  'a n',
  'e r',
  'o n',
  '\u0120 s',
  'r e',
  'a t',
  'e n',
  '\u0120 c',
  'o r',
  'in g',
];

function tinyTokenizer() {
  const tokens = [...SPECIALS, ...USER_DEFINED, ...CHARS, ...MERGES.map((m) => m.replace(' ', ''))];
  const types = tokens.map((_, i) => (i < SPECIALS.length ? 3 : i < SPECIALS.length + USER_DEFINED.length ? 4 : 1));
  return { tokens, types, merges: MERGES.slice() };
}

/** Texts the tiny vocabulary covers (letters, space, digits, . , < | > _ and newline). */
const TINY_TEXTS = [
  'the cat sat on the mat.',
  ' the  end,\nand 2024 things',
  'looks special <|im_start|> and <|endoftext|>',
  'user token <tool> inside',
  'singing corner stones at 9',
];

const ARCH_CONFIGS = {
  llama: { ropeTheta: 10000, rmsEps: 1e-5, headDim: 8, tiedEmbeddings: true, attentionBias: false, qkNorm: false },
  qwen2: { ropeTheta: 1000000, rmsEps: 1e-6, headDim: 8, tiedEmbeddings: false, attentionBias: true, qkNorm: false },
  qwen3: { ropeTheta: 1000000, rmsEps: 1e-6, headDim: 16, tiedEmbeddings: true, attentionBias: false, qkNorm: true },
  gemma3: {
    ropeTheta: 1000000,
    rmsEps: 1e-6,
    headDim: 16,
    tiedEmbeddings: true,
    attentionBias: false,
    qkNorm: true,
    numLayers: 6,
    gemma: { postNorms: true, attentionScale: 0.25, ropeThetaLocal: 10000, ropeLinearFactor: 2 },
    slidingWindow: { window: 3, layers: [true, true, true, true, true, false] },
  },
  gemma: {
    ropeTheta: 10000,
    rmsEps: 1e-6,
    headDim: 16,
    tiedEmbeddings: true,
    attentionBias: false,
    qkNorm: false,
    gemma: { postNorms: false, attentionScale: 0.25, ropeThetaLocal: 10000 },
  },
  gemma2: {
    ropeTheta: 10000,
    rmsEps: 1e-6,
    headDim: 8,
    tiedEmbeddings: true,
    attentionBias: false,
    qkNorm: false,
    numLayers: 3,
    gemma: {
      postNorms: true,
      attentionScale: 1 / Math.sqrt(8),
      attentionSoftcap: 2,
      finalSoftcap: 3,
      ropeThetaLocal: 10000,
    },
    slidingWindow: { window: 4, layers: [true, false, true] },
  },
};

/** Round to the nearest f16 value (then exact in F16, F32 and f64). */
function f16Exact(v) {
  return f16BitsToNumber(f32ToF16Bits(v));
}

function makeTinyModel(arch = 'llama', seed = 1) {
  const a = ARCH_CONFIGS[arch];
  if (!a) throw new Error(`unknown tiny arch ${arch}`);
  const tokenizer = tinyTokenizer();
  const config = {
    architecture: arch,
    vocabSize: tokenizer.tokens.length,
    hiddenSize: 32,
    intermediateSize: 64,
    numLayers: a.numLayers ?? 2,
    numHeads: 4,
    numKvHeads: 2,
    headDim: a.headDim,
    ropeTheta: a.ropeTheta,
    rmsEps: a.rmsEps,
    contextLength: 128,
    tiedEmbeddings: a.tiedEmbeddings,
    attentionBias: a.attentionBias,
    qkNorm: a.qkNorm,
    bosTokenId: 0,
    eosTokenId: 2,
    addBos: false,
  };
  if (a.gemma) {
    config.gemma = { embeddingScale: Math.fround(Math.sqrt(config.hiddenSize)), ...a.gemma };
    if (a.slidingWindow) config.slidingWindow = a.slidingWindow;
  }
  const rng = prng(seed * 7919 + arch.length);
  // Values are rounded to f32 so an F32 file holds them exactly (Gemma's matrices to f16, for an F16 file).
  const round = a.gemma ? f16Exact : Math.fround;
  const matrix = (rows, cols) =>
    Float64Array.from({ length: rows * cols }, () => round(rng.normal() / Math.sqrt(cols)));
  const norm = (n) => Float64Array.from({ length: n }, () => Math.fround(1 + 0.2 * (rng.uniform() - 0.5)));
  const bias = (n) => Float64Array.from({ length: n }, () => Math.fround(0.1 * rng.normal()));
  const { vocabSize: V, hiddenSize: Dm, intermediateSize: F, numHeads: Hq, numKvHeads: Hkv, headDim: D } = config;
  const embedding = Float64Array.from({ length: V * Dm }, () => round(rng.normal()));
  const layers = [];
  for (let l = 0; l < config.numLayers; l++) {
    const layer = {
      attnNorm: norm(Dm),
      wq: matrix(Hq * D, Dm),
      wk: matrix(Hkv * D, Dm),
      wv: matrix(Hkv * D, Dm),
      wo: matrix(Dm, Hq * D),
    };
    if (config.attentionBias) Object.assign(layer, { bq: bias(Hq * D), bk: bias(Hkv * D), bv: bias(Hkv * D) });
    if (config.qkNorm) Object.assign(layer, { qNorm: norm(D), kNorm: norm(D) });
    Object.assign(layer, { ffnNorm: norm(Dm), wGate: matrix(F, Dm), wUp: matrix(F, Dm), wDown: matrix(Dm, F) });
    if (config.gemma?.postNorms) Object.assign(layer, { attnPostNorm: norm(Dm), ffnPostNorm: norm(Dm) });
    layers.push(layer);
  }
  const weights = {
    embedding,
    layers,
    finalNorm: norm(Dm),
    lmHead: config.tiedEmbeddings ? embedding : matrix(V, Dm),
  };
  return { arch, config, weights, tokenizer };
}

/**
 * llama.cpp's convert_hf_to_gguf.py LlamaModel.permute: rows viewed as
 * [heads, 2, D/2] with the last two axes swapped, so HF row h*D + j*D/2 + i
 * lands at h*D + 2i + j. `cols` is 1 for a bias.
 */
function llamaCppPermute(values, heads, cols) {
  const rows = values.length / cols;
  const D = rows / heads;
  const out = new Float64Array(values.length);
  for (let h = 0; h < heads; h++)
    for (let j = 0; j < 2; j++)
      for (let i = 0; i < D / 2; i++)
        for (let c = 0; c < cols; c++)
          out[(h * D + 2 * i + j) * cols + c] = values[(h * D + j * (D / 2) + i) * cols + c];
  return out;
}

/** [{ key, gguf, hf, dims (HF order), ropeHeads? }] for every tensor of the model. */
function tensorTable(config) {
  const { vocabSize: V, hiddenSize: Dm, intermediateSize: F, numHeads: Hq, numKvHeads: Hkv, headDim: D } = config;
  const gemma = config.gemma !== undefined;
  const postNorms = config.gemma?.postNorms === true;
  const list = [{ get: (w) => w.embedding, gguf: 'token_embd.weight', hf: 'model.embed_tokens.weight', dims: [V, Dm] }];
  for (let l = 0; l < config.numLayers; l++) {
    // Gemma's norms: the Hugging Face file holds w for a multiplier of 1 + w (hfMinusOne).
    const t = (key, gguf, hf, dims, ropeHeads) => ({
      get: (w) => w.layers[l][key],
      gguf: `blk.${l}.${gguf}`,
      hf: `model.layers.${l}.${hf}`,
      dims,
      ropeHeads,
      hfMinusOne: gemma && /norm/i.test(key),
    });
    list.push(
      t('attnNorm', 'attn_norm.weight', 'input_layernorm.weight', [Dm]),
      t('wq', 'attn_q.weight', 'self_attn.q_proj.weight', [Hq * D, Dm], Hq),
      t('wk', 'attn_k.weight', 'self_attn.k_proj.weight', [Hkv * D, Dm], Hkv),
      t('wv', 'attn_v.weight', 'self_attn.v_proj.weight', [Hkv * D, Dm]),
      t('wo', 'attn_output.weight', 'self_attn.o_proj.weight', [Dm, Hq * D]),
    );
    if (config.attentionBias) {
      list.push(
        t('bq', 'attn_q.bias', 'self_attn.q_proj.bias', [Hq * D], Hq),
        t('bk', 'attn_k.bias', 'self_attn.k_proj.bias', [Hkv * D], Hkv),
        t('bv', 'attn_v.bias', 'self_attn.v_proj.bias', [Hkv * D]),
      );
    }
    if (config.qkNorm) {
      list.push(
        t('qNorm', 'attn_q_norm.weight', 'self_attn.q_norm.weight', [D]),
        t('kNorm', 'attn_k_norm.weight', 'self_attn.k_norm.weight', [D]),
      );
    }
    if (postNorms) list.push(t('attnPostNorm', 'post_attention_norm.weight', 'post_attention_layernorm.weight', [Dm]));
    list.push(
      t(
        'ffnNorm',
        'ffn_norm.weight',
        postNorms ? 'pre_feedforward_layernorm.weight' : 'post_attention_layernorm.weight',
        [Dm],
      ),
      t('wGate', 'ffn_gate.weight', 'mlp.gate_proj.weight', [F, Dm]),
      t('wUp', 'ffn_up.weight', 'mlp.up_proj.weight', [F, Dm]),
      t('wDown', 'ffn_down.weight', 'mlp.down_proj.weight', [Dm, F]),
    );
    if (postNorms) list.push(t('ffnPostNorm', 'post_ffw_norm.weight', 'post_feedforward_layernorm.weight', [Dm]));
  }
  list.push({
    get: (w) => w.finalNorm,
    gguf: 'output_norm.weight',
    hf: 'model.norm.weight',
    dims: [Dm],
    hfMinusOne: gemma,
  });
  if (!config.tiedEmbeddings)
    list.push({ get: (w) => w.lmHead, gguf: 'output.weight', hf: 'lm_head.weight', dims: [V, Dm] });
  return list;
}

function ggufMetadata(model) {
  const { config: c, arch, tokenizer } = model;
  const u32 = (value) => ({ type: 'U32', value });
  const f32v = (value) => ({ type: 'F32', value });
  const md = [
    ['general.architecture', { type: 'STRING', value: arch }],
    ['general.name', { type: 'STRING', value: `tiny-${arch}` }],
    ['general.alignment', u32(32)],
    [`${arch}.block_count`, u32(c.numLayers)],
    [`${arch}.context_length`, u32(c.contextLength)],
    [`${arch}.embedding_length`, u32(c.hiddenSize)],
    [`${arch}.feed_forward_length`, u32(c.intermediateSize)],
    [`${arch}.attention.head_count`, u32(c.numHeads)],
    [`${arch}.attention.head_count_kv`, u32(c.numKvHeads)],
    [`${arch}.rope.freq_base`, f32v(c.ropeTheta)],
    [`${arch}.attention.layer_norm_rms_epsilon`, f32v(c.rmsEps)],
    ['tokenizer.ggml.model', { type: 'STRING', value: 'gpt2' }],
    ['tokenizer.ggml.pre', { type: 'STRING', value: 'smollm' }],
    ['tokenizer.ggml.tokens', { type: 'ARRAY', elementType: 'STRING', value: tokenizer.tokens }],
    ['tokenizer.ggml.token_type', { type: 'ARRAY', elementType: 'I32', value: tokenizer.types }],
    ['tokenizer.ggml.merges', { type: 'ARRAY', elementType: 'STRING', value: tokenizer.merges }],
    ['tokenizer.ggml.bos_token_id', u32(c.bosTokenId)],
    ['tokenizer.ggml.eos_token_id', u32(c.eosTokenId)],
    ['tokenizer.ggml.add_bos_token', { type: 'BOOL', value: c.addBos }],
  ];
  if (c.headDim !== c.hiddenSize / c.numHeads) {
    md.push([`${arch}.attention.key_length`, u32(c.headDim)], [`${arch}.attention.value_length`, u32(c.headDim)]);
  }
  // Gemma: the keys llama.cpp's converter writes (the local RoPE base and the layer pattern are llama.cpp's constants).
  if (c.slidingWindow) md.push([`${arch}.attention.sliding_window`, u32(c.slidingWindow.window)]);
  if (c.gemma?.attentionSoftcap) md.push([`${arch}.attn_logit_softcapping`, f32v(c.gemma.attentionSoftcap)]);
  if (c.gemma?.finalSoftcap) md.push([`${arch}.final_logit_softcapping`, f32v(c.gemma.finalSoftcap)]);
  if (c.gemma?.ropeLinearFactor)
    md.push(
      [`${arch}.rope.scaling.type`, { type: 'STRING', value: 'linear' }],
      [`${arch}.rope.scaling.factor`, f32v(c.gemma.ropeLinearFactor)],
    );
  return md;
}

function writeTinyGguf(
  model,
  file,
  {
    matrixType = 'F32',
    embeddingType = matrixType,
    permute = true,
    metadata = [],
    extraTensors = [],
    dropMetadata = [],
  } = {},
) {
  const permuteQK = permute && model.arch === 'llama';
  const tensors = tensorTable(model.config).map((t) => {
    let values = t.get(model.weights);
    if (permuteQK && t.ropeHeads) values = llamaCppPermute(values, t.ropeHeads, t.dims.length > 1 ? t.dims[1] : 1);
    const type = t.dims.length === 1 ? 'F32' : t.gguf === 'token_embd.weight' ? embeddingType : matrixType;
    return { name: t.gguf, dims: [...t.dims].reverse(), type, bytes: encodeTensor(type, values) };
  });
  const kept = ggufMetadata(model).filter(([key]) => !dropMetadata.includes(key));
  writeGguf(file, [...kept, ...metadata], [...tensors, ...extraTensors]);
  return file;
}

function tinyTokenizerJson(model) {
  const { tokens, types, merges } = model.tokenizer;
  const vocab = {};
  tokens.forEach((t, i) => (vocab[t] = i));
  const added = [];
  types.forEach((type, id) => {
    if (type === 3 || type === 4) {
      added.push({
        id,
        content: tokens[id],
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
        special: type === 3,
      });
    }
  });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    // SmolLM2's own tokenizer.json shape: isolate digits, then GPT-2 byte-level splitting.
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Digits', individual_digits: true },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
      ],
    },
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
      merges,
    },
  };
}

function writeTinyHfDir(model, dir, { dtype = 'F32', shards = 1, config: overrides = {} } = {}) {
  const { config: c } = model;
  fs.mkdirSync(dir, { recursive: true });
  const hfConfig = {
    architectures: [
      {
        llama: 'LlamaForCausalLM',
        qwen2: 'Qwen2ForCausalLM',
        qwen3: 'Qwen3ForCausalLM',
        gemma: 'GemmaForCausalLM',
        gemma2: 'Gemma2ForCausalLM',
        gemma3: 'Gemma3ForCausalLM',
      }[model.arch],
    ],
    model_type: model.arch,
    vocab_size: c.vocabSize,
    hidden_size: c.hiddenSize,
    intermediate_size: c.intermediateSize,
    num_hidden_layers: c.numLayers,
    num_attention_heads: c.numHeads,
    num_key_value_heads: c.numKvHeads,
    head_dim: c.headDim,
    rope_theta: c.ropeTheta,
    rms_norm_eps: c.rmsEps,
    max_position_embeddings: c.contextLength,
    tie_word_embeddings: c.tiedEmbeddings,
    bos_token_id: c.bosTokenId,
    eos_token_id: c.eosTokenId,
    rope_scaling: null,
    torch_dtype: { F32: 'float32', F16: 'float16', BF16: 'bfloat16' }[dtype],
  };
  const g = c.gemma;
  if (g && model.arch === 'gemma') {
    // transformers' GemmaConfig keys: the activation is hidden_act; no caps, windows or query_pre_attn_scalar.
    Object.assign(hfConfig, { model_type: 'gemma', hidden_act: 'gelu_pytorch_tanh' });
  } else if (g) {
    // transformers' Gemma2Config / Gemma3TextConfig keys.
    Object.assign(hfConfig, {
      model_type: model.arch === 'gemma3' ? 'gemma3_text' : 'gemma2',
      hidden_activation: 'gelu_pytorch_tanh',
      query_pre_attn_scalar: 1 / g.attentionScale ** 2,
      sliding_window: c.slidingWindow.window,
      layer_types: c.slidingWindow.layers.map((local) => (local ? 'sliding_attention' : 'full_attention')),
      attn_logit_softcapping: g.attentionSoftcap ?? null,
      final_logit_softcapping: g.finalSoftcap ?? null,
      ...(model.arch === 'gemma3' ? { rope_local_base_freq: g.ropeThetaLocal } : {}),
      rope_scaling: g.ropeLinearFactor ? { rope_type: 'linear', factor: g.ropeLinearFactor } : null,
    });
  }
  Object.assign(hfConfig, overrides);
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(hfConfig, null, 2));
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(tinyTokenizerJson(model)));
  fs.writeFileSync(
    path.join(dir, 'tokenizer_config.json'),
    JSON.stringify({ add_bos_token: c.addBos, clean_up_tokenization_spaces: false }),
  );
  const all = tensorTable(c).map((t) => {
    const values = t.get(model.weights);
    return { name: t.hf, shape: t.dims, dtype, values: t.hfMinusOne ? values.map((v) => Math.fround(v - 1)) : values };
  });
  if (shards === 1) {
    writeSafetensors(path.join(dir, 'model.safetensors'), all);
  } else {
    const half = Math.ceil(all.length / 2);
    const parts = [all.slice(0, half), all.slice(half)];
    const weightMap = {};
    parts.forEach((part, i) => {
      const name = `model-0000${i + 1}-of-00002.safetensors`;
      writeSafetensors(path.join(dir, name), part);
      for (const t of part) weightMap[t.name] = name;
    });
    fs.writeFileSync(
      path.join(dir, 'model.safetensors.index.json'),
      JSON.stringify({ metadata: {}, weight_map: weightMap }),
    );
  }
  return dir;
}

module.exports = {
  makeTinyModel,
  writeTinyGguf,
  writeTinyHfDir,
  tinyTokenizerJson,
  llamaCppPermute,
  tensorTable,
  ggufMetadata,
  TINY_TEXTS,
  // file-format primitives, for tests that build broken files
  GGML,
  writeGguf,
  writeSafetensors,
  encodeTensor,
  referenceDecode,
  f32ToF16Bits,
  f32ToBf16Bits,
  f16BitsToNumber,
};
