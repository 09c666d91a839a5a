'use strict';
// The addon's fused prefix-attention kernel (native/kernels/prefix_attention.cc,
// prefix-attention form `ffi`, a custom call registered with the real CPU
// plugin): against the float64 JS reference, the joint form and the CPU's
// default form `ones_own` (within 1e-5 relative) on random odd shapes (L, N,
// P not multiples of 8, several key blocks, prefixLength < P, items shorter
// than L, GQA, items over 32 tokens whose own keys go in key blocks), on
// every f32 path this CPU has (portable, AVX2, AVX-512: PJRT_SCORE_KERNEL_ISA); out-of-range lengths clamp as the
// StableHLO forms do; hostile shapes at the handler are errors, not crashes;
// the default model's extend program equals the joint form's.
const test = require('tape');
const { Client } = require('../dist/runtime');
const {
  buildProgram,
  TensorType,
  itemsOverPrefix,
  parsePrefixAttentionTag,
  prefixAttentionTag,
} = require('../dist/hlo');
const { loadModel } = require('../dist/model');
const { uploadWeights } = require('../dist/device-weights');
const ref = require('./helpers/attention-reference');
const { closeRel } = ref;
const { runProgram } = require('./helpers/run-program');
const { prefixParams, program, makeInputs, reference, extendByForm } = require('./helpers/prefix-forms');
const { withIsa, withPath, f32Paths } = require('./helpers/kernel-path');

const TOL = 1e-5;
const TAGS = ['joint', 'ones_own', 'ffi'];
const FORMS = TAGS.map(parsePrefixAttentionTag);
let client;

const CASES = [
  {
    name: 'D=64 GQA 3, P=301 (2 key blocks) with 290 valid, 13 items of up to 11',
    P: 301,
    prefixLength: 290,
    N: 13,
    L: 11,
    itemLengths: [11, 1, 0, 7, 11, 3, 9, 11, 2, 5, 11, 10, 6],
    Hq: 9,
    Hkv: 3,
    D: 64,
  },
  {
    name: 'D=16, P=13 with 11 valid, N=3, L=4, GQA 3',
    P: 13,
    prefixLength: 11,
    N: 3,
    L: 4,
    itemLengths: [4, 2, 0],
    Hq: 6,
    Hkv: 2,
    D: 16,
  },
  {
    name: 'D=32, P=515 all valid (3 key blocks), N=5, L=7, MHA',
    P: 515,
    prefixLength: 515,
    N: 5,
    L: 7,
    itemLengths: [7, 6, 1, 7, 3],
    Hq: 2,
    Hkv: 2,
    D: 32,
  },
  {
    name: 'D=48, P=257, prefixLength 256 (a block exactly), N=37 (many units), L=3',
    P: 257,
    prefixLength: 256,
    N: 37,
    L: 3,
    itemLengths: Array.from({ length: 37 }, (_, i) => i % 4),
    Hq: 4,
    Hkv: 1,
    D: 48,
  },
  { name: 'D=5 (portable only), P=9, L=1', P: 9, prefixLength: 9, N: 1, L: 1, itemLengths: [1], Hq: 2, Hkv: 2, D: 5 },
  {
    name: 'D=8, prefix all padding (prefixLength 0)',
    P: 10,
    prefixLength: 0,
    N: 2,
    L: 3,
    itemLengths: [2, 3],
    Hq: 2,
    Hkv: 1,
    D: 8,
  },
  {
    name: 'D=16, out-of-range lengths clamp: prefixLength 1000 > P, item lengths -3 and 99',
    P: 21,
    prefixLength: 1000,
    N: 3,
    L: 5,
    itemLengths: [-3, 99, 4],
    Hq: 3,
    Hkv: 1,
    D: 16,
  },
  {
    name: 'D=16, negative prefixLength: no prefix key',
    P: 6,
    prefixLength: -5,
    N: 2,
    L: 3,
    itemLengths: [3, 2],
    Hq: 2,
    Hkv: 2,
    D: 16,
  },
  // Queries x 10: scores spread ten times wider than above, and rows whose largest score comes in
  // a later key block (the running shift moves). Much larger scales make f32's own rounding of the
  // scores (|q| |k| D ulps) the error, on every form alike.
  // Items over 32 tokens: own keys in key blocks, causal within the item, segments of the item's
  // tokens in separate work units (384 rows / group per segment).
  {
    name: 'long items: D=64 GQA 3, P=45 with 40 valid, N=3, L=33 (the first blocked length)',
    P: 45,
    prefixLength: 40,
    N: 3,
    L: 33,
    itemLengths: [33, 1, 20],
    Hq: 3,
    Hkv: 1,
    D: 64,
  },
  {
    name: 'long items: D=48, P=100 all valid, N=2, L=300 (2 own blocks, segments of 192 tokens), GQA 2',
    P: 100,
    prefixLength: 100,
    N: 2,
    L: 300,
    itemLengths: [300, 257],
    Hq: 4,
    Hkv: 2,
    D: 48,
  },
  {
    name: 'long items: D=40 (portable only), no prefix (prefixLength 0), N=1, L=530 with 529 valid, MHA',
    P: 3,
    prefixLength: 0,
    N: 1,
    L: 530,
    itemLengths: [529],
    Hq: 1,
    Hkv: 1,
    D: 40,
  },
  {
    name: 'long items: D=64, queries x 10, P=270 with 259 valid, N=2, L=600 (3 own blocks), GQA 9/3, clamped length 999',
    P: 270,
    prefixLength: 259,
    N: 2,
    L: 600,
    itemLengths: [999, 0],
    Hq: 9,
    Hkv: 3,
    D: 64,
    qScale: 10,
  },
  {
    name: 'D=64, queries x 10, P=700 with 611 valid, N=6, L=5',
    P: 700,
    prefixLength: 611,
    N: 6,
    L: 5,
    itemLengths: [5, 4, 1, 5, 2, 3],
    Hq: 6,
    Hkv: 2,
    D: 64,
    qScale: 10,
  },
];

/** The inputs of a case whose lengths may lie outside [0, P] and [0, L]: garbage where the clamped lengths end. */
function inputsFor(seed, c) {
  const clamp = (x, hi) => Math.min(Math.max(x, 0), hi);
  const inputs = makeInputs(seed, { ...c, prefixLength: clamp(c.prefixLength, c.P) });
  if (c.qScale) inputs[0] = inputs[0].map((x) => x * c.qScale);
  inputs[3] = Int32Array.from(c.itemLengths);
  inputs[6] = Int32Array.of(c.prefixLength);
  return {
    inputs,
    clamped: { ...c, prefixLength: clamp(c.prefixLength, c.P), itemLengths: c.itemLengths.map((x) => clamp(x, c.L)) },
  };
}

test('setup: CPU client with the kernel registered', async (t) => {
  client = await Client.create();
  t.equal(client.platformName, 'cpu');
  t.equal(client.prefixAttentionKernel, true, 'the CPU plugin registered pjrt_score_prefix_attention');
  t.equal(prefixAttentionTag(parsePrefixAttentionTag('ffi')), 'ffi', 'tag ffi round-trips');
  t.deepEqual(parsePrefixAttentionTag('ffi'), { kind: 'kernel' });
  t.match(
    program(CASES[1], [parsePrefixAttentionTag('ffi')]).text,
    /"stablehlo.custom_call".*call_target_name = "pjrt_score_prefix_attention", api_version = 4 : i32/,
  );
});

CASES.forEach((c, ci) => {
  test(`ffi equals the reference, joint and ones_own: ${c.name}`, async (t) => {
    const { inputs, clamped } = inputsFor(300 + ci, c);
    const prog = program(c, FORMS);
    const expect = reference(clamped, [
      ...inputs.slice(0, 3),
      Int32Array.from(clamped.itemLengths),
      inputs[4],
      inputs[5],
      Int32Array.of(clamped.prefixLength),
    ]);
    const w = c.Hq * c.D;
    const padRows = [];
    clamped.itemLengths.forEach((len, n) => {
      for (let j = len; j < c.L; j++) padRows.push(n * c.L + j);
    });
    const byPath = {};
    for (const { isa, path } of f32Paths(c.D)) {
      const [joint, onesOwn, ffi] = await withIsa(isa, () => runProgram(client, prog, inputs));
      byPath[path] = ffi;
      t.ok(ffi.every(Number.isFinite), `${path}: finite`);
      t.ok(
        ref.maxAbsDiff(ffi, expect) <= TOL,
        `${path}: ffi vs reference ${ref.maxAbsDiff(ffi, expect).toExponential(2)}`,
      );
      for (const [name, other] of [
        ['joint', joint],
        ['ones_own', onesOwn],
      ]) {
        const { ok, worst } = closeRel(ffi, other);
        t.ok(ok, `${path}: ffi vs ${name} within 1e-5 relative (worst ${worst.toFixed(3)} of the bound)`);
      }
      t.ok(
        padRows.every((r) => ffi.subarray(r * w, (r + 1) * w).every((v) => v === 0)),
        `${path}: padding rows are exactly 0 (${padRows.length})`,
      );
    }
    // Short items' own keys run the same scalar code on every path: a difference needs blocked keys.
    const paths = Object.keys(byPath);
    if ((clamped.prefixLength > 0 || c.L > 32) && clamped.itemLengths.some((x) => x > 0)) {
      for (const path of paths.slice(1))
        t.notOk(
          byPath[path].every((x, i) => Object.is(x, byPath.portable[i])),
          `${path} and portable ran different code (their results differ in some bit)`,
        );
    }
    t.pass(`paths run here for D=${c.D}: ${paths.join(', ')}`);
  });
});

test('ffi: masked prefix keys have weight exactly 0, and items never change each other', async (t) => {
  const c = CASES[1];
  const prog = program(c, [parsePrefixAttentionTag('ffi')]);
  const base = makeInputs(42, c);
  for (const portable of [false, true]) {
    const [a] = await withPath(portable, () => runProgram(client, prog, base));
    const other = base.map((x) => x.slice());
    const rng = ref.rng(7);
    for (let i = c.prefixLength * c.Hkv * c.D; i < c.P * c.Hkv * c.D; i++) {
      other[4][i] = (rng() - 0.5) * 1e6;
      other[5][i] = (rng() - 0.5) * 1e8;
    }
    const rows = c.L * c.Hq * c.D;
    for (let j = 0; j < rows; j++) other[0][rows + j] = rng() - 0.5;
    const [b] = await withPath(portable, () => runProgram(client, prog, other));
    const same = [0, 2].every((n) =>
      a.subarray(n * rows, (n + 1) * rows).every((x, j) => Object.is(x, b[n * rows + j])),
    );
    t.ok(
      same,
      `${portable ? 'portable' : 'default'} path: other masked-key garbage and item 1 changed, items 0 and 2 bit-identical`,
    );
    t.notOk(
      a.subarray(rows, 2 * rows).every((x, j) => Object.is(x, b[rows + j])),
      'item 1 itself changed',
    );
  }
});

// A custom call with the operands given: [name, type] pairs and the result type.
function hostileProgram(name, operands, result) {
  return buildProgram(`ffi_hostile_${name}`, (f) => {
    const params = operands.map(([n, type]) => f.param(type, n));
    return { out: f.customCall('pjrt_score_prefix_attention', params, [result])[0] };
  });
}

function fill(type) {
  const size = type.dims.reduce((a, b) => a * b, 1);
  return type.elementType === 's32'
    ? new Int32Array(size).fill(1)
    : Float32Array.from({ length: size }, (_, i) => Math.sin(i));
}

test('ffi calls the kernel for items of any length (own keys of items over 32 tokens go in key blocks)', (t) => {
  const ffi = [parsePrefixAttentionTag('ffi')];
  const shape = (L) => ({ P: 8, N: 2, L, Hq: 2, Hkv: 1, D: 8 });
  const calls = (L) =>
    (program(shape(L), ffi).text.match(/call_target_name = "pjrt_score_prefix_attention"/g) || []).length;
  for (const L of [32, 33, 4500]) t.equal(calls(L), 1, `L = ${L}: one custom call`);
  t.end();
});

test('ffi refuses a grouped call (a cross-request pass) and a windowed or capped one: it never runs another form in its place', (t) => {
  const c = { P: 8, N: 2, L: 3, Hq: 2, Hkv: 1, D: 8 };
  const ffi = parsePrefixAttentionTag('ffi');
  const grouped = () =>
    buildProgram('ffi_grouped', (f) => {
      const G = 2;
      const x = prefixParams(f, c, G);
      return { out: itemsOverPrefix(f, x, ffi) };
    });
  t.throws(grouped, /prefix attention 'ffi' \(the addon's kernel\) takes one query/, 'prefixLength s32[2]: refused');
  const windowed = () =>
    buildProgram('ffi_windowed', (f) => ({
      out: itemsOverPrefix(f, prefixParams(f, c), ffi, { window: f.constant([4], TensorType.s32([])) }),
    }));
  t.throws(
    windowed,
    /prefix attention 'ffi' \(the addon's kernel\) takes no sliding window or soft cap/,
    'a window: refused',
  );
  t.end();
});

test("cross-request passes: the form chooser gives them the CPU's StableHLO forms, and their names, keys and explain() say so", async (t) => {
  const { Scorer } = require('../dist/scoring/scorer');
  const scorer = await Scorer.load({ diskCache: false, batching: 'cross-request' });
  try {
    t.equal(scorer.prefixAttention.kind, 'kernel', 'one request: the prefix kernel');
    t.equal(scorer.causalAttention.kind, 'kernel', 'one request: the causal kernel');
    const one = { program: 'decoder_fused', groups: 1, prefix: 16, items: 2, itemLength: 8, labels: 2 };
    const two = { ...one, groups: 2 };
    const runner = scorer.engine.runner;
    t.deepEqual(
      runner.forms(two),
      { prefixAttention: { kind: 'rows' }, causalAttention: { kind: 'chunked', queryChunks: 4 } },
      'a pass of 2 queries runs ones_own and qc4',
    );
    t.ok(/-ffi-cffi$/.test(runner.key(one).model), `one query's key names the kernels (${runner.key(one).model})`);
    t.ok(/-ones_own-qc4$/.test(runner.key(two).model), `two queries' key names what runs (${runner.key(two).model})`);
    const text = runner.source(two)();
    // (The projections' matmul kernels take any rows: only the attention kernels take one query.)
    t.notOk(
      /pjrt_score_(prefix|causal|query_items)_attention/.test(text),
      'the grouped program calls no attention kernel',
    );
    t.ok(/decoder_fused_g2_p16_n2_l8_b2_ones_own_qc4/.test(text), 'and its name says ones_own and qc4');
    t.ok(
      /pjrt_score_query_items_attention/.test(runner.source(one)()),
      "one query's program calls the kernels (in one call: test/attention-query-items.test.js)",
    );
    const explained = scorer.explain({
      query: 'Is this a fruit? Answer:',
      items: [' an apple', ' a brick'],
      labelTokenIds: [9805, 787],
    });
    t.deepEqual(
      [explained.attention.prefixAttention, explained.attention.causalAttention],
      ['ffi', 'ffi'],
      'explain(): one request runs the kernels',
    );
    t.match(
      explained.attention.note,
      /a pass shared by several requests runs ones_own and qc4: the addon's kernels take one query/,
      'and the note says what shared passes run',
    );
  } finally {
    scorer.dispose();
  }
});

test('hostile shapes at the handler: a clear error, and the client goes on', async (t) => {
  const { f32, s32 } = TensorType;
  const good = () => [
    ['q', f32([2, 3, 4, 8])],
    ['k', f32([2, 3, 2, 8])],
    ['v', f32([2, 3, 2, 8])],
    ['len', s32([2])],
    ['pk', f32([5, 2, 8])],
    ['pv', f32([5, 2, 8])],
    ['plen', s32([])],
  ];
  const out = f32([2, 3, 4, 8]);
  const swap = (i, type) => good().map((x, j) => (j === i ? [x[0], type] : x));
  const cases = [
    [
      'kv heads not dividing query heads',
      swap(1, f32([2, 3, 3, 8])),
      out,
      /item k \[2, 3, 3, 8\] and v \[2, 3, 2, 8\] must be \[N, L, Hkv, D\]/,
    ],
    ['v differs from k', swap(2, f32([2, 3, 2, 7])), out, /must be \[N, L, Hkv, D\]/],
    [
      '3 query heads over 2 kv heads',
      [['q', f32([2, 3, 3, 8])], ...good().slice(1)],
      f32([2, 3, 3, 8]),
      /query heads \(3\) must be a multiple of kv heads \(2\)/,
    ],
    ['item lengths of the wrong count', swap(3, s32([3])), out, /item lengths \[3\] must be \[N\] = \[2\]/],
    ['item lengths as f32', swap(3, f32([2])), out, /item lengths must be s32/],
    [
      'prefix v of another length',
      swap(5, f32([4, 2, 8])),
      out,
      /prefix k \[5, 2, 8\] and v \[4, 2, 8\] must be \[P, Hkv, D\]/,
    ],
    ['prefix k of another head dim', swap(4, f32([5, 2, 4])), out, /must be \[P, Hkv, D\]/],
    ['prefix length of rank 1', swap(6, s32([1])), out, /prefix length must have rank 0, got 1/],
    ['item q of rank 3', [['q', f32([2, 3, 32])], ...good().slice(1)], out, /item q must have rank 4, got 3/],
    ['a result of other dims', good(), f32([2, 3, 4, 9]), /result \[2, 3, 4, 9\] must be \[N, L, Hq, D\]/],
    ['a result of rank 2', good(), f32([6, 32]), /result must have rank 4, got 2/],
    ['six operands', good().slice(0, 6), out, /expects 7 operands/],
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
          /pjrt_score_prefix_attention: /.test(err.message) && pattern.test(err.message),
          `${name}: ${err.message.split('\n')[0].slice(0, 200)}`,
        ),
    );
  }
  const prog = hostileProgram('good', good(), out);
  const [res] = await runProgram(
    client,
    prog,
    good().map(([, type]) => fill(type)),
  );
  t.ok(res.length === 2 * 3 * 4 * 8 && res.every(Number.isFinite), 'a well-formed call still runs on the same client');
});

test('default model: extend with ffi equals the joint extend within 5e-5 relative', async (t) => {
  const model = loadModel();
  const weights = await uploadWeights(client, model.config, model.weights);
  const probs = (x) => Float64Array.from(x, Math.exp);
  for (const portable of [false, true]) {
    const [joint, ffi] = await withPath(portable, () =>
      extendByForm(client, model, weights, ['joint', 'ffi'].map(parsePrefixAttentionTag), [5, 1, 3, 5, 0]),
    );
    t.ok(joint.logprobs.every(Number.isFinite) && ffi.logprobs.every(Number.isFinite), 'finite');
    t.notEqual(ffi.name, joint.name, `its own program name: ${ffi.name}`);
    const { ok, worst } = ref.closeProbabilities(probs(ffi.logprobs), probs(joint.logprobs));
    t.ok(
      ok,
      `${portable ? 'portable' : 'default'} path: label probabilities within 5e-5 relative of the joint form (worst ${worst.toFixed(3)} of the bound)`,
    );
  }
  weights.dispose();
});

test('a client without the kernels (PJRT_SCORE_KERNELS=off, as a plugin without the FFI extension): ffi is refused for prefix and causal attention, the default forms run', (t) => {
  const { spawnSync } = require('node:child_process');
  const script = `
    const { Client } = require('./dist/runtime');
    const { Scorer } = require('./dist/scoring/scorer');
    (async () => {
      const client = await Client.create();
      const out = { kernel: client.prefixAttentionKernel };
      client.dispose();
      await Scorer.load({ diskCache: false, prefixAttention: { kind: 'kernel' } }).then(
        (s) => { out.loaded = true; s.dispose(); },
        (e) => { out.refused = e instanceof TypeError ? e.message : 'not a TypeError: ' + e.message; });
      await Scorer.load({ diskCache: false, causalAttention: { kind: 'kernel' } }).then(
        (s) => { out.causalLoaded = true; s.dispose(); },
        (e) => { out.causalRefused = e instanceof TypeError ? e.message : 'not a TypeError: ' + e.message; });
      const scorer = await Scorer.load({ diskCache: false });
      out.defaultForm = scorer.prefixAttention;
      out.defaultCausal = scorer.causalAttention;
      const r = await scorer.score({ query: 'Is this a fruit? Answer:', items: [' an apple', ' a brick'], labelTokenIds: [9805, 787], algorithm: 'prefix' });
      out.finite = r.scores.flat().every(Number.isFinite);
      scorer.dispose();
      console.log(JSON.stringify(out));
    })();`;
  const run = spawnSync(process.execPath, ['-e', script], {
    cwd: require('node:path').join(__dirname, '..'),
    env: { ...process.env, PJRT_SCORE_KERNELS: 'off' },
    encoding: 'utf8',
    timeout: 300_000,
  });
  t.equal(run.status, 0, `child exit status 0${run.status ? `: ${run.stderr.slice(-2000)}` : ''}`);
  const out = JSON.parse(run.stdout.trim().split('\n').pop());
  t.equal(out.kernel, false, 'client.prefixAttentionKernel is false');
  t.notOk(out.loaded, 'Scorer.load with prefixAttention ffi does not load');
  t.match(
    out.refused,
    /prefixAttention 'ffi' .* needs a CPU plugin whose FFI extension registers handlers/,
    `refused: ${out.refused}`,
  );
  t.deepEqual(out.defaultForm, { kind: 'rows' }, 'the platform default (a StableHLO form, ones_own) is chosen');
  t.notOk(out.causalLoaded, 'Scorer.load with causalAttention ffi does not load');
  t.match(
    out.causalRefused,
    /causalAttention 'ffi' .* needs a CPU plugin whose FFI extension registers handlers/,
    `refused: ${out.causalRefused}`,
  );
  t.deepEqual(
    out.defaultCausal,
    { kind: 'chunked', queryChunks: 4 },
    'the causal default falls back to the StableHLO form (qc4)',
  );
  t.ok(out.finite, 'and scores');
  t.end();
});

test('teardown', (t) => {
  client.dispose();
  t.end();
});
