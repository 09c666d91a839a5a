'use strict';
// The prefill's causal attention with query chunks (each against the keys it
// can see) on the real CPU plugin: against the naive float64 reference and
// the square form (within 1e-5 relative), with odd sizes (P not a multiple
// of the chunk count, more chunks than rows, padding rows, GQA), padding
// rows exactly 0 and padding keys never read; then the default model's
// prefill with chunks against the square one.
const test = require('tape');
const { joinInputs } = require('./helpers/prefix-forms');
const { Client } = require('../dist/runtime');
const { buildProgram, TensorType, causalPrefix } = require('../dist/hlo');
const { loadModel } = require('../dist/model');
const { uploadWeights } = require('../dist/device-weights');
const ref = require('./helpers/attention-reference');
const { closeRel } = ref;
const { runProgram } = require('./helpers/run-program');
const { causalInputs, prefillByForm } = require('./helpers/causal-forms');

const TOL = 1e-5;
let client;

const FORMS = [
  { kind: 'square' },
  { kind: 'chunked', queryChunks: 2 },
  { kind: 'chunked', queryChunks: 3 },
  { kind: 'chunked', queryChunks: 8 },
  { kind: 'chunked', queryChunks: 1000 },
];

async function runForms({ P, Hq, Hkv, D }, inputs) {
  const prog = buildProgram('causal_forms', (f) => {
    const q = f.param(TensorType.f32([P, Hq, D]), 'q');
    const k = f.param(TensorType.f32([P, Hkv, D]), 'k');
    const v = f.param(TensorType.f32([P, Hkv, D]), 'v');
    const n = f.param(TensorType.s32([]), 'validLength');
    return Object.fromEntries(FORMS.map((form, i) => [`out${i}`, causalPrefix(f, q, k, v, n, form)]));
  });
  return runProgram(client, prog, inputs);
}

function reference({ P, Hq, Hkv, D, validLength }, [q, k, v]) {
  const none = new Float32Array(0);
  return ref.factoredAttention({
    queryQ: q,
    queryK: k,
    queryV: v,
    queryLength: validLength,
    itemQ: none,
    itemK: none,
    itemV: none,
    itemLengths: new Int32Array(0),
    P,
    N: 0,
    L: 1,
    Hq,
    Hkv,
    D,
  }).queryOut;
}

const CASES = [
  { name: 'P=13, 11 valid, GQA 3', P: 13, validLength: 11, Hq: 6, Hkv: 2, D: 8 },
  { name: 'P=1', P: 1, validLength: 1, Hq: 2, Hkv: 1, D: 4 },
  { name: 'P=7, all valid, more chunks than rows', P: 7, validLength: 7, Hq: 3, Hkv: 3, D: 5 },
  { name: 'P=50, 37 valid, 9 heads over 3', P: 50, validLength: 37, Hq: 9, Hkv: 3, D: 16 },
];

test('setup: CPU client', async (t) => {
  client = await Client.create();
  t.equal(client.platformName, 'cpu');
});

CASES.forEach((c, ci) => {
  test(`chunked causal attention equals the reference and the square form: ${c.name}`, async (t) => {
    const inputs = causalInputs(900 + ci, { ...c, T: c.P });
    const outs = await runForms(c, inputs);
    const expect = reference(c, inputs);
    const square = outs[0];
    t.ok(
      ref.maxAbsDiff(square, expect) <= TOL,
      `square vs reference: ${ref.maxAbsDiff(square, expect).toExponential(2)}`,
    );
    const w = c.Hq * c.D;
    FORMS.slice(1).forEach((form, i) => {
      const out = outs[i + 1];
      const label = `${form.queryChunks} chunks`;
      t.ok(
        ref.maxAbsDiff(out, expect) <= TOL,
        `${label} vs reference: ${ref.maxAbsDiff(out, expect).toExponential(2)}`,
      );
      const { ok, worst } = closeRel(out, square);
      t.ok(ok, `${label} vs square within 1e-5 relative (worst ${worst.toFixed(3)} of the bound)`);
      t.ok(
        out.subarray(c.validLength * w).every((x) => x === 0),
        `${label}: padding rows are exactly 0 (${c.P - c.validLength})`,
      );
    });
  });
});

test('chunked: other garbage in the padding rows changes no real row', async (t) => {
  const c = CASES[0];
  const a = causalInputs(77, { ...c, T: c.P });
  const b = a.map((x) => x.slice());
  const next = ref.rng(3);
  for (let i = c.validLength * c.Hkv * c.D; i < c.P * c.Hkv * c.D; i++) {
    b[1][i] = (next() - 0.5) * 1e6;
    b[2][i] = (next() - 0.5) * 1e8;
  }
  const x = await runForms(c, a);
  const y = await runForms(c, b);
  FORMS.forEach((form, i) =>
    t.ok(
      x[i].every((v, j) => Object.is(v, y[i][j])),
      `${form.kind}${form.queryChunks ? ` ${form.queryChunks}` : ''}: bit-identical`,
    ),
  );
});

test('chunked, grouped (validLength s32[G]): each group equals the reference alone', async (t) => {
  const c = { P: 10, Hq: 4, Hkv: 2, D: 4 };
  const groups = [
    { ...c, validLength: 10 },
    { ...c, validLength: 6 },
  ];
  const inputs = groups.map((gc, i) => causalInputs(40 + i, { ...gc, T: gc.P }));
  const G = groups.length;
  const joined = (k) => joinInputs(inputs, k);
  const prog = buildProgram('causal_grouped', (f) => {
    const q = f.param(TensorType.f32([G, c.P, c.Hq, c.D]), 'q');
    const k = f.param(TensorType.f32([G, c.P, c.Hkv, c.D]), 'k');
    const v = f.param(TensorType.f32([G, c.P, c.Hkv, c.D]), 'v');
    const n = f.param(TensorType.s32([G]), 'validLength');
    return { out: causalPrefix(f, q, k, v, n, { kind: 'chunked', queryChunks: 3 }) };
  });
  const exe = await client.compile(prog.text);
  const buffers = await Promise.all(prog.inputs.map((spec, i) => client.upload(joined(i), spec.dims, spec.dtype)));
  const [outBuf] = await exe.execute(buffers);
  const out = await outBuf.toHost();
  [...buffers, outBuf].forEach((b) => b.dispose());
  exe.dispose();
  const size = c.P * c.Hq * c.D;
  groups.forEach((gc, gi) => {
    const expect = reference(gc, inputs[gi]);
    const got = out.subarray(gi * size, (gi + 1) * size);
    t.ok(
      ref.maxAbsDiff(got, expect) <= TOL,
      `3 chunks, group ${gi}: vs reference ${ref.maxAbsDiff(got, expect).toExponential(2)}`,
    );
  });
});

test('chunked: a bad chunk count is a build error', (t) => {
  const f = () =>
    buildProgram('bad', (b) => {
      const q = b.param(TensorType.f32([4, 2, 4]), 'q');
      const k = b.param(TensorType.f32([4, 1, 4]), 'k');
      return { o: causalPrefix(b, q, k, k, b.param(TensorType.s32([]), 'n'), { kind: 'chunked', queryChunks: 0 }) };
    });
  t.throws(f, /queryChunks must be a positive integer, got 0/);
  t.end();
});

test('default model: prefill with query chunks agrees with the square prefill as closely as the square one does with itself in another bucket', async (t) => {
  const model = loadModel();
  const weights = await uploadWeights(client, model.config, model.weights);
  const run = async (P, form) => {
    const r = await prefillByForm(client, model, weights, P, 45, form);
    return { ...r, probs: Float64Array.from(r.logprobs, Math.exp) };
  };
  const square = await run(48, { kind: 'square' });
  const otherBucket = await run(64, { kind: 'square' });
  const chunked = await run(48, { kind: 'chunked', queryChunks: 4 });
  t.notEqual(chunked.name, square.name, `its own program name: ${chunked.name}`);
  // K/V are activations after up to 30 layers of rounding differences: the yardstick is the same
  // square program in another bucket (docs/design.md "Batch invariance": within f32 rounding, not bit for bit).
  for (const part of ['k', 'v']) {
    const ours = ref.maxAbsDiff(chunked[part], square[part]);
    const yardstick = ref.maxAbsDiff(otherBucket[part], square[part]);
    t.ok(
      ours <= Math.max(2 * yardstick, 1e-6),
      `${part} cache (valid rows): max |chunked - square| ${ours.toExponential(2)} <= 2 x square P=64 vs P=48 (${yardstick.toExponential(2)})`,
    );
  }
  const { ok, worst } = ref.closeProbabilities(chunked.probs, square.probs);
  t.ok(ok, `label probabilities within 5e-5 relative (worst ${worst.toFixed(3)} of the bound)`);
  weights.dispose();
});

test('Scorer: causalAttention option is checked; the platform default (the kernel, ffi) and the square form give the same scores within 5e-5 relative', async (t) => {
  const { Scorer } = require('../dist/scoring/scorer');
  await Scorer.load({ causalAttention: { kind: 'chunked', queryChunks: -1 } }).then(
    () => t.fail('a bad chunk count must be refused'),
    (error) =>
      t.ok(
        error instanceof TypeError && /queryChunks must be a positive integer, got -1/.test(error.message),
        `refused: ${error.message}`,
      ),
  );
  const platform = await Scorer.load({ diskCache: false });
  const square = await Scorer.load({ diskCache: false, causalAttention: { kind: 'square' } });
  // The real CPU plugin registers the addon's kernels: its default is the kernel form (`ffi`).
  t.equal(platform.client.prefixAttentionKernel, true, 'the kernels are registered');
  t.deepEqual(
    platform.causalAttention,
    { kind: 'kernel' },
    `default: the platform's kernel form (${JSON.stringify(platform.causalAttention)})`,
  );
  t.deepEqual(platform.platform.causalAttentionWithKernel, platform.causalAttention, 'as the platform facts say');
  t.deepEqual(square.causalAttention, { kind: 'square' }, 'the option wins');
  const request = {
    query: 'Which of these is a fruit, and which is not? Say yes or no for each one. Answer:',
    items: [' an apple', ' a brick', '', ' a pear, ripe'],
    labelTokenIds: [9805, 787],
  };
  for (const algorithm of ['prefix', 'packed']) {
    const a = await platform.score({ ...request, algorithm });
    const b = await square.score({ ...request, algorithm });
    const { ok, worst } = ref.closeProbabilities(a.scores.flat(), b.scores.flat());
    t.ok(
      ok,
      `${algorithm}: platform form within 5e-5 relative of the square form (worst ${worst.toFixed(3)} of the bound)`,
    );
  }
  platform.dispose();
  square.dispose();
});

test('teardown', (t) => {
  client.dispose();
  t.end();
});
