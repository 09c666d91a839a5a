'use strict';
// Masked attention on the real CPU plugin: dense and factored layouts against
// the naive JS reference, against each other, padding invariance and item
// isolation.
const test = require('tape');
const { Client } = require('../dist/runtime');
const { programs } = require('../dist/hlo');
const ref = require('./helpers/attention-reference');

const TOL = 1e-5;
let client;
const executables = new Map();

async function run(program, inputs) {
  let exe = executables.get(program.hash);
  if (!exe) {
    exe = await client.compile(program.text);
    executables.set(program.hash, exe);
  }
  const buffers = await Promise.all(program.inputs.map((spec, i) => client.upload(inputs[i], spec.dims, spec.dtype)));
  const outs = await exe.execute(buffers);
  const host = await Promise.all(outs.map((o) => o.toHost()));
  for (const b of [...buffers, ...outs]) b.dispose();
  return host;
}

/**
 * Real data of one request: per token rows of q [Hq*D], k and v [Hkv*D],
 * for the query and for each item.
 */
function makeRequest(seed, { queryLength, itemLengths, Hq, Hkv, D }) {
  const next = ref.rng(seed);
  const token = () => ({
    q: ref.randomF32(next, Hq * D),
    k: ref.randomF32(next, Hkv * D),
    v: ref.randomF32(next, Hkv * D),
  });
  return {
    Hq,
    Hkv,
    D,
    query: Array.from({ length: queryLength }, token),
    items: itemLengths.map((len) => Array.from({ length: len }, token)),
  };
}

/** Garbage rows for padding slots, so a test fails if padding leaks into a real output. */
function garbage(next, n) {
  return ref.randomF32(next, n, 3);
}

/**
 * Packs a request into the dense layout of T tokens: query, then the items in
 * order, with `gapAfterItem` padding tokens after each item when given, then
 * padding. Returns inputs and, for every real token, its dense index.
 */
function packDense(req, T, { seed = 99, gapAfterItem = 0 } = {}) {
  const { Hq, Hkv, D } = req;
  const next = ref.rng(seed);
  const q = garbage(next, T * Hq * D);
  const k = garbage(next, T * Hkv * D);
  const v = garbage(next, T * Hkv * D);
  const segmentIds = new Int32Array(T).fill(-1);
  const queryIndex = [];
  const itemIndex = req.items.map(() => []);
  let t = 0;
  const put = (tok, seg) => {
    if (t >= T) throw new Error(`dense bucket ${T} too small`);
    q.set(tok.q, t * Hq * D);
    k.set(tok.k, t * Hkv * D);
    v.set(tok.v, t * Hkv * D);
    segmentIds[t] = seg;
    return t++;
  };
  req.query.forEach((tok) => queryIndex.push(put(tok, 0)));
  req.items.forEach((item, i) => {
    item.forEach((tok) => itemIndex[i].push(put(tok, i + 1)));
    t += gapAfterItem;
  });
  return { inputs: [q, k, v, segmentIds], T, queryIndex, itemIndex };
}

/** Packs a request into the factored layout with buckets P, N, L. */
function packFactored(req, P, N, L, { seed = 77 } = {}) {
  const { Hq, Hkv, D } = req;
  if (req.query.length > P || req.items.length > N || req.items.some((it) => it.length > L))
    throw new Error('factored bucket too small');
  const next = ref.rng(seed);
  const queryQ = garbage(next, P * Hq * D);
  const queryK = garbage(next, P * Hkv * D);
  const queryV = garbage(next, P * Hkv * D);
  const itemQ = garbage(next, N * L * Hq * D);
  const itemK = garbage(next, N * L * Hkv * D);
  const itemV = garbage(next, N * L * Hkv * D);
  const itemLengths = new Int32Array(N);
  req.query.forEach((tok, i) => {
    queryQ.set(tok.q, i * Hq * D);
    queryK.set(tok.k, i * Hkv * D);
    queryV.set(tok.v, i * Hkv * D);
  });
  req.items.forEach((item, n) => {
    itemLengths[n] = item.length;
    item.forEach((tok, j) => {
      itemQ.set(tok.q, (n * L + j) * Hq * D);
      itemK.set(tok.k, (n * L + j) * Hkv * D);
      itemV.set(tok.v, (n * L + j) * Hkv * D);
    });
  });
  const queryLength = new Int32Array([req.query.length]);
  return { inputs: [queryQ, queryK, queryV, queryLength, itemQ, itemK, itemV, itemLengths], P, N, L };
}

async function runDense(req, packed, scale) {
  const program = programs.maskedAttention({
    layout: 'dense',
    tokens: packed.T,
    queryHeads: req.Hq,
    kvHeads: req.Hkv,
    headDim: req.D,
    scale,
  });
  const [out] = await run(program, packed.inputs);
  return out;
}

async function runFactored(req, packed, scale) {
  const program = programs.maskedAttention({
    layout: 'factored',
    queryTokens: packed.P,
    itemCount: packed.N,
    itemTokens: packed.L,
    queryHeads: req.Hq,
    kvHeads: req.Hkv,
    headDim: req.D,
    scale,
  });
  const [queryOut, itemOut] = await run(program, packed.inputs);
  return { queryOut, itemOut };
}

/** The output rows of every real token, in request order: [query..., item0..., item1...]. */
function realRowsDense(out, req, packed) {
  const w = req.Hq * req.D;
  const rows = [];
  for (const t of [...packed.queryIndex, ...packed.itemIndex.flat()]) rows.push(out.subarray(t * w, (t + 1) * w));
  return rows;
}

function realRowsFactored(out, req, packed) {
  const w = req.Hq * req.D;
  const rows = [];
  req.query.forEach((_, i) => rows.push(out.queryOut.subarray(i * w, (i + 1) * w)));
  req.items.forEach((item, n) =>
    item.forEach((_, j) => rows.push(out.itemOut.subarray((n * packed.L + j) * w, (n * packed.L + j + 1) * w))),
  );
  return rows;
}

function rowsMaxDiff(a, b) {
  let m = 0;
  a.forEach((r, i) => {
    m = Math.max(m, ref.maxAbsDiff(r, b[i]));
  });
  return m;
}

/**
 * Across different compiled programs (other buckets, other positions of a row
 * in the sequence) XLA may order a reduction differently, and how it does so
 * depends on the CPU: results then agree within f32 rounding, not bit for bit
 * (docs/design.md "Batch invariance"). This is the bound, per element: 1e-6 absolute plus 1e-5 relative.
 */
const CROSS_PROGRAM_ABS = 1e-6;
const CROSS_PROGRAM_REL = 1e-5;
function rowsClose(a, b) {
  return (
    a.length === b.length &&
    a.every(
      (r, i) =>
        r.length === b[i].length &&
        r.every((x, j) => Math.abs(x - b[i][j]) <= CROSS_PROGRAM_ABS + CROSS_PROGRAM_REL * Math.abs(b[i][j])),
    )
  );
}

function rowsIdentical(a, b) {
  return (
    a.length === b.length && a.every((r, i) => r.length === b[i].length && r.every((x, j) => Object.is(x, b[i][j])))
  );
}

/** Item n's rows (dense or factored row list) from a request shape. */
function itemRows(rows, req, n) {
  let start = req.query.length;
  for (let i = 0; i < n; i++) start += req.items[i].length;
  return rows.slice(start, start + req.items[n].length);
}

function allFinite(a) {
  return a.every((x) => Number.isFinite(x));
}

function denseRefInputs(req, packed, scale) {
  const [q, k, v, segmentIds] = packed.inputs;
  return { q, k, v, segmentIds, T: packed.T, Hq: req.Hq, Hkv: req.Hkv, D: req.D, scale };
}

function factoredRefInputs(req, packed, scale) {
  const [queryQ, queryK, queryV, queryLength, itemQ, itemK, itemV, itemLengths] = packed.inputs;
  return {
    queryQ,
    queryK,
    queryV,
    queryLength: queryLength[0],
    itemQ,
    itemK,
    itemV,
    itemLengths,
    P: packed.P,
    N: packed.N,
    L: packed.L,
    Hq: req.Hq,
    Hkv: req.Hkv,
    D: req.D,
    scale,
  };
}

// queryLength, itemLengths, heads, head dim, and buckets (T dense; P, N, L factored).
const CASES = [
  { name: 'no items', queryLength: 6, itemLengths: [], Hq: 2, Hkv: 2, D: 8, T: 8, P: 8, N: 1, L: 2 },
  { name: 'one item, GQA 3', queryLength: 5, itemLengths: [4], Hq: 3, Hkv: 1, D: 8, T: 12, P: 6, N: 1, L: 4 },
  {
    name: 'many unequal items with empty ones, GQA 3',
    queryLength: 7,
    itemLengths: [3, 0, 5, 1, 4, 0, 2],
    Hq: 6,
    Hkv: 2,
    D: 8,
    T: 24,
    P: 8,
    N: 8,
    L: 5,
  },
  {
    name: 'odd sizes, not buckets',
    queryLength: 3,
    itemLengths: [2, 7, 1],
    Hq: 3,
    Hkv: 3,
    D: 5,
    T: 19,
    P: 5,
    N: 4,
    L: 9,
  },
  {
    name: 'one-token query, all items one or two tokens',
    queryLength: 1,
    itemLengths: [1, 1, 2],
    Hq: 6,
    Hkv: 2,
    D: 4,
    T: 5,
    P: 1,
    N: 3,
    L: 2,
  },
  { name: 'all items empty', queryLength: 4, itemLengths: [0, 0], Hq: 2, Hkv: 1, D: 4, T: 6, P: 4, N: 2, L: 3 },
  {
    name: 'empty query (items see only themselves)',
    queryLength: 0,
    itemLengths: [2, 3],
    Hq: 2,
    Hkv: 2,
    D: 4,
    T: 7,
    P: 2,
    N: 2,
    L: 3,
  },
  {
    name: 'larger: 12 items',
    queryLength: 33,
    itemLengths: [12, 3, 0, 9, 11, 1, 7, 5, 12, 2, 8, 6],
    Hq: 4,
    Hkv: 4,
    D: 16,
    T: 130,
    P: 40,
    N: 12,
    L: 12,
  },
];

test('setup: CPU client', async (t) => {
  client = await Client.create();
  t.equal(client.platformName, 'cpu');
});

CASES.forEach((c, ci) => {
  test(`dense and factored equal the reference: ${c.name}`, async (t) => {
    const req = makeRequest(1000 + ci, c);
    const dense = packDense(req, c.T);
    const fac = packFactored(req, c.P, c.N, c.L);

    const denseOut = await runDense(req, dense);
    const denseRef = ref.denseAttention(denseRefInputs(req, dense));
    t.ok(
      ref.maxAbsDiff(denseOut, denseRef) <= TOL,
      `dense vs reference (all rows, padding included): ${ref.maxAbsDiff(denseOut, denseRef).toExponential(2)}`,
    );
    t.ok(allFinite(denseOut), 'dense output finite');
    const padRows = [];
    for (let i = 0; i < c.T; i++) if (dense.inputs[3][i] === -1) padRows.push(i);
    const w = c.Hq * c.D;
    t.ok(
      padRows.every((r) => denseOut.subarray(r * w, (r + 1) * w).every((x) => x === 0)),
      `dense padding rows are zero (${padRows.length} rows)`,
    );

    const facOut = await runFactored(req, fac);
    const facRef = ref.factoredAttention(factoredRefInputs(req, fac));
    t.ok(
      ref.maxAbsDiff(facOut.queryOut, facRef.queryOut) <= TOL,
      `factored query vs reference: ${ref.maxAbsDiff(facOut.queryOut, facRef.queryOut).toExponential(2)}`,
    );
    t.ok(
      ref.maxAbsDiff(facOut.itemOut, facRef.itemOut) <= TOL,
      `factored items vs reference: ${ref.maxAbsDiff(facOut.itemOut, facRef.itemOut).toExponential(2)}`,
    );
    t.ok(allFinite(facOut.queryOut) && allFinite(facOut.itemOut), 'factored outputs finite');

    const a = realRowsDense(denseOut, req, dense);
    const b = realRowsFactored(facOut, req, fac);
    t.ok(rowsMaxDiff(a, b) <= TOL, `dense == factored on real tokens: ${rowsMaxDiff(a, b).toExponential(2)}`);
    // The two references agree too (they were written from the two descriptions).
    const ra = realRowsDense(denseRef, req, dense);
    const rb = realRowsFactored(facRef, req, fac);
    t.ok(rowsMaxDiff(ra, rb) <= 1e-12, 'dense and factored references agree');
  });
});

test('dense layout: padding between items and a custom scale', async (t) => {
  const c = { queryLength: 4, itemLengths: [3, 2, 4], Hq: 4, Hkv: 2, D: 8 };
  const req = makeRequest(7, c);
  const dense = packDense(req, 20, { gapAfterItem: 2 });
  const scale = 0.3;
  const out = await runDense(req, dense, scale);
  const expect = ref.denseAttention(denseRefInputs(req, dense, scale));
  t.ok(ref.maxAbsDiff(out, expect) <= TOL, `vs reference: ${ref.maxAbsDiff(out, expect).toExponential(2)}`);
  const fac = packFactored(req, 4, 3, 4);
  const facOut = await runFactored(req, fac, scale);
  t.ok(
    rowsMaxDiff(realRowsDense(out, req, dense), realRowsFactored(facOut, req, fac)) <= TOL,
    'equals factored with the same scale',
  );
});

test('factored layout with zero items (N = 0)', async (t) => {
  const c = { queryLength: 5, itemLengths: [], Hq: 2, Hkv: 1, D: 4 };
  const req = makeRequest(8, c);
  const fac = packFactored(req, 6, 0, 3);
  const out = await runFactored(req, fac);
  const expect = ref.factoredAttention(factoredRefInputs(req, fac));
  t.equal(out.itemOut.length, 0, 'empty item output');
  t.ok(ref.maxAbsDiff(out.queryOut, expect.queryOut) <= TOL, 'query part vs reference');
});

test('padding invariance: the same request in two buckets agrees within f32 rounding; in one bucket, bit for bit', async (t) => {
  const c = { queryLength: 9, itemLengths: [4, 1, 0, 6, 3], Hq: 6, Hkv: 2, D: 8 };
  const req = makeRequest(21, c);
  const tight = sum(c.itemLengths) + c.queryLength;
  const d1 = realRowsDense(
    await runDense(req, packDense(req, tight, { seed: 1 })),
    req,
    packDense(req, tight, { seed: 1 }),
  );
  const big = packDense(req, 64, { seed: 2 });
  const d2 = realRowsDense(await runDense(req, big), req, big);
  t.ok(rowsClose(d1, d2), `dense T=26 vs T=64: within rounding (max |diff| ${rowsMaxDiff(d1, d2).toExponential(2)})`);

  const f1p = packFactored(req, 9, 5, 6, { seed: 3 });
  const f2p = packFactored(req, 16, 8, 8, { seed: 4 });
  const f1 = realRowsFactored(await runFactored(req, f1p), req, f1p);
  const f2 = realRowsFactored(await runFactored(req, f2p), req, f2p);
  t.ok(
    rowsClose(f1, f2),
    `factored (P,N,L)=(9,5,6) vs (16,8,8): within rounding (max |diff| ${rowsMaxDiff(f1, f2).toExponential(2)})`,
  );
  // Same bucket, different garbage in the padding: must be bit-identical.
  const f3p = packFactored(req, 16, 8, 8, { seed: 5 });
  const f3 = realRowsFactored(await runFactored(req, f3p), req, f3p);
  t.ok(rowsIdentical(f2, f3), 'factored: other padding garbage, same bucket: bit-identical');
  const d3p = packDense(req, 64, { seed: 6 });
  t.ok(
    rowsIdentical(d2, realRowsDense(await runDense(req, d3p), req, d3p)),
    'dense: other padding garbage, same bucket: bit-identical',
  );
});

function sum(xs) {
  return xs.reduce((a, b) => a + b, 0);
}

test('isolation: changing one item never changes another item', async (t) => {
  const c = { queryLength: 6, itemLengths: [3, 5, 2, 4], Hq: 6, Hkv: 2, D: 8 };
  const base = makeRequest(31, c);
  const changed = makeRequest(31, c);
  const target = 1;
  const next = ref.rng(555);
  changed.items[target] = changed.items[target].map(() => ({
    q: ref.randomF32(next, c.Hq * c.D),
    k: ref.randomF32(next, c.Hkv * c.D),
    v: ref.randomF32(next, c.Hkv * c.D),
  }));
  const shorter = makeRequest(31, c);
  shorter.items[target] = shorter.items[target].slice(0, 2);
  const longerLast = makeRequest(31, { ...c, itemLengths: [3, 5, 2, 6] });
  longerLast.items = base.items.slice(0, 3).concat([longerLast.items[3]]);
  longerLast.items[3] = base.items[3].concat(longerLast.items[3].slice(4));

  const others = (rows, req) => [0, 1, 2, 3].filter((n) => n !== target).flatMap((n) => itemRows(rows, req, n));
  const T = 24;
  const dense = async (req) => realRowsDense(await runDense(req, packDense(req, T)), req, packDense(req, T));
  const fac = async (req) =>
    realRowsFactored(await runFactored(req, packFactored(req, 6, 4, 6)), req, packFactored(req, 6, 4, 6));

  const d0 = await dense(base);
  const f0 = await fac(base);
  const d1 = await dense(changed);
  const f1 = await fac(changed);
  t.notOk(rowsIdentical(itemRows(d1, changed, target), itemRows(d0, base, target)), 'the changed item itself changed');
  t.ok(rowsIdentical(others(d0, base), others(d1, changed)), 'dense: values of item 1 changed, others bit-identical');
  t.ok(
    rowsIdentical(others(f0, base), others(f1, changed)),
    'factored: values of item 1 changed, others bit-identical',
  );
  t.ok(
    rowsIdentical(
      itemRows(d0, base, 0).concat(base.query.map((_, i) => d0[i])),
      itemRows(d1, changed, 0).concat(changed.query.map((_, i) => d1[i])),
    ),
    'dense: query rows too',
  );

  const f2 = await fac(shorter);
  t.ok(
    rowsIdentical(others(f0, base), others(f2, shorter)),
    'factored: item 1 shortened 5 -> 2 in the same bucket, others bit-identical',
  );
  const d2 = await dense(shorter);
  // In the dense layout a shorter item moves the items after it to other key positions: within rounding.
  t.ok(
    rowsClose(others(d0, base), others(d2, shorter)),
    `dense: item 1 shortened 5 -> 2, others (moved in the sequence) within rounding (max |diff| ${rowsMaxDiff(others(d0, base), others(d2, shorter)).toExponential(2)})`,
  );
  t.ok(
    rowsIdentical(itemRows(d0, base, 0), itemRows(d2, shorter, 0)),
    'dense: item 0 (before the change, same positions) bit-identical',
  );
  const d3 = await dense(longerLast);
  t.ok(
    rowsIdentical(
      [0, 1, 2].flatMap((n) => itemRows(d0, base, n)),
      [0, 1, 2].flatMap((n) => itemRows(d3, longerLast, n)),
    ),
    'dense: last item lengthened 4 -> 6, others bit-identical',
  );
  t.ok(
    rowsIdentical(itemRows(d0, base, 3), itemRows(d3, longerLast, 3).slice(0, 4)),
    "dense: causal: the last item's first 4 tokens are unchanged too",
  );
});

test('the attention cores run inside a loop body (as in a layer loop)', async (t) => {
  const { buildProgram, TensorType, maskedAttentionDense, maskedAttentionFactored } = require('../dist/hlo');
  const c = { queryLength: 4, itemLengths: [2, 3], Hq: 2, Hkv: 1, D: 4 };
  const req = makeRequest(41, c);
  const dense = packDense(req, 10);
  const fac = packFactored(req, 4, 2, 3);
  const [T, P, N, L] = [10, 4, 2, 3];
  // Two iterations of q <- attention(q, k, v): the second reads the first's output.
  const program = buildProgram('attention_in_loop', (f) => {
    const q = f.param(TensorType.f32([T, 2, 4]), 'q');
    const k = f.param(TensorType.f32([T, 1, 4]), 'k');
    const v = f.param(TensorType.f32([T, 1, 4]), 'v');
    const seg = f.param(TensorType.s32([T]), 'segmentIds');
    const fq = {
      queryQ: f.param(TensorType.f32([P, 2, 4]), 'queryQ'),
      queryK: f.param(TensorType.f32([P, 1, 4]), 'queryK'),
      queryV: f.param(TensorType.f32([P, 1, 4]), 'queryV'),
      queryLength: f.param(TensorType.s32([]), 'queryLength'),
      itemQ: f.param(TensorType.f32([N, L, 2, 4]), 'itemQ'),
      itemK: f.param(TensorType.f32([N, L, 1, 4]), 'itemK'),
      itemV: f.param(TensorType.f32([N, L, 1, 4]), 'itemV'),
      itemLengths: f.param(TensorType.s32([N]), 'itemLengths'),
    };
    const [out] = f.forLoop({ count: 2, carried: [q], invariants: [k, v, seg] }, (b, _i, [x], [kk, vv, ss]) => [
      maskedAttentionDense(b, x, kk, vv, ss),
    ]);
    const [qOut, iOut] = f.forLoop(
      {
        count: 2,
        carried: [fq.queryQ, fq.itemQ],
        invariants: [fq.queryK, fq.queryV, fq.queryLength, fq.itemK, fq.itemV, fq.itemLengths],
      },
      (b, _i, [qq, iq], [qk, qv, ql, ik, iv, il]) => {
        const r = maskedAttentionFactored(b, {
          queryQ: qq,
          queryK: qk,
          queryV: qv,
          queryLength: ql,
          itemQ: iq,
          itemK: ik,
          itemV: iv,
          itemLengths: il,
        });
        return [r.query, r.items];
      },
    );
    return { out, qOut, iOut };
  });
  const [out, qOut, iOut] = await run(program, [...dense.inputs, ...fac.inputs]);
  const once = ref.denseAttention(denseRefInputs(req, dense));
  const twice = ref.denseAttention({ ...denseRefInputs(req, dense), q: Float32Array.from(once) });
  t.ok(
    ref.maxAbsDiff(out, twice) <= TOL,
    `dense twice in a loop vs reference: ${ref.maxAbsDiff(out, twice).toExponential(2)}`,
  );
  const f1 = ref.factoredAttention(factoredRefInputs(req, fac));
  const f2 = ref.factoredAttention({
    ...factoredRefInputs(req, fac),
    queryQ: Float32Array.from(f1.queryOut),
    itemQ: Float32Array.from(f1.itemOut),
  });
  t.ok(
    ref.maxAbsDiff(qOut, f2.queryOut) <= TOL && ref.maxAbsDiff(iOut, f2.itemOut) <= TOL,
    'factored twice in a loop vs reference',
  );
});

test('teardown', (t) => {
  for (const exe of executables.values()) exe.dispose();
  client.dispose();
  t.end();
});
