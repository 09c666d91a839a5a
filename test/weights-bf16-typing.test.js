'use strict';
// How bf16 weights and products are typed (platform facts, lib/scoring/platform/profiles.ts;
// docs/gpu.md "Options that matter there"), on the CPU plugin and tiny random
// models whose matrices hold bf16 values (so the bf16 upload is exact and the
// float64 reference forward sees the same weights):
// - bf16 matrices typed bf16 hold the same bits as the u16 ones, from the host
//   and from the device decode; their programs have no shift on weights; with
//   true f32 dots the two typings score alike (different programs, the same
//   exact widening: within 1e-5) and both match the float64 reference;
// - bf16 products (q|k|v and gate|up dots returning bf16 under bf16 dots):
//   declared where asked, and within a bound of the f32-product program's
//   error against the float64 reference, the bound being what the reference
//   itself says one extra bf16 rounding of those products does;
// - the CPU's defaults leave every program text as it is without the options;
// - PJRT_SCORE_PLATFORM_FACTS: a bad value is a clear error before anything
//   loads; a good one changes the programs and is reported at load and in explain.
// XLA allows excess precision by default: on the CPU a bf16 product whose
// consumer converts it to f32 stays f32 (the dot runs in f32 there and the
// f32 -> bf16 -> f32 pair is removed), so the rounding this file checks would
// not happen. Off for this process, before the plugin reads its flags.
process.env.XLA_FLAGS = `${process.env.XLA_FLAGS ?? ''} --xla_allow_excess_precision=false`.trim();
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client, Scorer } = require('..');
const { loadModel, openModel } = require('../dist/model');
const { uploadWeights } = require('../dist/device-weights');
const { decoderWeightSpecs } = require('../dist/hlo');
const { decoderFused, decoderPrefill, decoderExtend } = require('../dist/hlo');
const { platformFacts } = require('../dist/scoring/platform');
const { attentionKernelPaths } = require('../dist/runtime');
const { makeTinyModel, writeTinyGguf } = require('./helpers/tiny-model');
const { referenceLogprobs } = require('./helpers/reference-forward');

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-bf16-typing-'));
const ENV = 'PJRT_SCORE_PLATFORM_FACTS';

// ---- the test's own bf16 rounding ---------------------------------------------

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
/** A number rounded to f32, then to bf16 by round to nearest even on the bits. */
function bf16(value) {
  f32[0] = value;
  const bits = u32[0];
  const hi = bits >>> 16;
  const lo = bits & 0xffff;
  u32[0] = (lo > 0x8000 || (lo === 0x8000 && (hi & 1) === 1) ? hi + 1 : hi) << 16;
  return f32[0];
}

/** A tiny model whose matrices (the 2-D tensors) hold bf16 values; norms and biases stay f32. */
function bf16Model(arch, seed) {
  const tiny = makeTinyModel(arch, seed);
  const w = tiny.weights;
  const round = (a) => a.forEach((v, i) => (a[i] = bf16(v)));
  round(w.embedding);
  if (w.lmHead !== w.embedding) round(w.lmHead);
  for (const layer of w.layers) for (const k of ['wq', 'wk', 'wv', 'wo', 'wGate', 'wUp', 'wDown']) round(layer[k]);
  return tiny;
}

// ---- running a fused program ---------------------------------------------------

const QUERY = [5, 9, 11, 3, 40, 17, 22];
const ITEMS = [[7, 8], [60, 61, 62, 1, 2, 3], [4], [33, 34, 35]];
const LABELS = [0, 5, 63, 31];
const SHAPE = { prefix: 8, items: 4, itemLength: 8, labels: 4 };

let client;
test('setup', async (t) => {
  client = await Client.create();
  t.pass('client');
});

/** Label logprobs [item][label] of the fused program with these options and weights. */
async function scoreFused(config, dw, options) {
  const { prefix: P, items: N, itemLength: L, labels: B } = SHAPE;
  const program = decoderFused(config, SHAPE, options);
  const exe = await client.compile(program.text);
  const pt = new Int32Array(P);
  pt.set(QUERY);
  const it = new Int32Array(N * L);
  ITEMS.forEach((x, i) => it.set(x, i * L));
  const args = [
    await client.upload(pt, [P]),
    await client.upload(Int32Array.of(QUERY.length), []),
    await client.upload(it, [N, L]),
    await client.upload(
      Int32Array.from(ITEMS, (x) => x.length),
      [N],
    ),
    await client.upload(Int32Array.from(LABELS), [B]),
  ];
  const [, items] = await exe.execute([...args, ...dw.buffers]);
  const rows = await items.toHost();
  [...args, items].forEach((b) => b.dispose());
  exe.dispose();
  return ITEMS.map((_, i) => LABELS.map((_, j) => rows[i * B + j]));
}

/** The float64 reference's label logprobs, each item after the query. */
function reference(tiny, options = {}) {
  return ITEMS.map((item) => {
    const seq = [...QUERY, ...item];
    const logprobs = referenceLogprobs(tiny.weights, tiny.config, seq, { ...options, outputs: [seq.length - 1] })[0];
    return LABELS.map((label) => logprobs[label]);
  });
}

function maxDiff(a, b) {
  let worst = 0;
  a.forEach((row, i) => row.forEach((v, j) => (worst = Math.max(worst, Math.abs(v - b[i][j])))));
  return worst;
}

const HIGHEST = { dotPrecision: 'HIGHEST' };
const BF16_DOTS = { dotOperands: 'bf16' };

// ---- bf16 matrices typed bf16 ------------------------------------------------------

for (const arch of ['qwen2', 'qwen3']) {
  test(`${arch}: bf16 matrices typed bf16 hold the u16 bits (host and device decode) and score like them`, async (t) => {
    const tiny = bf16Model(arch, 13);
    const file = path.join(work, `${arch}.gguf`);
    writeTinyGguf(tiny, file, { matrixType: 'F32', embeddingType: 'F32' });
    const model = loadModel(file);
    const specs = decoderWeightSpecs(model.config, 'bf16', 'bf16');
    t.deepEqual(
      [...new Set(specs.filter((s) => s.matrix).map((s) => s.elementType))],
      ['bf16'],
      'every matrix is declared bf16',
    );
    t.ok(
      specs.filter((s) => !s.matrix).every((s) => s.elementType === 'f32'),
      'norms and biases stay f32',
    );

    const bits = await uploadWeights(client, model.config, model.weights, 'bf16');
    const typed = await uploadWeights(client, model.config, model.weights, 'bf16', { bf16Matrices: 'bf16' });
    const opened = openModel(file);
    const decoded = await uploadWeights(client, model.config, opened.weights, 'bf16', { bf16Matrices: 'bf16' });
    opened.weights.close();
    t.equal(typed.bf16Matrices, 'bf16', 'the weights say how they are typed');
    t.equal(typed.bytes, bits.bytes, `the same bytes (${typed.bytes})`);
    for (let i = 0; i < specs.length; i++) {
      const want = await bits.buffers[i].toHost();
      for (const [how, dw] of [
        ['host', typed],
        ['device decode', decoded],
      ]) {
        const got = await dw.buffers[i].toHost();
        const same = got.length === want.length && got.every((v, k) => v === want[k]);
        t.ok(same, `${specs[i].name} (${how}): the same ${got.length} elements`);
      }
    }

    // True f32 dots: both typings widen exactly, so the programs compute the same f32 values; they are
    // different programs (XLA may fuse them differently), so agreement is to f32 rounding: 1e-5 on logprobs.
    const ref = reference(tiny);
    const u16Scores = await scoreFused(model.config, bits, { ...HIGHEST, weights: 'bf16' });
    const bf16Scores = await scoreFused(model.config, typed, { ...HIGHEST, weights: 'bf16', bf16Matrices: 'bf16' });
    const decodedScores = await scoreFused(model.config, decoded, {
      ...HIGHEST,
      weights: 'bf16',
      bf16Matrices: 'bf16',
    });
    const d = maxDiff(bf16Scores, u16Scores);
    t.ok(d <= 1e-5, `highest: typed bf16 vs u16 bits, max |logprob diff| ${d.toExponential(2)} <= 1e-5`);
    t.ok(
      maxDiff(decodedScores, bf16Scores) === 0,
      'the decoded weights score exactly like the host-built ones (same program, same bits)',
    );
    const r = maxDiff(bf16Scores, ref);
    t.ok(
      r <= 1e-4,
      `highest: typed bf16 vs the float64 reference ${r.toExponential(2)} <= 1e-4 (the f32 programs' bound, test/transformer.test.js)`,
    );

    // bf16 dots: the typed matrix goes into the dot as stored, the u16 one is widened and rounded back
    // (exactly, its values are bf16): the same bf16 x bf16 -> f32 dots, again to f32 rounding.
    const u16Bf16 = await scoreFused(model.config, bits, { ...BF16_DOTS, weights: 'bf16' });
    const typedBf16 = await scoreFused(model.config, typed, { ...BF16_DOTS, weights: 'bf16', bf16Matrices: 'bf16' });
    const db = maxDiff(typedBf16, u16Bf16);
    t.ok(db <= 1e-5, `bf16 dots: typed bf16 vs u16 bits, max |logprob diff| ${db.toExponential(2)} <= 1e-5`);
    [bits, typed, decoded].forEach((dw) => dw.dispose());
  });
}

test('program text: typed bf16 matrices are parameters of type bf16, never shifted; converted only where the dots are f32', (t) => {
  const { config } = makeTinyModel('qwen3');
  const shape = { prefix: 8, items: 2, itemLength: 4, labels: 2 };
  for (const [precision, dots] of [
    ['highest', HIGHEST],
    ['bf16', BF16_DOTS],
  ]) {
    const u16 = decoderFused(config, shape, { ...dots, weights: 'bf16' });
    const typed = decoderFused(config, shape, { ...dots, weights: 'bf16', bf16Matrices: 'bf16' });
    t.ok(/shift_left/.test(u16.text), `${precision}, u16 bits: widened by shift_left`);
    t.notOk(/shift_left/.test(typed.text), `${precision}, typed bf16: no shift_left`);
    t.notOk(/ui16/.test(typed.text), `${precision}, typed bf16: no u16 anywhere`);
    t.notEqual(typed.name, u16.name, `${precision}: another name (${typed.name})`);
    const params = typed.inputs.filter((i) => i.dtype === 'bf16').map((i) => i.name);
    t.deepEqual(
      params.sort(),
      ['embedding', 'lmHead', 'wDown', 'wGateUp', 'wO', 'wQkv'],
      `${precision}: the six matrices are bf16 parameters`,
    );
    const converts = typed.text
      .split('\n')
      .filter((l) => l.includes('stablehlo.convert') && /xbf16>\) -> tensor<[0-9x]*xf32>/.test(l));
    // highest: embedding rows, the LM head's label rows and its rows for the logsumexp, and the 4 projections; bf16
    // dots: only the embedding rows (the dots take the matrices as they are).
    t.equal(converts.length, precision === 'highest' ? 7 : 1, `${precision}: bf16 -> f32 in ${converts.length} places`);
  }
  t.end();
});

// ---- bf16 products -----------------------------------------------------------------

test('program text: bf16 products are the q|k|v and gate|up dots, only under bf16 dots', (t) => {
  const { config } = makeTinyModel('qwen3');
  const shape = { prefix: 8, items: 2, itemLength: 4, labels: 2 };
  const dotLines = (text) => text.split('\n').filter((l) => l.includes('stablehlo.dot_general'));
  for (const build of [
    (o) => decoderFused(config, shape, o),
    (o) => decoderPrefill(config, { prefix: 8, labels: 2 }, o),
    (o) => decoderExtend(config, shape, o),
  ]) {
    const plain = build({ ...BF16_DOTS, weights: 'bf16', bf16Matrices: 'bf16' });
    const products = build({ ...BF16_DOTS, weights: 'bf16', bf16Matrices: 'bf16', bf16Products: true });
    const bf16Out = dotLines(products.text).filter((l) => /-> tensor<[0-9x]*xbf16>/.test(l));
    const widths = bf16Out.map((l) => Number(/-> tensor<[0-9]+x([0-9]+)xbf16>/.exec(l)[1])).sort((a, b) => a - b);
    const qkv = (config.numHeads + 2 * config.numKvHeads) * config.headDim;
    t.deepEqual(
      widths,
      [qkv, 2 * config.intermediateSize].sort((a, b) => a - b),
      `${products.name}: two dots return bf16, q|k|v [T, ${qkv}] and gate|up [T, ${2 * config.intermediateSize}]`,
    );
    t.equal(
      dotLines(plain.text).filter((l) => /-> tensor<[0-9x]*xbf16>/.test(l)).length,
      0,
      `${plain.name}: no bf16 product without the option`,
    );
    t.ok(products.name.endsWith('_mbf16_pbf16') && plain.name.endsWith('_mbf16'), 'the names say so');
    t.equal(
      build({ ...HIGHEST, weights: 'bf16', bf16Products: true }).text,
      build({ ...HIGHEST, weights: 'bf16' }).text,
      'f32 dots: bf16Products changes nothing',
    );
  }
  t.end();
});

test("bf16 products: within the f32-product program's error of the float64 reference, plus what one more bf16 rounding does there", async (t) => {
  const tiny = bf16Model('qwen2', 17);
  const file = path.join(work, 'products.gguf');
  writeTinyGguf(tiny, file, { matrixType: 'F32', embeddingType: 'F32' });
  const model = loadModel(file);
  const dw = await uploadWeights(client, model.config, model.weights, 'bf16', { bf16Matrices: 'bf16' });
  const options = { ...BF16_DOTS, weights: 'bf16', bf16Matrices: 'bf16' };
  const f32Products = await scoreFused(model.config, dw, options);
  const bf16Products = await scoreFused(model.config, dw, { ...options, bf16Products: true });
  dw.dispose();
  const ref = reference(tiny);
  // The reference with the q, k, v, gate and up products rounded to bf16 (relative error <= 2^-9 each):
  // how far one extra bf16 rounding of exactly those products moves the logprobs of this model.
  const rounded = reference(tiny, { roundProducts: (y) => y.forEach((v, i) => (y[i] = bf16(v))) });
  const extra = maxDiff(rounded, ref);
  const before = maxDiff(f32Products, ref);
  const after = maxDiff(bf16Products, ref);
  t.comment(
    `vs float64: f32 products ${before.toExponential(2)}, bf16 products ${after.toExponential(2)}; one extra rounding in the reference moves it ${extra.toExponential(2)}`,
  );
  t.ok(extra > 0, 'the extra rounding does move the reference');
  t.ok(maxDiff(bf16Products, f32Products) > 0, 'the bf16 products change the scores (they are really rounded)');
  // The program's rounding errors are other draws of the same size (each <= 2^-9 relative, as the
  // reference's): at most twice what the reference shows, on top of the f32-product program's error.
  t.ok(
    after <= before + 2 * extra,
    `bf16 products ${after.toExponential(2)} <= ${before.toExponential(2)} + 2 x ${extra.toExponential(2)}`,
  );
});

// ---- the CPU's defaults ------------------------------------------------------------

test("the CPU's facts (u16 bits, f32 products) leave every program as it is without the options", (t) => {
  const facts = platformFacts('cpu');
  t.deepEqual([facts.bf16Matrices, facts.bf16Products], ['u16', false], 'cpu: u16 bits, f32 products');
  const cuda = platformFacts('cuda');
  t.deepEqual([cuda.bf16Matrices, cuda.bf16Products], ['bf16', true], 'cuda: typed bf16, bf16 products');
  const cpuOptions = { bf16Matrices: facts.bf16Matrices, bf16Products: facts.bf16Products };
  let compared = 0;
  for (const arch of ['llama', 'qwen3', 'gemma3']) {
    const { config } = makeTinyModel(arch);
    for (const weights of ['f32', 'bf16', 'int8']) {
      for (const dots of [HIGHEST, BF16_DOTS]) {
        const o = { ...dots, weights };
        const builds = [
          (x) => decoderFused(config, { prefix: 8, items: 2, itemLength: 4, labels: 2 }, x),
          (x) => decoderFused(config, { groups: 2, prefix: 8, items: 2, itemLength: 4, labels: 2 }, x),
          (x) => decoderPrefill(config, { prefix: 8, labels: 2 }, x),
          (x) => decoderExtend(config, { prefix: 8, items: 2, itemLength: 4, labels: 2 }, x),
        ];
        for (const build of builds) {
          const a = build(o);
          const b = build({ ...o, ...cpuOptions });
          if (a.text !== b.text || a.name !== b.name)
            t.fail(`${arch} ${weights} ${JSON.stringify(dots)} ${a.name}: differs`);
          compared++;
        }
      }
    }
  }
  t.pass(`${compared} programs: the same name and text`);
  t.end();
});

// ---- PJRT_SCORE_PLATFORM_FACTS -----------------------------------------------------------

async function withEnv(value, run) {
  const saved = process.env[ENV];
  process.env[ENV] = value;
  try {
    return await run();
  } finally {
    if (saved === undefined) delete process.env[ENV];
    else process.env[ENV] = saved;
  }
}

test(`${ENV}: bad JSON, an unknown key or a bad value is refused before anything loads`, async (t) => {
  // A model path that does not exist: the variable's error comes first, so nothing was fetched or opened.
  const missing = path.join(work, 'no-such-model.gguf');
  const cases = [
    ['{bf16Matrices: bf16}', /PJRT_SCORE_PLATFORM_FACTS must be a JSON object/],
    ['["bf16"]', /PJRT_SCORE_PLATFORM_FACTS must be a JSON object/],
    [
      '{"bf16Weights":"bf16"}',
      /PJRT_SCORE_PLATFORM_FACTS: unknown key "bf16Weights" \(known: bf16Matrices, bf16Products, matmulKernel, matmulKernelF32, countSteps, queryTokenSteps, itemTokenSteps, xlaOptions\)/,
    ],
    ['{"bf16Matrices":"f16"}', /PJRT_SCORE_PLATFORM_FACTS: bf16Matrices must be "u16" or "bf16", got "f16"/],
    ['{"bf16Products":"yes"}', /PJRT_SCORE_PLATFORM_FACTS: bf16Products must be true or false, got "yes"/],
    [
      '{"countSteps":[2.5]}',
      /PJRT_SCORE_PLATFORM_FACTS: countSteps must be an array of numbers in \(1, 2\), got \[2.5\]/,
    ],
    [
      '{"itemTokenSteps":[2]}',
      /PJRT_SCORE_PLATFORM_FACTS: itemTokenSteps must be an array of numbers in \(1, 2\), got \[2\]/,
    ],
    [
      '{"queryTokenSteps":[1]}',
      /PJRT_SCORE_PLATFORM_FACTS: queryTokenSteps must be an array of numbers in \(1, 2\), got \[1\]/,
    ],
    [
      '{"xlaOptions":{"allow_excess_precision":false}}',
      /PJRT_SCORE_PLATFORM_FACTS: xlaOptions must be an object .*option name 'allow_excess_precision' must match/,
    ],
  ];
  for (const [value, message] of cases) {
    await withEnv(value, () =>
      Scorer.load({ model: missing, diskCache: false }).then(
        (s) => {
          s.dispose();
          t.fail(`${value} must be refused`);
        },
        (error) => t.match(error.message, message, `${value}: ${error.message}`),
      ),
    );
  }
});

test(`${ENV}: a good one changes the programs, and the load log and explain say which facts are in force`, async (t) => {
  const tiny = bf16Model('qwen3', 19);
  const file = path.join(work, 'scorer.gguf');
  writeTinyGguf(tiny, file, { matrixType: 'F32', embeddingType: 'F32' });
  const request = { query: QUERY, items: ITEMS, labelTokenIds: LABELS };
  const load = async (env) => {
    const events = [];
    const scorer = await withEnv(env, () =>
      Scorer.load({
        model: file,
        weights: 'bf16',
        precision: 'bf16',
        diskCache: false,
        prefixCacheBytes: 0,
        log: (e) => events.push(e),
      }),
    );
    const loaded = events.find((e) => e.event === 'model_loaded');
    const plan = scorer.explain({ ...request, algorithm: 'packed' });
    const text = scorer.engine.runner.source(plan.passes[0].program)();
    const scores = (await scorer.score(request, { algorithm: 'packed' })).scores;
    scorer.dispose();
    return { loaded, plan, text, scores };
  };
  // The typing is what this test is about: both without the matmul kernel (its own test: matmul-kernel.test.js),
  // whose projections read the u16 bits without a widening in the program text.
  const unset = await load('');
  const plain = await load('{"matmulKernel":false}');
  const knob = await load('{"bf16Matrices":"bf16","bf16Products":true,"matmulKernel":false}');
  // The matmul kernel on the one CPU class whose facts take it (AVX-512 BF16), where the kernels may run there.
  const paths = attentionKernelPaths(64);
  const units = paths.allowed === 'avx512bf16' && unset.loaded.attentionKernel.tried === 'avx512bf16';
  t.deepEqual(
    unset.loaded.bf16,
    {
      matrices: 'u16',
      products: false,
      matmulKernel: units,
      packedMatrices: units ? ['wQkv', 'wGateUp', 'wO', 'wDown'] : [],
    },
    `unset: the CPU's facts in the load log (the matmul kernel ${units ? 'on this AVX-512 BF16 CPU, its four matrices packed for it' : `not on this ${paths.cpu} CPU`})`,
  );
  t.deepEqual(
    plain.loaded.bf16,
    { matrices: 'u16', products: false, matmulKernel: false, packedMatrices: [], overridden: ['matmulKernel'] },
    'the kernel off: the load log says the variable set it',
  );
  t.deepEqual(
    knob.loaded.bf16,
    {
      matrices: 'bf16',
      products: true,
      matmulKernel: false,
      packedMatrices: [],
      overridden: ['bf16Matrices', 'bf16Products', 'matmulKernel'],
    },
    'set: the load log says so, and that the variable set them',
  );
  t.deepEqual(knob.plan.bf16, knob.loaded.bf16, 'explain says the same');
  t.ok(/module @decoder_fused_\S*_mbf16_pbf16(_\w+)? /.test(knob.text), 'the program is another one, by name');
  t.notOk(/_mbf16|_pbf16/.test(plain.text), 'and not without the variable');
  t.ok(!/shift_left/.test(knob.text) && /shift_left/.test(plain.text), 'typed bf16: no widening in the text');
  // Scores are label probabilities: the extra rounding moves them little (the bound test above is on logprobs).
  const d = maxDiff(knob.scores, plain.scores);
  t.ok(d > 0 && d <= 0.02, `scores moved ${d.toExponential(2)} (within the accuracy gate's 0.02)`);
});

test('teardown', (t) => {
  client.dispose();
  fs.rmSync(work, { recursive: true, force: true });
  t.end();
});
