'use strict';
// Items-over-prefix attention in the rows form (`ones_own`: the denominator
// from the value GEMM, the own keys' max as the shift;
// lib/hlo/attention/prefix-rows.ts), on the real CPU plugin: against the
// float64 JS reference and the joint form (within 1e-5 relative) on odd
// sizes (padding keys, L = 1, GQA, empty items, prefix scores that overflow
// the own-max shift), padding rows exactly 0, masked keys with weight exactly
// 0 and items isolated bit for bit, the grouped (G-axis) call, and the
// default model's extend program and Scorer against the joint form.
const test = require('tape');
const { Client } = require('../dist/runtime');
const { buildProgram, itemsOverPrefix, parsePrefixAttentionTag, prefixAttentionTag } = require('../dist/hlo');
const ref = require('./helpers/attention-reference');
const { closeRel } = ref;
const { runProgram } = require('./helpers/run-program');
const {
  prefixParams,
  program,
  makeInputs,
  reference,
  assertExtendMatchesJoint,
  joinInputs,
} = require('./helpers/prefix-forms');

const TOL = 1e-5;
let client;

// The joint form first, then the rows form.
const TAGS = ['joint', 'ones_own'];
const FORMS = TAGS.map(parsePrefixAttentionTag);

const runAll = (prog, inputs) => runProgram(client, prog, inputs);

// Padding keys, L = 1, empty items, GQA, an empty prefix.
const CASES = [
  {
    name: 'N=3, P=13, 2 padding keys, GQA 3',
    P: 13,
    prefixLength: 11,
    N: 3,
    L: 4,
    itemLengths: [4, 2, 0],
    Hq: 6,
    Hkv: 2,
    D: 8,
  },
  { name: 'L=1, one item, P=9 all valid', P: 9, prefixLength: 9, N: 1, L: 1, itemLengths: [1], Hq: 2, Hkv: 2, D: 4 },
  { name: 'P=1, N=2', P: 1, prefixLength: 1, N: 2, L: 3, itemLengths: [3, 1], Hq: 3, Hkv: 1, D: 5 },
  {
    name: 'prefix all padding (prefixLength 0): items see only themselves',
    P: 10,
    prefixLength: 0,
    N: 2,
    L: 3,
    itemLengths: [2, 3],
    Hq: 2,
    Hkv: 1,
    D: 4,
  },
  {
    name: 'larger: P=70, 64 valid, 9 items of up to 6',
    P: 70,
    prefixLength: 64,
    N: 9,
    L: 6,
    itemLengths: [6, 1, 0, 5, 3, 6, 2, 4, 6],
    Hq: 9,
    Hkv: 3,
    D: 16,
  },
  // Prefix keys 400x larger: prefix scores exceed the own keys' max by more than 88, so exp overflows
  // under the own-max shift and those chunks are redone with the true max.
  {
    name: 'hot prefix keys (own-max shift overflows)',
    P: 7,
    prefixLength: 6,
    N: 3,
    L: 3,
    itemLengths: [3, 2, 3],
    Hq: 4,
    Hkv: 2,
    D: 8,
    hot: 400,
  },
];

/** The largest (prefix score - own keys' max) over the real rows of a case, in float64. */
function largestPrefixExcess(c, inputs) {
  const [itemQ, itemK, , itemLengths, prefixK] = inputs;
  const { N, L, Hq, Hkv, D, prefixLength } = c;
  const G = Hq / Hkv;
  const dot = (a, ai, b, bi) => {
    let x = 0;
    for (let e = 0; e < D; e++) x += a[ai + e] * b[bi + e];
    return x / Math.sqrt(D);
  };
  let worst = -Infinity;
  for (let n = 0; n < N; n++) {
    for (let j = 0; j < itemLengths[n]; j++) {
      for (let h = 0; h < Hq; h++) {
        const qi = ((n * L + j) * Hq + h) * D;
        const kv = Math.floor(h / G);
        let own = -Infinity;
        for (let jj = 0; jj <= j; jj++) own = Math.max(own, dot(itemQ, qi, itemK, ((n * L + jj) * Hkv + kv) * D));
        for (let p = 0; p < prefixLength; p++)
          worst = Math.max(worst, dot(itemQ, qi, prefixK, (p * Hkv + kv) * D) - own);
      }
    }
  }
  return worst;
}

test('setup: CPU client', async (t) => {
  client = await Client.create();
  t.equal(client.platformName, 'cpu');
});

test('the rows form: its tag round-trips, the removed variants are build errors', (t) => {
  for (const tag of TAGS) t.equal(prefixAttentionTag(parsePrefixAttentionTag(tag)), tag, `${tag} round-trips`);
  for (const tag of ['rc2w', 'ones', 'rsum', 'rdot_own', 'kb256w'])
    t.throws(() => parsePrefixAttentionTag(tag), /is not joint, ones_own/, `${tag}: not a form`);
  const c = { P: 4, N: 1, L: 2, Hq: 2, Hkv: 1, D: 4 };
  t.throws(
    () => program(c, [{ kind: 'rows', itemsPerChunk: 2, loop: 'while', denominator: 'values' }]),
    /'rows' takes no itemsPerChunk \(got 2\)/,
  );
  t.throws(() => program(c, [{ kind: 'rows', denominator: 'reduce' }]), /'rows' takes no denominator \(got "reduce"\)/);
  t.throws(() => program(c, [{ kind: 'rows', shift: 'max' }]), /'rows' takes no shift/);
  t.throws(
    () => program(c, [{ kind: 'blocked', keyBlock: 4, loop: 'while' }]),
    /prefix attention kind must be 'joint', 'rows', 'kernel' or 'cudnn', got "blocked"/,
  );
  t.doesNotThrow(
    () => program(c, [{ kind: 'rows', loop: 'unrolled', denominator: 'values', shift: 'own' }]),
    'the form spelled out in full (its one set of values) is taken',
  );
  t.end();
});

CASES.forEach((c, ci) => {
  test(`the rows form equals the reference and the joint form: ${c.name}`, async (t) => {
    const inputs = makeInputs(900 + ci, c);
    if (c.hot) {
      for (let i = 0; i < c.prefixLength * c.Hkv * c.D; i++) inputs[4][i] *= c.hot;
      const excess = largestPrefixExcess(c, inputs);
      t.ok(
        excess > 89,
        `a prefix score exceeds its row's own max by ${excess.toFixed(0)} (> 88: exp overflows under the own-max shift)`,
      );
    }
    const outs = await runAll(program(c, FORMS), inputs);
    const expect = reference(c, inputs);
    const joint = outs[0];
    t.ok(ref.maxAbsDiff(joint, expect) <= TOL, `joint vs reference: ${ref.maxAbsDiff(joint, expect).toExponential(2)}`);
    const w = c.Hq * c.D;
    const padRows = [];
    c.itemLengths.forEach((len, n) => {
      for (let j = len; j < c.L; j++) padRows.push(n * c.L + j);
    });
    TAGS.slice(1).forEach((tag, i) => {
      const out = outs[i + 1];
      t.ok(out.every(Number.isFinite), `${tag}: finite`);
      t.ok(
        ref.maxAbsDiff(out, expect) <= TOL * (c.hot ? c.hot : 1),
        `${tag} vs reference: ${ref.maxAbsDiff(out, expect).toExponential(2)}`,
      );
      const { ok, worst } = closeRel(out, joint);
      t.ok(ok, `${tag} vs joint within 1e-5 relative (worst ${worst.toFixed(3)} of the bound)`);
      t.ok(
        padRows.every((r) => out.subarray(r * w, (r + 1) * w).every((v) => v === 0)),
        `${tag}: padding rows are exactly 0 (${padRows.length})`,
      );
    });
  });
});

test('the rows form: masked prefix keys have weight exactly 0, and items never change each other', async (t) => {
  const c = CASES[0];
  const tags = TAGS.slice(1);
  const prog = program(c, tags.map(parsePrefixAttentionTag));
  const base = makeInputs(42, c);
  const a = await runAll(prog, base);
  const regarbage = base.map((x) => x.slice());
  const rng = ref.rng(7);
  for (let i = c.prefixLength * c.Hkv * c.D; i < c.P * c.Hkv * c.D; i++) {
    regarbage[4][i] = (rng() - 0.5) * 1e6;
    regarbage[5][i] = (rng() - 0.5) * 1e8;
  }
  const b = await runAll(prog, regarbage);
  tags.forEach((tag, i) =>
    t.ok(
      a[i].every((x, j) => Object.is(x, b[i][j])),
      `${tag}: other masked-key garbage, bit-identical`,
    ),
  );
  const changed = base.map((x) => x.slice());
  const { L, Hq, Hkv, D } = c;
  for (let j = 0; j < L * Hq * D; j++) changed[0][L * Hq * D + j] = rng() - 0.5;
  for (let j = 0; j < L * Hkv * D; j++) {
    changed[1][L * Hkv * D + j] = rng() - 0.5;
    changed[2][L * Hkv * D + j] = rng() - 0.5;
  }
  const d = await runAll(prog, changed);
  const rows = L * Hq * D;
  tags.forEach((tag, i) => {
    const same = [0, 2].every((n) =>
      a[i].subarray(n * rows, (n + 1) * rows).every((x, j) => Object.is(x, d[i][n * rows + j])),
    );
    t.ok(same, `${tag}: item 1 changed, items 0 and 2 bit-identical`);
    t.notOk(
      a[i].subarray(rows, 2 * rows).every((x, j) => Object.is(x, d[i][rows + j])),
      `${tag}: item 1 itself changed`,
    );
  });
});

test('the rows form, grouped (prefixLength s32[G]): each group equals the reference alone', async (t) => {
  const c = { P: 11, N: 3, L: 3, Hq: 4, Hkv: 2, D: 4 };
  const groups = [
    { ...c, prefixLength: 9, itemLengths: [3, 1, 2] },
    { ...c, prefixLength: 4, itemLengths: [0, 2, 3] },
  ];
  const inputs = groups.map((gc, i) => makeInputs(170 + i, gc));
  const joined = (k) => joinInputs(inputs, k);
  const G = groups.length;
  const tags = ['ones_own'];
  const prog = buildProgram('items_over_prefix_rows_grouped', (f) => {
    const x = prefixParams(f, c, G);
    return Object.fromEntries(tags.map((tag, i) => [`out${i}`, itemsOverPrefix(f, x, parsePrefixAttentionTag(tag))]));
  });
  const outs = await runAll(prog, [0, 1, 2, 3, 4, 5, 6].map(joined));
  const size = c.N * c.L * c.Hq * c.D;
  tags.forEach((tag, i) => {
    groups.forEach((gc, gi) => {
      const expect = reference(gc, inputs[gi]);
      const got = outs[i].subarray(gi * size, (gi + 1) * size);
      t.ok(
        ref.maxAbsDiff(got, expect) <= TOL,
        `${tag}, group ${gi}: vs reference ${ref.maxAbsDiff(got, expect).toExponential(2)}`,
      );
    });
  });
});

test('default model: extend in the rows form equals the joint extend within 5e-5 relative', async (t) => {
  // The CPU's StableHLO default (ones_own: the kernels off, grouped passes, windowed or capped models).
  await assertExtendMatchesJoint(t, client, ['ones_own'].map(parsePrefixAttentionTag), [5, 1, 3, 5, 0]);
});

test("Scorer: the rows form gives the joint form's scores within 5e-5 relative", async (t) => {
  const { Scorer } = require('../dist/scoring/scorer');
  await Scorer.load({ prefixAttention: { kind: 'rows', itemsPerChunk: 2, loop: 'while', denominator: 'values' } }).then(
    () => t.fail('a removed variant must be refused'),
    (error) =>
      t.ok(
        error instanceof TypeError && /'rows' takes no itemsPerChunk/.test(error.message),
        `refused: ${error.message}`,
      ),
  );
  const joint = await Scorer.load({ diskCache: false, prefixAttention: { kind: 'joint' } });
  const rows = await Scorer.load({ diskCache: false, prefixAttention: parsePrefixAttentionTag('ones_own') });
  const request = {
    query: 'Which of these is a fruit, and which is not? Say yes or no for each. Answer:',
    items: [' an apple', ' a brick', '', ' a pear, ripe', ' a stone'],
    labelTokenIds: [9805, 787],
  };
  // The prefix plan: the option reaches the programs (the packed plan's fused program takes the same form).
  for (const algorithm of ['prefix']) {
    const a = await joint.score({ ...request, algorithm });
    const b = await rows.score({ ...request, algorithm });
    t.equal(b.algorithm, algorithm);
    const { ok, worst } = ref.closeProbabilities(b.scores.flat(), a.scores.flat());
    t.ok(ok, `${algorithm}: ones_own within 5e-5 relative of joint (worst ${worst.toFixed(3)} of the bound)`);
  }
  joint.dispose();
  rows.dispose();
});

test('teardown', (t) => {
  client.dispose();
  t.end();
});
