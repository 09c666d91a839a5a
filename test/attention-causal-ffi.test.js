'use strict';
// The prefill's causal attention through the addon's fused kernel (causal
// form `ffi`: custom call pjrt_score_causal_attention, the prefix kernel with
// items of one token over their own sequence, native/kernels/prefix_attention.cc) on
// the real CPU plugin: against a float64 plain-JS causal attention and the
// square form on odd shapes (T from 1 to 600, crossing key blocks of 256,
// valid length 0, < T and = T, GQA 3/1 and 9/3, MHA, D = 64 and D = 40 which
// only the portable path takes), on every f32 path this CPU has (portable,
// AVX2, AVX-512: PJRT_SCORE_KERNEL_ISA caps the choice)
// (PJRT_SCORE_KERNEL_PORTABLE=1); rows past the valid length exactly 0; a
// later key never reaches an earlier row; hostile shapes at the handler are
// errors and the client goes on; the default model's prefill with `ffi`
// equals `qc4` and `square`.
const test = require('tape');
const { Client } = require('../dist/runtime');
const {
  buildProgram,
  TensorType,
  causalPrefix,
  decoderPrefill,
  decoderFused,
  parseCausalAttentionTag,
  causalAttentionTag,
} = require('../dist/hlo');
const { loadModel } = require('../dist/model');
const { uploadWeights } = require('../dist/device-weights');
const ref = require('./helpers/attention-reference');
const { closeRel } = ref;
const { runProgram } = require('./helpers/run-program');
const { withIsa, f32Paths } = require('./helpers/kernel-path');
const { causalInputs, prefillByForm } = require('./helpers/causal-forms');

// Outputs are softmax-weighted averages of values in [-1, 1): 1e-5 absolute is 1e-5 of their scale.
// f32 rounding of D-term dots and up-to-600-term sums is ~1e-6 there, so 1e-5 still fails a wrong key.
const TOL = 1e-5;
let client;

const CASES = [
  { name: 'T=1, all valid, GQA 3/1, D=64', T: 1, validLength: 1, Hq: 3, Hkv: 1, D: 64 },
  { name: 'T=7, 5 valid, GQA 9/3, D=40 (portable only)', T: 7, validLength: 5, Hq: 9, Hkv: 3, D: 40 },
  { name: 'T=37, all valid, MHA 4/4, D=64', T: 37, validLength: 37, Hq: 4, Hkv: 4, D: 64 },
  { name: 'T=37, valid length 0, GQA 3/1, D=64', T: 37, validLength: 0, Hq: 3, Hkv: 1, D: 64 },
  {
    name: 'T=257, all valid (the last key alone in block 2), GQA 3/1, D=64',
    T: 257,
    validLength: 257,
    Hq: 3,
    Hkv: 1,
    D: 64,
  },
  {
    name: 'T=300, 280 valid (2 blocks), GQA 3/1, D=40 (portable only)',
    T: 300,
    validLength: 280,
    Hq: 3,
    Hkv: 1,
    D: 40,
  },
  { name: 'T=600, 555 valid (3 blocks), GQA 9/3, D=64', T: 600, validLength: 555, Hq: 9, Hkv: 3, D: 64 },
];

/** Causal attention in float64, one row and head at a time: row i sees keys 0..i; rows >= validLength are 0. */
function causalReference({ T, Hq, Hkv, D, validLength }, [q, k, v]) {
  const out = new Float64Array(T * Hq * D);
  const group = Hq / Hkv;
  const scale = 1 / Math.sqrt(D);
  const scores = new Float64Array(T);
  for (let i = 0; i < validLength; i++) {
    for (let h = 0; h < Hq; h++) {
      const kv = Math.floor(h / group);
      let max = -Infinity;
      for (let j = 0; j <= i; j++) {
        let s = 0;
        for (let x = 0; x < D; x++) s += q[(i * Hq + h) * D + x] * k[(j * Hkv + kv) * D + x];
        scores[j] = s * scale;
        max = Math.max(max, scores[j]);
      }
      let total = 0;
      for (let j = 0; j <= i; j++) total += scores[j] = Math.exp(scores[j] - max);
      const o = (i * Hq + h) * D;
      for (let j = 0; j <= i; j++) {
        const w = scores[j] / total;
        for (let x = 0; x < D; x++) out[o + x] += w * v[(j * Hkv + kv) * D + x];
      }
    }
  }
  return out;
}

function formsProgram({ T, Hq, Hkv, D }, forms) {
  return buildProgram(`causal_ffi_t${T}_h${Hq}_${Hkv}_d${D}`, (f) => {
    const q = f.param(TensorType.f32([T, Hq, D]), 'q');
    const k = f.param(TensorType.f32([T, Hkv, D]), 'k');
    const v = f.param(TensorType.f32([T, Hkv, D]), 'v');
    const n = f.param(TensorType.s32([]), 'valid_length');
    return Object.fromEntries(forms.map((form, i) => [`out${i}`, causalPrefix(f, q, k, v, n, form)]));
  });
}

const SQUARE = parseCausalAttentionTag('square');
const KERNEL = parseCausalAttentionTag('ffi');

test('setup: CPU client with the causal kernel registered; the tag and the program', async (t) => {
  client = await Client.create();
  t.equal(client.platformName, 'cpu');
  t.equal(client.prefixAttentionKernel, true, 'the CPU plugin registered the kernels');
  t.deepEqual(KERNEL, { kind: 'kernel' }, 'tag ffi parses to the kernel');
  t.equal(causalAttentionTag(KERNEL), 'ffi', 'and round-trips');
  t.match(
    formsProgram(CASES[1], [KERNEL]).text,
    /"stablehlo.custom_call".*call_target_name = "pjrt_score_causal_attention", api_version = 4 : i32/,
  );
});

CASES.forEach((c, ci) => {
  test(`causal ffi equals the float64 reference and the square form: ${c.name}`, async (t) => {
    const inputs = causalInputs(700 + ci, c);
    const prog = formsProgram(c, [SQUARE, KERNEL]);
    const expect = causalReference(c, inputs);
    const w = c.Hq * c.D;
    const byPath = {};
    for (const { isa, path } of f32Paths(c.D)) {
      const [square, ffi] = await withIsa(isa, () => runProgram(client, prog, inputs));
      byPath[path] = ffi;
      t.ok(ffi.every(Number.isFinite), `${path}: finite`);
      t.ok(ref.maxAbsDiff(ffi, expect) <= TOL, `${path}: vs reference ${ref.maxAbsDiff(ffi, expect).toExponential(2)}`);
      const { ok, worst } = closeRel(ffi, square);
      t.ok(ok, `${path}: vs square within 1e-5 relative (worst ${worst.toFixed(3)} of the bound)`);
      t.ok(
        ffi.subarray(c.validLength * w).every((x) => x === 0),
        `${path}: rows past the valid length exactly 0 (${c.T - c.validLength})`,
      );
    }
    // Only rows with earlier keys run the blocked (path-dependent) loops.
    const paths = Object.keys(byPath);
    if (c.validLength > 1) {
      for (const path of paths.slice(1))
        t.notOk(
          byPath[path].every((x, i) => Object.is(x, byPath.portable[i])),
          `${path} and portable ran different code (their results differ in some bit)`,
        );
    }
    t.pass(`paths run here for D=${c.D}: ${paths.join(', ')}`);
  });
});

test('causal ffi: a later key never reaches an earlier row', async (t) => {
  const c = { T: 300, validLength: 290, Hq: 6, Hkv: 2, D: 64 };
  const prog = formsProgram(c, [KERNEL]);
  const base = causalInputs(11, c);
  const w = c.Hq * c.D;
  for (const { isa, path } of f32Paths(c.D)) {
    const [a] = await withIsa(isa, () => runProgram(client, prog, base));
    for (const key of [100, 270]) {
      const other = base.map((x) => x.slice());
      for (let x = key * c.Hkv * c.D; x < (key + 1) * c.Hkv * c.D; x++) {
        other[1][x] += 0.5;
        other[2][x] -= 0.5;
      }
      const [b] = await withIsa(isa, () => runProgram(client, prog, other));
      const before = a.subarray(0, key * w).every((x, i) => Object.is(x, b[i]));
      t.ok(before, `${path} path, key ${key} changed: rows 0..${key - 1} bit-identical`);
      t.notOk(
        a.subarray(key * w, (key + 1) * w).every((x, i) => Object.is(x, b[key * w + i])),
        `row ${key} itself changed`,
      );
    }
  }
});

test('causal ffi: a grouped call (cross-request pass) or a windowed or capped one is refused, not swapped; program names differ per form', (t) => {
  const grouped = () =>
    buildProgram('causal_ffi_grouped', (f) => {
      const q = f.param(TensorType.f32([2, 8, 4, 8]), 'q');
      const k = f.param(TensorType.f32([2, 8, 2, 8]), 'k');
      return { o: causalPrefix(f, q, k, k, f.param(TensorType.s32([2]), 'n'), KERNEL) };
    });
  t.throws(
    grouped,
    /causal attention 'ffi' \(the addon's kernel\) takes one sequence \(validLength s32\[\]\), got validLength tensor<2xi32>/,
    'validLength s32[2]: refused',
  );
  const capped = () =>
    buildProgram('causal_ffi_capped', (f) => {
      const q = f.param(TensorType.f32([8, 4, 8]), 'q');
      const k = f.param(TensorType.f32([8, 2, 8]), 'k');
      return { o: causalPrefix(f, q, k, k, f.param(TensorType.s32([]), 'n'), KERNEL, { softcap: 50 }) };
    });
  t.throws(
    capped,
    /causal attention 'ffi' \(the addon's kernel\) takes no sliding window or soft cap/,
    'a soft cap: refused',
  );
  const model = {
    vocabSize: 16,
    hiddenSize: 64,
    intermediateSize: 32,
    numLayers: 1,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 16,
    ropeTheta: 10000,
    rmsEps: 1e-5,
    attentionBias: false,
    qkNorm: false,
  };
  const prefill = (form) => decoderPrefill(model, { prefix: 8, labels: 2 }, { causalAttention: form }).name;
  const names = ['square', 'qc4', 'ffi'].map((tag) => prefill(parseCausalAttentionTag(tag)));
  t.equal(new Set(names).size, 3, `prefill names: ${names.join(', ')}`);
  const fused = (prefixAttention, causalAttention) =>
    decoderFused(model, { prefix: 8, items: 2, itemLength: 4, labels: 2 }, { prefixAttention, causalAttention }).name;
  const a = fused({ kind: 'kernel' }, SQUARE);
  const b = fused({ kind: 'joint' }, KERNEL);
  t.notEqual(a, b, `prefix ffi + causal square (${a}) is not prefix joint + causal ffi (${b})`);
  t.end();
});

// A causal custom call with the operands given: [name, type] pairs and the result type.
function hostileProgram(name, operands, result) {
  return buildProgram(`causal_ffi_hostile_${name}`, (f) => {
    const params = operands.map(([n, type], i) => f.param(type, `${n}${i}`));
    return { out: f.customCall('pjrt_score_causal_attention', params, [result])[0] };
  });
}

function fill(type) {
  const size = type.dims.reduce((a, b) => a * b, 1);
  return type.elementType === 's32'
    ? new Int32Array(size).fill(3)
    : Float32Array.from({ length: size }, (_, i) => Math.sin(i));
}

test('hostile shapes at the causal handler: a clear error, and the client goes on', async (t) => {
  const { f32, s32 } = TensorType;
  const good = () => [
    ['q', f32([5, 4, 8])],
    ['k', f32([5, 2, 8])],
    ['v', f32([5, 2, 8])],
    ['n', s32([])],
  ];
  const out = f32([5, 4, 8]);
  const swap = (i, type) => good().map((x, j) => (j === i ? [x[0], type] : x));
  const cases = [
    ['q of rank 4', swap(0, f32([1, 5, 4, 8])), out, /q must have rank 3, got 4/],
    ['k as s32', swap(1, s32([5, 2, 8])), out, /k must be f32/],
    [
      'v of another length',
      swap(2, f32([4, 2, 8])),
      out,
      /k \[5, 2, 8\] and v \[4, 2, 8\] must be \[T, Hkv, D\] of q \[5, 4, 8\]/,
    ],
    ['k of another head dim', swap(1, f32([5, 2, 4])), out, /must be \[T, Hkv, D\]/],
    [
      '3 kv heads under 4 query heads',
      [good()[0], ['k', f32([5, 3, 8])], ['v', f32([5, 3, 8])], good()[3]],
      out,
      /query heads \(4\) must be a multiple of kv heads \(3\)/,
    ],
    [
      'zero kv heads',
      [good()[0], ['k', f32([5, 0, 8])], ['v', f32([5, 0, 8])], good()[3]],
      out,
      /query heads \(4\) must be a multiple of kv heads \(0\)/,
    ],
    ['valid length of rank 1', swap(3, s32([1])), out, /valid length must have rank 0, got 1/],
    ['valid length as f32', swap(3, f32([])), out, /valid length must be s32/],
    ['a result of other dims', good(), f32([5, 4, 9]), /result \[5, 4, 9\] must be \[T, Hq, D\]/],
    ['a result as s32', good(), s32([5, 4, 8]), /result must be f32/],
    ['three operands', good().slice(0, 3), out, /expects 4 operands \(q, k, v, valid length\), got 3/],
    ["the prefix call's seven", [...good(), ...good().slice(0, 3)], out, /expects 4 operands/],
  ];
  for (const [name, operands, result, pattern] of cases) {
    const prog = hostileProgram(name.replace(/[^A-Za-z0-9]+/g, '_'), operands, result);
    await runProgram(
      client,
      prog,
      operands.map(([, type]) => fill(type)),
    ).then(
      () => t.fail(`${name}: must be refused`),
      (err) =>
        t.ok(
          /pjrt_score_causal_attention: /.test(err.message) && pattern.test(err.message),
          `${name}: ${err.message.split('\n')[0].slice(0, 200)}`,
        ),
    );
  }
  // Zero sizes are well formed: nothing to compute, nothing to write.
  for (const [name, operands, result] of [
    ['zero rows', [['q', f32([0, 4, 8])], ['k', f32([0, 2, 8])], ['v', f32([0, 2, 8])], good()[3]], f32([0, 4, 8])],
    ['zero head dim', [['q', f32([5, 4, 0])], ['k', f32([5, 2, 0])], ['v', f32([5, 2, 0])], good()[3]], f32([5, 4, 0])],
  ]) {
    const [res] = await runProgram(
      client,
      hostileProgram(name.replace(/ /g, '_'), operands, result),
      operands.map(([, type]) => fill(type)),
    );
    t.equal(res.length, 0, `${name}: runs, an empty result`);
  }
  const [res] = await runProgram(
    client,
    hostileProgram('good', good(), out),
    good().map(([, type]) => fill(type)),
  );
  t.ok(
    res.length === 5 * 4 * 8 && res.every(Number.isFinite) && res.subarray(3 * 4 * 8).every((x) => x === 0),
    'a well-formed call still runs on the same client (rows past valid length 3 are 0)',
  );
});

test('default model: the prefill with causal ffi equals qc4 and square (label probabilities within 1e-5 relative)', async (t) => {
  const model = loadModel();
  const weights = await uploadWeights(client, model.config, model.weights);
  const forms = {};
  for (const tag of ['ffi', 'qc4', 'square'])
    forms[tag] = await prefillByForm(client, model, weights, 48, 45, parseCausalAttentionTag(tag));
  t.match(forms.ffi.name, /_cffi$/, `its own program name: ${forms.ffi.name}`);
  t.ok(forms.ffi.logprobs.every(Number.isFinite), 'finite');
  // The probabilities are ~1e-4 and smaller: a relative bound on them is a bound on their logs' difference.
  // Against square within 1e-5; against qc4 within 1e-5 plus how far qc4 itself is from square (XLA's own
  // rounding of the chunked form differs by CPU: 1.1e-5 from ffi on an AVX-512 Zen 4 with the code before).
  const squareDiff = ref.maxAbsDiff(forms.ffi.logprobs, forms.square.logprobs);
  t.ok(
    squareDiff <= TOL,
    `vs square: label probabilities within 1e-5 relative (max |log p difference| ${squareDiff.toExponential(2)})`,
  );
  const formsApart = ref.maxAbsDiff(forms.qc4.logprobs, forms.square.logprobs);
  const qc4Diff = ref.maxAbsDiff(forms.ffi.logprobs, forms.qc4.logprobs);
  t.ok(
    qc4Diff <= TOL + formsApart,
    `vs qc4: max |log p difference| ${qc4Diff.toExponential(2)} <= 1e-5 + |qc4 - square| (${formsApart.toExponential(2)})`,
  );
  // K/V after 30 layers of rounding: the yardstick is how far the two StableHLO forms are apart.
  for (const part of ['k', 'v']) {
    const ours = ref.maxAbsDiff(forms.ffi[part], forms.square[part]);
    const yardstick = ref.maxAbsDiff(forms.qc4[part], forms.square[part]);
    t.ok(
      ours <= Math.max(2 * yardstick, 1e-6),
      `${part} cache (valid rows): max |ffi - square| ${ours.toExponential(2)} <= 2 x |qc4 - square| (${yardstick.toExponential(2)})`,
    );
  }
  weights.dispose();
});

test('teardown', (t) => {
  client.dispose();
  t.end();
});
