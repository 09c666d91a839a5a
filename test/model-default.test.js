'use strict';
// The real default model (SmolLM2-135M-Instruct, GGUF Q4_1) through lib/model:
// its published architecture, the tensor table, dequantization against an
// independent decoder, and an f64 forward pass of the loaded weights against
// llama.cpp (test/fixtures/llama-cpp-golden.json, made by
// scripts/lab/goldens/make-goldens.js). Needs the model in the cache:
// `npx tsc -p tsconfig.json && node scripts/build/fetch-model.js`.
const test = require('tape');
const fs = require('node:fs');
const M = require('../dist/model');
const tiny = require('./helpers/tiny-model');
const { referenceLogprobs } = require('./helpers/reference-forward');
const golden = require('./fixtures/llama-cpp-golden.json');

const file = M.DEFAULT_MODEL.destination;
const present = fs.existsSync(file);

// SmolLM2-135M's published architecture (HuggingFaceTB/SmolLM2-135M-Instruct config.json).
const SMOLLM2 = {
  architecture: 'llama',
  vocabSize: 49152,
  hiddenSize: 576,
  intermediateSize: 1536,
  numLayers: 30,
  numHeads: 9,
  numKvHeads: 3,
  headDim: 64,
  ropeTheta: 100000,
  rmsEps: Math.fround(1e-5),
  contextLength: 8192,
  tiedEmbeddings: true,
  attentionBias: false,
  qkNorm: false,
  bosTokenId: 1,
  eosTokenId: 2,
  addBos: false,
};
const GGML_NAME = { 0: 'F32', 3: 'Q4_1', 8: 'Q8_0' };

let loaded;
let loadSeconds;

test('the default model is in the cache', (t) => {
  t.ok(present, `${file} exists (else run: npx tsc -p tsconfig.json && node scripts/build/fetch-model.js)`);
  t.end();
});

test('loadModel() loads the default model: config, name, tokenizer settings, load time', { skip: !present }, (t) => {
  const started = process.hrtime.bigint();
  loaded = M.loadModel();
  loadSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  t.comment(`loadModel() took ${loadSeconds.toFixed(2)} s (header, tokenizer, dequantization of ~134M weights)`);
  t.deepEqual(loaded.config, SMOLLM2, 'config matches the published SmolLM2-135M architecture');
  t.equal(loaded.name, M.DEFAULT_MODEL_NAME, 'name');
  t.equal(loaded.tokenizer.vocabSize, SMOLLM2.vocabSize, 'tokenizer vocabulary size');
  t.equal(loaded.tokenizer.bosTokenId, 1);
  t.equal(loaded.tokenizer.addBos, false, 'no BOS (tokenizer.ggml.add_bos_token = false)');
  t.equal(loaded.weights.lmHead, loaded.weights.embedding, 'tied LM head is the embedding');
  t.end();
});

test(
  'tensor table: one embedding, 9 tensors per layer, the final norm; Q8_0 embedding, Q4_1 matrices, F32 norms',
  { skip: !present },
  (t) => {
    const gguf = M.GgufFile.open(file);
    t.teardown(() => gguf.close());
    t.equal(gguf.version, 3);
    t.equal(gguf.tensors.size, 1 + SMOLLM2.numLayers * 9 + 1, 'tensor count');
    const types = {};
    for (const info of gguf.tensors.values()) {
      const kind = info.name === 'token_embd.weight' ? 'embedding' : info.dims.length === 1 ? 'norm' : 'matrix';
      types[`${kind}:${GGML_NAME[info.type] || info.type}`] =
        (types[`${kind}:${GGML_NAME[info.type] || info.type}`] || 0) + 1;
    }
    t.deepEqual(
      types,
      { 'embedding:Q8_0': 1, 'matrix:Q4_1': SMOLLM2.numLayers * 7, 'norm:F32': SMOLLM2.numLayers * 2 + 1 },
      'types',
    );
    t.deepEqual(gguf.tensor('blk.0.ffn_gate.weight').dims, [576, 1536], 'GGUF dims are fastest-varying first');
    t.end();
  },
);

test('dequantization of the real tensors equals an independent decoder; values are sane', { skip: !present }, (t) => {
  const gguf = M.GgufFile.open(file);
  t.teardown(() => gguf.close());
  for (const name of ['token_embd.weight', 'blk.0.attn_q.weight', 'blk.29.ffn_down.weight', 'output_norm.weight']) {
    const info = gguf.tensor(name);
    const ours = gguf.readTensorFloat32(name);
    const theirs = tiny.referenceDecode(GGML_NAME[info.type], gguf.readTensorBytes(name), info.elementCount);
    let mismatches = 0;
    for (let i = 0; i < ours.length; i++) if (ours[i] !== Math.fround(theirs[i])) mismatches++;
    t.equal(
      mismatches,
      0,
      `${name} (${GGML_NAME[info.type]}, ${info.elementCount} values) decodes bit for bit like the reference`,
    );
  }
  const embedding = loaded.weights.embedding.data;
  let sum = 0;
  let sumSq = 0;
  let finite = true;
  for (const v of embedding) {
    if (!Number.isFinite(v)) finite = false;
    sum += v;
    sumSq += v * v;
  }
  const mean = sum / embedding.length;
  const std = Math.sqrt(sumSq / embedding.length - mean * mean);
  t.comment(`token_embd: mean ${mean.toExponential(3)}, std ${std.toExponential(3)}`);
  t.ok(finite, 'token_embd is finite');
  t.ok(Math.abs(mean) < 0.1 * std, 'token_embd is centred');
  t.ok(std > 1e-3 && std < 10, 'token_embd has a plausible spread');
  const rowNorms = new Set();
  for (const id of [0, 1, 100, 9454, 49151]) {
    let n = 0;
    for (let i = 0; i < 576; i++) n += embedding[id * 576 + i] ** 2;
    rowNorms.add(Math.sqrt(n).toFixed(6));
  }
  t.equal(rowNorms.size, 5, 'embedding rows differ from each other');
  const norms = loaded.weights.layers.flatMap((l) => [l.attnNorm, l.ffnNorm]).concat([loaded.weights.finalNorm]);
  t.ok(
    norms.every((n) => n.data.every(Number.isFinite)),
    'RMSNorm weights finite',
  );
  t.end();
});

// Short sequences keep the f64 JS forward pass to a few seconds.
const checked = golden.sequences.filter((s) => s.tokenIds.length <= 13);

test(
  'f64 forward pass of the loaded weights matches llama.cpp on the same weights in F32 (Q/K unpermuted correctly)',
  { skip: !present },
  (t) => {
    t.ok(checked.length >= 3, `${checked.length} golden sequences`);
    for (const s of checked) {
      const [logprobs] = referenceLogprobs(loaded.weights, loaded.config, s.tokenIds, {
        outputs: [s.tokenIds.length - 1],
      });
      const ids = [...s.labels, ...s.f32.top.map((x) => x.id)];
      const want = [...s.f32.labelLogprobs, ...s.f32.top.map((x) => x.logprob)];
      const worst = Math.max(...ids.map((id, k) => Math.abs(logprobs[id] - want[k])));
      t.ok(
        worst < 1e-3,
        `${s.tokenIds.length} tokens: labels and top-5 within 1e-3 nats of llama.cpp F32 (max ${worst.toExponential(2)})`,
      );
      // Against the Q4_1 file itself llama.cpp quantizes activations too: same top token, logprobs within the noise.
      const argmax = logprobs.indexOf(Math.max(...logprobs));
      t.equal(
        argmax,
        s.top[0].id,
        `${s.tokenIds.length} tokens: same most likely next token as llama.cpp on the Q4_1 file`,
      );
      const noise = Math.max(...s.labels.map((id, k) => Math.abs(logprobs[id] - s.labelLogprobs[k])));
      t.ok(
        noise < 1,
        `${s.tokenIds.length} tokens: label logprobs within 1 nat of llama.cpp Q4_1 (max ${noise.toFixed(3)})`,
      );
    }
    t.end();
  },
);
