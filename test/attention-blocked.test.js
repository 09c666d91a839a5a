'use strict';
// Key-blocked items-over-prefix attention (online softmax), in both loop
// forms, on the real CPU plugin: against the naive float64 reference and
// against the joint form (within 1e-5 relative), with odd sizes (a prefix
// that is not a whole number of blocks, padding keys, L = 1, GQA), padding
// rows and masked keys exactly as the joint form treats them, and item
// isolation bit for bit. Then the extend program of the default model with
// blocked attention against the joint one.
const test = require('tape');
const { Client } = require('../dist/runtime');
const { buildProgram, TensorType, itemsOverPrefix } = require('../dist/hlo');
const ref = require('./helpers/attention-reference');
const { closeRel } = ref;
const { runProgram } = require('./helpers/run-program');
const { program, makeInputs, reference, assertExtendMatchesJoint, joinInputs } = require('./helpers/prefix-forms');

const TOL = 1e-5;
let client;

const FORMS = [
  { kind: 'joint' },
  { kind: 'blocked', keyBlock: 4, loop: 'while' },
  { kind: 'blocked', keyBlock: 4, loop: 'unrolled' },
  { kind: 'blocked', keyBlock: 7, loop: 'while' },
  { kind: 'blocked', keyBlock: 64, loop: 'while' },
];

const runAll = (prog, inputs) => runProgram(client, prog, inputs);

// P not a multiple of 4 or 7, padding keys, L = 1, empty items, GQA, an empty prefix.
const CASES = [
  { name: 'P=13 (not whole blocks), 2 padding keys, GQA 3', P: 13, prefixLength: 11, N: 3, L: 4, itemLengths: [4, 2, 0], Hq: 6, Hkv: 2, D: 8 },
  { name: 'L=1, one item, P=9 all valid', P: 9, prefixLength: 9, N: 1, L: 1, itemLengths: [1], Hq: 2, Hkv: 2, D: 4 },
  { name: 'P=1', P: 1, prefixLength: 1, N: 2, L: 3, itemLengths: [3, 1], Hq: 3, Hkv: 1, D: 5 },
  { name: 'prefix all padding (prefixLength 0): items see only themselves', P: 10, prefixLength: 0, N: 2, L: 3, itemLengths: [2, 3], Hq: 2, Hkv: 1, D: 4 },
  { name: 'larger: P=70, 64 valid, 9 items of up to 6', P: 70, prefixLength: 64, N: 9, L: 6, itemLengths: [6, 1, 0, 5, 3, 6, 2, 4, 6], Hq: 9, Hkv: 3, D: 16 },
];

test('setup: CPU client', async (t) => {
  client = await Client.create();
  t.equal(client.platformName, 'cpu');
});

CASES.forEach((c, ci) => {
  test(`blocked equals the reference and the joint form: ${c.name}`, async (t) => {
    const inputs = makeInputs(500 + ci, c);
    const outs = await runAll(program(c, FORMS), inputs);
    const expect = reference(c, inputs);
    const joint = outs[0];
    t.ok(ref.maxAbsDiff(joint, expect) <= TOL, `joint vs reference: ${ref.maxAbsDiff(joint, expect).toExponential(2)}`);
    FORMS.slice(1).forEach((form, i) => {
      const out = outs[i + 1];
      const label = `Kb=${form.keyBlock} ${form.loop}`;
      t.ok(out.every(Number.isFinite), `${label}: finite`);
      t.ok(ref.maxAbsDiff(out, expect) <= TOL, `${label} vs reference: ${ref.maxAbsDiff(out, expect).toExponential(2)}`);
      const { ok, worst } = closeRel(out, joint);
      t.ok(ok, `${label} vs joint within 1e-5 relative (worst ${worst.toFixed(3)} of the bound)`);
      const w = c.Hq * c.D;
      const padRows = [];
      c.itemLengths.forEach((len, n) => {
        for (let j = len; j < c.L; j++) padRows.push(n * c.L + j);
      });
      t.ok(padRows.every((r) => out.subarray(r * w, (r + 1) * w).every((v) => v === 0)), `${label}: padding rows are exactly 0 (${padRows.length})`);
    });
  });
});

test('blocked: masked prefix keys have weight exactly 0, and items never change each other', async (t) => {
  const c = CASES[0];
  const forms = FORMS.slice(1);
  const prog = program(c, forms);
  const base = makeInputs(42, c);
  const a = await runAll(prog, base);
  // Other garbage in the masked prefix slots: bit-identical outputs.
  const regarbage = base.map((x) => x.slice());
  const rng = ref.rng(7);
  for (let i = c.prefixLength * c.Hkv * c.D; i < c.P * c.Hkv * c.D; i++) {
    regarbage[4][i] = (rng() - 0.5) * 1e6;
    regarbage[5][i] = (rng() - 0.5) * 1e8;
  }
  const b = await runAll(prog, regarbage);
  forms.forEach((form, i) => t.ok(a[i].every((x, j) => Object.is(x, b[i][j])), `Kb=${form.keyBlock} ${form.loop}: other masked-key garbage, bit-identical`));
  // Item 1 changed: items 0 and 2 bit-identical.
  const changed = base.map((x) => x.slice());
  const { L, Hq, Hkv, D } = c;
  for (let j = 0; j < L * Hq * D; j++) changed[0][L * Hq * D + j] = rng() - 0.5;
  for (let j = 0; j < L * Hkv * D; j++) {
    changed[1][L * Hkv * D + j] = rng() - 0.5;
    changed[2][L * Hkv * D + j] = rng() - 0.5;
  }
  const d = await runAll(prog, changed);
  const rows = L * Hq * D;
  forms.forEach((form, i) => {
    const same = [0, 2].every((n) => a[i].subarray(n * rows, (n + 1) * rows).every((x, j) => Object.is(x, d[i][n * rows + j])));
    t.ok(same, `Kb=${form.keyBlock} ${form.loop}: item 1 changed, items 0 and 2 bit-identical`);
    t.notOk(a[i].subarray(rows, 2 * rows).every((x, j) => Object.is(x, d[i][rows + j])), 'item 1 itself changed');
  });
});

test('blocked, grouped (prefixLength s32[G]): each group equals the reference alone', async (t) => {
  const c = { P: 11, N: 2, L: 3, Hq: 4, Hkv: 2, D: 4 };
  const groups = [
    { ...c, prefixLength: 9, itemLengths: [3, 1] },
    { ...c, prefixLength: 4, itemLengths: [0, 2] },
  ];
  const inputs = groups.map((gc, i) => makeInputs(70 + i, gc));
  const joined = (k) => joinInputs(inputs, k);
  const G = groups.length;
  const forms = [{ kind: 'blocked', keyBlock: 4, loop: 'while' }, { kind: 'blocked', keyBlock: 4, loop: 'unrolled' }];
  const prog = buildProgram('items_over_prefix_grouped', (f) => {
    const x = {
      itemQ: f.param(TensorType.f32([G, c.N, c.L, c.Hq, c.D]), 'itemQ'),
      itemK: f.param(TensorType.f32([G, c.N, c.L, c.Hkv, c.D]), 'itemK'),
      itemV: f.param(TensorType.f32([G, c.N, c.L, c.Hkv, c.D]), 'itemV'),
      itemLengths: f.param(TensorType.s32([G, c.N]), 'itemLengths'),
      prefixK: f.param(TensorType.f32([G, c.P, c.Hkv, c.D]), 'prefixK'),
      prefixV: f.param(TensorType.f32([G, c.P, c.Hkv, c.D]), 'prefixV'),
      prefixLength: f.param(TensorType.s32([G]), 'prefixLength'),
    };
    return Object.fromEntries(forms.map((form, i) => [`out${i}`, itemsOverPrefix(f, x, form)]));
  });
  const outs = await runAll(prog, [0, 1, 2, 3, 4, 5, 6].map(joined));
  const size = c.N * c.L * c.Hq * c.D;
  forms.forEach((form, i) => {
    groups.forEach((gc, gi) => {
      const expect = reference(gc, inputs[gi]);
      const got = outs[i].subarray(gi * size, (gi + 1) * size);
      t.ok(ref.maxAbsDiff(got, expect) <= TOL, `Kb=4 ${form.loop}, group ${gi}: vs reference ${ref.maxAbsDiff(got, expect).toExponential(2)}`);
    });
  });
});

test('blocked: a bad key block is a build error', (t) => {
  const c = { P: 4, N: 1, L: 2, Hq: 2, Hkv: 1, D: 4 };
  t.throws(() => program(c, [{ kind: 'blocked', keyBlock: 0, loop: 'while' }]), /keyBlock must be a positive integer, got 0/);
  t.throws(() => program(c, [{ kind: 'blocked', keyBlock: 4, loop: 'sometimes' }]), /loop must be 'while' or 'unrolled'/);
  t.throws(() => program(c, [{ kind: 'fast' }]), /kind must be 'joint', 'blocked', 'rows', 'kernel' or 'cudnn'/);
  t.end();
});

test('default model: extend with blocked prefix attention equals the joint extend within 5e-5 relative', async (t) => {
  // The while loop on the real model (the unrolled loop is checked against the reference above).
  await assertExtendMatchesJoint(t, client, [{ kind: 'blocked', keyBlock: 16, loop: 'while' }], [5, 1, 3, 5]);
});

test('Scorer: prefixAttention option is checked, and blocked scores equal the platform default within 5e-5 relative', async (t) => {
  const { Scorer } = require('../dist/scoring/scorer');
  const { defaultPrefixAttention } = require('../dist/scoring/platform');
  await Scorer.load({ prefixAttention: { kind: 'blocked', keyBlock: 0, loop: 'while' } }).then(
    () => t.fail('a bad key block must be refused'),
    (error) => t.ok(error instanceof TypeError && /keyBlock must be a positive integer, got 0/.test(error.message), `refused: ${error.message}`),
  );
  const platform = await Scorer.load({ diskCache: false });
  const blocked = await Scorer.load({ diskCache: false, prefixAttention: { kind: 'blocked', keyBlock: 8, loop: 'while' } });
  t.deepEqual(platform.prefixAttention, defaultPrefixAttention(platform.platform, { kernel: platform.client.prefixAttentionKernel, cudnn: false }), 'default: the platform fact (the kernel where registered)');
  t.deepEqual(blocked.prefixAttention, { kind: 'blocked', keyBlock: 8, loop: 'while' }, 'the option wins');
  const request = { query: 'Which of these is a fruit, and which is not? Say yes or no for each. Answer:', items: [' an apple', ' a brick', '', ' a pear, ripe'], labelTokenIds: [9805, 787] };
  // The prefix plan: the option reaches the programs (the packed plan's fused program takes the same form).
  for (const algorithm of ['prefix']) {
    const a = await platform.score({ ...request, algorithm });
    const b = await blocked.score({ ...request, algorithm });
    t.equal(b.algorithm, algorithm);
    const { ok, worst } = ref.closeProbabilities(b.scores.flat(), a.scores.flat());
    t.ok(ok, `${algorithm}: blocked within 5e-5 relative of ${platform.prefixAttention.kind} (worst ${worst.toFixed(3)} of the bound)`);
  }
  platform.dispose();
  blocked.dispose();
});

test('teardown', (t) => {
  client.dispose();
  t.end();
});
