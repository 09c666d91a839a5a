'use strict';
// RoPE as transformers reads it (docs/models.md, "RoPE"). Tiny random models
// of the right architecture are saved by transformers 5 (config.json with
// rope_parameters) and by transformers 4 (rope_theta + rope_scaling); each
// loads here with the RoPE tables transformers' own RoPE functions give
// (run in float64, within 1e-9) and label log-probabilities within 1e-4 of
// a transformers forward (f32; the probabilities then agree within 0.01%): a Qwen3 directory, a Llama 3.2-shaped one
// (llama3 scaling) and its GGUF with rope_freqs.weight, a YaRN Qwen2 and a
// linear-scaled Llama. A config without a RoPE base loads with
// transformers' default and a warning; dynamic scaling is refused.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { makeTinyModel, writeTinyHfDir, writeTinyGguf } = require('./helpers/tiny-model');
const { pipTargetDir, python } = require('../scripts/lib/pip-target');
const { prng } = require('./helpers/prng');
const { Scorer } = require('../dist/scoring/scorer');
const { loadModel } = require('../dist/model/load');
const { ropeFrequencies } = require('../dist/util/rope');

const PY = path.join(__dirname, 'helpers', 'hf_transformers_reference.py');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-rope-'));
const POSITIONS = [0, 1, 7, 100, 255, 1000, 4095];
const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json'];

/** Tiny models: [name, arch, seed, config.json keys]. Scaling lengths are small so that short sequences feel them. */
const CASES = [
  ['qwen3', 'qwen3', 3, { rope_theta: 1000000 }],
  [
    'llama32',
    'llama',
    4,
    {
      rope_theta: 500000,
      tie_word_embeddings: true,
      rope_scaling: {
        rope_type: 'llama3',
        factor: 32,
        low_freq_factor: 1,
        high_freq_factor: 4,
        original_max_position_embeddings: 64,
      },
    },
  ],
  [
    'yarn',
    'qwen2',
    5,
    { rope_theta: 1000000, rope_scaling: { type: 'yarn', factor: 4, original_max_position_embeddings: 64 } },
  ],
  ['linear', 'llama', 6, { rope_theta: 1000, rope_scaling: { type: 'linear', factor: 8 } }],
  // Gemma 3: transformers 5 writes rope_parameters per layer type (full_attention with the linear scaling, sliding_attention).
  ['gemma3', 'gemma3', 7, {}],
];
/** The cases whose tables are compared (Gemma's RoPE, a base per layer kind, is checked through its probabilities). */
const TABLE_CASES = CASES.filter((c) => c[1] !== 'gemma3');

function pythonJson(pythonPath, args, input) {
  const r = python(args, { PYTHONPATH: pythonPath, PYTHONNOUSERSITE: '1' }, input);
  if (r.status !== 0)
    throw new Error(`python failed (exit ${r.status}): ${r.stderr.trim().split('\n').slice(-12).join('\n')}`);
  return JSON.parse(r.stdout);
}

function copyTokenizer(from, to) {
  for (const f of TOKENIZER_FILES) fs.copyFileSync(path.join(from, f), path.join(to, f));
}

const dirs = {};
let ref;
let ref4;
const rng = prng(2024);
const ids = (n) => Array.from({ length: n }, () => 3 + Math.floor(rng.uniform(0, 1) * 61));
const QUERY = ids(180);
const ITEMS = [ids(20), ids(35), ids(1)];
const LABELS = [5, 17, 40, 63];

test('setup: tiny models saved by transformers 5 and 4; references from transformers 5', (t) => {
  const tf5 =
    pipTargetDir('torch==2.15.0', 'torch/__init__.py') +
    path.delimiter +
    pipTargetDir('transformers==5.24.0', 'transformers/__init__.py');
  const tf4 = pipTargetDir('transformers==4.57.6', 'transformers/__init__.py');
  const save = [];
  const save4 = [];
  for (const [name, arch, seed, keys] of CASES) {
    const model = makeTinyModel(arch, seed);
    // Sharper attention (q and k times 4, exact in f32), so positions matter to the probabilities.
    for (const layer of model.weights.layers) for (const key of ['wq', 'wk']) layer[key] = layer[key].map((v) => v * 4);
    model.config = { ...model.config, contextLength: 4096, ...(keys.rope_theta ? { ropeTheta: keys.rope_theta } : {}) };
    if (keys.tie_word_embeddings) {
      model.config = { ...model.config, tiedEmbeddings: true };
      model.weights.lmHead = model.weights.embedding;
    }
    const src = path.join(work, `${name}-src`);
    writeTinyHfDir(model, src, { config: keys });
    // The same weights without scaling: shows each scaling moves the probabilities.
    writeTinyHfDir(model, path.join(work, `${name}-plain`), { config: { ...keys, rope_scaling: null } });
    dirs[name] = {
      model,
      src,
      v5: path.join(work, `${name}-tf5`),
      v4: path.join(work, `${name}-tf4`),
      plain: path.join(work, `${name}-plain`),
    };
    save.push({ src, dst: dirs[name].v5 });
    save4.push({ src, dst: dirs[name].v4 });
  }
  // No RoPE base anywhere: transformers takes the model type's default.
  const nobase = path.join(work, 'qwen3-nobase');
  dirs.nobase = { src: nobase };
  writeTinyHfDir(dirs.qwen3.model, nobase, { config: { rope_theta: undefined } });
  const names = CASES.map((c) => c[0]);
  ref = pythonJson(
    tf5,
    [PY],
    JSON.stringify({
      save,
      rope: TABLE_CASES.map(([n]) => ({ dir: dirs[n].v5, positions: POSITIONS })),
      forward: [
        ...names.map((n) => ({ dir: dirs[n].v5, sequences: ITEMS.map((it) => [...QUERY, ...it]), labels: LABELS })),
        ...names.map((n) => ({ dir: dirs[n].plain, sequences: ITEMS.map((it) => [...QUERY, ...it]), labels: LABELS })),
        { dir: nobase, sequences: ITEMS.map((it) => [...QUERY, ...it]), labels: LABELS },
      ],
    }),
  );
  // transformers 4 writes the config it read (config.json only; weights and tokenizer copied).
  ref4 = pythonJson(
    tf4,
    [
      '-c',
      `import json, sys
from transformers import AutoConfig
import transformers
out = []
for job in json.load(sys.stdin):
    AutoConfig.from_pretrained(job["src"]).save_pretrained(job["dst"])
    out.append(json.load(open(job["dst"] + "/config.json")))
json.dump({"transformers": transformers.__version__, "configs": out}, sys.stdout)`,
    ],
    JSON.stringify(save4),
  );
  for (const name of names) {
    copyTokenizer(dirs[name].src, dirs[name].v5);
    copyTokenizer(dirs[name].src, dirs[name].v4);
    for (const f of fs.readdirSync(dirs[name].src))
      if (f.endsWith('.safetensors')) fs.copyFileSync(path.join(dirs[name].src, f), path.join(dirs[name].v4, f));
  }
  t.equal(ref.transformers, '5.24.0');
  t.equal(ref4.transformers, '4.57.6');
  const c5 = ref.save[names.indexOf('qwen3')];
  t.ok(
    c5.rope_parameters && c5.rope_parameters.rope_theta === 1000000 && c5.rope_theta === undefined,
    'transformers 5 writes rope_parameters.rope_theta and no rope_theta',
  );
  const l5 = ref.save[names.indexOf('llama32')];
  t.equal(l5.rope_parameters.rope_type, 'llama3', 'transformers 5 writes the llama3 scaling into rope_parameters');
  const c4 = ref4.configs[names.indexOf('llama32')];
  t.ok(
    c4.rope_theta === 500000 && c4.rope_scaling.rope_type === 'llama3',
    'transformers 4 writes rope_theta and rope_scaling',
  );
  const g5 = ref.save[names.indexOf('gemma3')];
  t.ok(
    g5.rope_parameters.full_attention && g5.rope_parameters.sliding_attention,
    "transformers 5 writes Gemma 3's rope_parameters per layer type",
  );
  t.end();
});

/** cos and sin [P, D/2] of our frequencies at POSITIONS, times the attention scale. */
function tables(freqs) {
  const cos = POSITIONS.map((p) => freqs.inverse.map((f) => Math.cos(p * f) * freqs.attentionScale));
  const sin = POSITIONS.map((p) => freqs.inverse.map((f) => Math.sin(p * f) * freqs.attentionScale));
  return { cos, sin };
}

function maxDiff(a, b) {
  const x = a.flat(2);
  const y = b.flat(2);
  if (x.length !== y.length) return Infinity;
  return x.reduce((m, v, i) => Math.max(m, Math.abs(v - y[i])), 0);
}

test("RoPE tables equal transformers' RoPE functions in float64 (1e-9), configs as transformers 5 and 4 write them", (t) => {
  TABLE_CASES.forEach(([name], i) => {
    const r = ref.rope[i];
    t.equal(r.dtype, 'torch.float64', `${name}: transformers ran in float64`);
    for (const which of ['v5', 'v4']) {
      const { config } = loadModel(dirs[name][which]);
      const ours = ropeFrequencies(config.ropeTheta, config.headDim, config.ropeScaling);
      t.ok(maxDiff([ours.inverse], [r.inverse]) < 1e-12, `${name} (${which}): inverse frequencies, ${r.ropeType}`);
      t.ok(
        Math.abs(ours.attentionScale - r.attentionFactor) < 1e-12,
        `${name} (${which}): attention factor ${r.attentionFactor}`,
      );
      const tb = tables(ours);
      const d = Math.max(maxDiff(tb.cos, r.cos), maxDiff(tb.sin, r.sin));
      t.ok(d < 1e-9, `${name} (${which}): cos/sin at positions up to 4095 within ${d.toExponential(2)}`);
    }
  });
  t.end();
});

async function scoreDir(dir) {
  // True f32 against transformers' f32 forward (a bf16 checkpoint runs in bf16 by default on a bf16 CPU).
  const scorer = await Scorer.load({ model: dir, diskCache: false, prefixCacheBytes: 0, precision: 'highest' });
  try {
    const r = await scorer.score({ query: QUERY, items: ITEMS, labelTokenIds: LABELS, applySoftmax: false });
    // Probabilities over the whole vocabulary; compared as log-probabilities, since a random model's labels can be unlikely.
    return r.scores.map((row) => row.map(Math.log));
  } finally {
    scorer.dispose();
  }
}

test("label log-probabilities within 1e-4 of a transformers forward (f32); transformers 4's config.json reads the same", async (t) => {
  const n = CASES.length;
  for (let i = 0; i < n; i++) {
    const name = CASES[i][0];
    const expected = ref.forward[i];
    const got = await scoreDir(dirs[name].v5);
    const d = maxDiff(got, expected);
    t.ok(
      d < 1e-4,
      `${name} (transformers 5 directory): max |log p - log p_transformers| = ${d.toExponential(2)} (log p from ${Math.min(...expected.flat()).toFixed(2)} to ${Math.max(...expected.flat()).toFixed(2)})`,
    );
    t.deepEqual(
      loadModel(dirs[name].v4).config,
      loadModel(dirs[name].v5).config,
      `${name}: the transformers 4 directory gives the same model config`,
    );
    if (name !== 'qwen3' && name !== 'gemma3') {
      const moved = maxDiff(ref.forward[n + i], expected);
      t.ok(
        moved > 1e-3,
        `${name}: the scaling moves transformers' log-probabilities by ${moved.toExponential(2)} (the check can fail)`,
      );
    }
  }
});

test("a GGUF with rope_freqs.weight (Llama 3.1/3.2) loads, its tables and probabilities as transformers'", async (t) => {
  const { model } = dirs.llama32;
  const r = ref.rope[TABLE_CASES.findIndex((c) => c[0] === 'llama32')];
  const D = model.config.headDim;
  // llama.cpp's converter: one f32 divisor per rotary pair, the plain frequency over the scaled one.
  const plain = Array.from({ length: D / 2 }, (_, i) => 1 / 500000 ** ((2 * i) / D));
  const factors = Float32Array.from(plain, (f, i) => f / r.inverse[i]);
  const file = path.join(work, 'llama32.gguf');
  writeTinyGguf(model, file, {
    extraTensors: [{ name: 'rope_freqs.weight', dims: [D / 2], type: 'F32', bytes: Buffer.from(factors.buffer) }],
  });
  const { config } = loadModel(file);
  t.deepEqual(
    config.ropeScaling,
    { type: 'frequency-factors', factors: Array.from(factors) },
    'the factors are read as stored',
  );
  const ours = tables(ropeFrequencies(config.ropeTheta, D, config.ropeScaling));
  // transformers' frequencies with each divisor rounded to f32 as the file stores it.
  const stored = tables({ inverse: plain.map((f, i) => f / factors[i]), attentionScale: 1 });
  t.ok(
    Math.max(maxDiff(ours.cos, stored.cos), maxDiff(ours.sin, stored.sin)) < 1e-9,
    "tables within 1e-9 of transformers' with the stored f32 divisors",
  );
  const exact = Math.max(maxDiff(ours.cos, r.cos), maxDiff(ours.sin, r.sin));
  t.ok(
    exact < 1e-4,
    `and within ${exact.toExponential(2)} of transformers' float64 tables (the divisors' f32 rounding)`,
  );
  const got = await scoreDir(file);
  const d = maxDiff(got, ref.forward[CASES.findIndex((c) => c[0] === 'llama32')]);
  t.ok(d < 1e-4, `log-probabilities within ${d.toExponential(2)} of transformers on the HF directory`);
});

test("no RoPE base in config.json or GGUF: transformers' (llama.cpp's) default, said in a warning", async (t) => {
  const warnings = [];
  const onWarning = (w) => warnings.push(w);
  process.on('warning', onWarning);
  const { config } = loadModel(dirs.nobase.src);
  await new Promise((resolve) => setImmediate(resolve));
  process.off('warning', onWarning);
  t.equal(config.ropeTheta, 10000, "Qwen3Config's default base");
  const w = warnings.find((x) => x.code === 'PJRT_SCORE_ROPE_DEFAULT');
  t.ok(w && /rope_theta/.test(w.message) && /10000/.test(w.message), `warned: ${w && w.message}`);
  const got = await scoreDir(dirs.nobase.src);
  const d = maxDiff(got, ref.forward[2 * CASES.length]);
  t.ok(d < 1e-4, `log-probabilities within ${d.toExponential(2)} of transformers, which uses the same default`);
  // A GGUF without rope.freq_base: llama.cpp's 10,000, said the same way.
  const file = path.join(work, 'nobase.gguf');
  writeTinyGguf(dirs.qwen3.model, file, { dropMetadata: ['qwen3.rope.freq_base'] });
  const ggufWarnings = [];
  const onGguf = (w) => ggufWarnings.push(w);
  process.on('warning', onGguf);
  const gguf = loadModel(file);
  await new Promise((resolve) => setImmediate(resolve));
  process.off('warning', onGguf);
  t.equal(gguf.config.ropeTheta, 10000, "GGUF: llama.cpp's default base");
  const gw = ggufWarnings.find((x) => x.code === 'PJRT_SCORE_ROPE_DEFAULT');
  t.ok(gw && /qwen3\.rope\.freq_base/.test(gw.message), `GGUF: warned: ${gw && gw.message}`);
});

test('refused with the key named: dynamic scaling, a llama3 scaling without its factors, an unknown type, a base that is not a number', (t) => {
  const base = JSON.parse(fs.readFileSync(path.join(dirs.llama32.v4, 'config.json'), 'utf8'));
  const cases = [
    [
      { rope_scaling: { rope_type: 'dynamic', factor: 2 } },
      /rope_type "dynamic" \(dynamic NTK scaling\) is not supported/,
    ],
    [
      { rope_scaling: null, rope_parameters: { rope_type: 'dynamic', factor: 2, rope_theta: 10000 } },
      /rope_parameters\.rope_type "dynamic"/,
    ],
    [
      { rope_scaling: { rope_type: 'llama3', factor: 8, high_freq_factor: 4, original_max_position_embeddings: 8192 } },
      /rope_scaling\.low_freq_factor is required/,
    ],
    [{ rope_scaling: { rope_type: 'longrope', factor: 8 } }, /rope_type "longrope" is not supported/],
    [
      { rope_scaling: null, rope_theta: undefined, rope_parameters: { rope_type: 'default', rope_theta: 'big' } },
      /rope_parameters\.rope_theta should be a positive number, got "big"/,
    ],
  ];
  for (const [keys, message] of cases) {
    const dir = path.join(work, `refused-${Math.random().toString(36).slice(2)}`);
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ ...base, ...keys }));
    for (const f of fs.readdirSync(dirs.llama32.v4))
      if (f !== 'config.json') fs.copyFileSync(path.join(dirs.llama32.v4, f), path.join(dir, f));
    t.throws(() => loadModel(dir), message, `${JSON.stringify(keys)}`);
  }
  t.end();
});

test('teardown', (t) => {
  fs.rmSync(work, { recursive: true, force: true });
  t.end();
});
