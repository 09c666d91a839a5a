'use strict';
// A packed pass's attention in one call (`pjrt_score_query_items_attention` and its bf16 target,
// native/kernels/prefix_attention_ffi.cc; lib/hlo/attention/query-items-kernel.ts), with the real CPU
// plugin:
// - its result is the two kernels' (the causal call over the query, the prefix call for the items)
//   joined row after row, bit for bit, in f32 and in bf16, on every path this CPU has, on odd shapes
//   (a query shorter than its rows, items shorter than L and empty, GQA, one item, several key
//   blocks), and the query's rows are within 1e-5 of the float64 causal reference;
// - malformed calls are the handler's errors, and the process lives; the builder refuses a grouped
//   call;
// - on the q | k | v projection itself (`pjrt_score_query_items_attention_rope`: RoPE, the score
//   scale and the split in the call): the query's rows within 1e-5 of the float64 causal reference on
//   the float64 rotation, every row within 1e-5 of XLA's rotation then the joined call (f32 rounding
//   apart), every path; malformed calls refused;
// - a packed pass calls it once a layer where both forms are the kernel (the rotating one where the
//   layer has no bias or q and k norms).
const test = require('tape');
const { Client } = require('../dist/runtime');
const {
  buildProgram,
  TensorType,
  causalPrefixAttentionKernel,
  itemsOverPrefixAttentionKernel,
  queryAndItemsAttentionKernel,
  queryAndItemsAttentionOnProjection,
  decoderFused,
  nn,
  parsePrefixAttentionTag,
  parseCausalAttentionTag,
  QUERY_ITEMS_ATTENTION_TARGET,
  QUERY_ITEMS_ATTENTION_BF16_TARGET,
  QUERY_ITEMS_ATTENTION_ROPE_TARGET,
} = require('../dist/hlo');
const { runProgram } = require('./helpers/run-program');
const { withIsa, f32Paths, bf16Paths } = require('./helpers/kernel-path');

let client;

const CASES = [
  {
    name: 'D=64 GQA 3, P=40 with 33 valid, 5 items of up to 7',
    P: 40,
    prefixLength: 33,
    N: 5,
    L: 7,
    itemLengths: [7, 0, 3, 7, 1],
    Hq: 9,
    Hkv: 3,
    D: 64,
  },
  {
    name: 'D=16 MHA, P=300 all valid (2 key blocks), one item of 20',
    P: 300,
    prefixLength: 300,
    N: 1,
    L: 20,
    itemLengths: [20],
    Hq: 2,
    Hkv: 2,
    D: 16,
  },
  {
    name: 'D=32 GQA 4, P=9 with 1 valid, 3 items of 2',
    P: 9,
    prefixLength: 1,
    N: 3,
    L: 2,
    itemLengths: [2, 1, 2],
    Hq: 4,
    Hkv: 1,
    D: 32,
  },
];

function fill(n, seed) {
  let a = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    a = (Math.imul(a ^ (a >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
    return (a / 2 ** 32 - 0.5) * 2;
  });
}

function operandTypes(c) {
  return [
    ['q', TensorType.f32([c.P, c.Hq, c.D])],
    ['k', TensorType.f32([c.P, c.Hkv, c.D])],
    ['v', TensorType.f32([c.P, c.Hkv, c.D])],
    ['prefix_length', new TensorType('s32', [])],
    ['item_q', TensorType.f32([c.N, c.L, c.Hq, c.D])],
    ['item_k', TensorType.f32([c.N, c.L, c.Hkv, c.D])],
    ['item_v', TensorType.f32([c.N, c.L, c.Hkv, c.D])],
    ['item_lengths', new TensorType('s32', [c.N])],
  ];
}

function inputs(c, seed) {
  return operandTypes(c).map(([name, type], i) => {
    if (name === 'prefix_length') return Int32Array.of(c.prefixLength);
    if (name === 'item_lengths') return Int32Array.from(c.itemLengths);
    return fill(
      type.dims.reduce((a, b) => a * b, 1),
      seed * 13 + i,
    );
  });
}

/** The joined call, or the two calls and their rows joined by XLA. */
function program(c, joined, bf16) {
  return buildProgram(
    `query_items_${joined ? 'joined' : 'apart'}_${bf16 ? 'bf16' : 'f32'}_${c.P}_${c.N}_${c.L}_${c.Hq}_${c.Hkv}_${c.D}`,
    (f) => {
      const [q, k, v, plen, iq, ik, iv, ilens] = operandTypes(c).map(([name, type]) => f.param(type, name));
      if (joined)
        return {
          out: queryAndItemsAttentionKernel(f, {
            q,
            k,
            v,
            prefixLength: plen,
            itemQ: iq,
            itemK: ik,
            itemV: iv,
            itemLengths: ilens,
          }),
        };
      const query = causalPrefixAttentionKernel(f, q, k, v, plen);
      const items = itemsOverPrefixAttentionKernel(f, {
        itemQ: iq,
        itemK: ik,
        itemV: iv,
        itemLengths: ilens,
        prefixK: k,
        prefixV: v,
        prefixLength: plen,
      });
      return { out: f.concatenate([query, f.reshape(items, [c.N * c.L, c.Hq, c.D])], 0) };
    },
    bf16 ? { dotPrecision: 'DEFAULT', dotOperands: 'bf16' } : {},
  );
}

/** Causal attention of the query's rows in float64 (row r < valid sees keys 0..r; rows past it 0), q scaled by 1/sqrt(D). */
function causalReference(c, [q, k, v]) {
  const { P, Hq, Hkv, D } = c;
  const group = Hq / Hkv;
  const valid = Math.min(Math.max(c.prefixLength, 0), P);
  const out = new Float64Array(P * Hq * D);
  for (let r = 0; r < valid; r++) {
    for (let h = 0; h < Hq; h++) {
      const kv = Math.floor(h / group);
      const scores = [];
      for (let j = 0; j <= r; j++) {
        let s = 0;
        for (let x = 0; x < D; x++) s += q[(r * Hq + h) * D + x] * k[(j * Hkv + kv) * D + x];
        scores.push(s / Math.sqrt(D));
      }
      const m = Math.max(...scores);
      const e = scores.map((s) => Math.exp(s - m));
      const z = e.reduce((a, b) => a + b, 0);
      for (let x = 0; x < D; x++) {
        let acc = 0;
        for (let j = 0; j <= r; j++) acc += e[j] * v[(j * Hkv + kv) * D + x];
        out[(r * Hq + h) * D + x] = acc / z;
      }
    }
  }
  return out;
}

test('setup: a CPU client with the addon kernels registered', async (t) => {
  client = await Client.create();
  t.ok(client.prefixAttentionKernel, 'the plugin registered the addon kernels');
  t.end();
});

for (const c of CASES) {
  test(`one call: the two kernels' rows joined, bit for bit (${c.name})`, async (t) => {
    const x = inputs(c, c.P + c.N);
    for (const bf16 of [false, true]) {
      const joined = program(c, true, bf16);
      const apart = program(c, false, bf16);
      t.ok(
        joined.text.includes(bf16 ? QUERY_ITEMS_ATTENTION_BF16_TARGET : QUERY_ITEMS_ATTENTION_TARGET),
        `${bf16 ? 'bf16' : 'f32'}: the joined program calls its target`,
      );
      for (const { isa, path } of bf16 ? bf16Paths(c.D) : f32Paths(c.D)) {
        await withIsa(isa, async () => {
          const [got] = await runProgram(client, joined, x);
          const [want] = await runProgram(client, apart, x);
          t.equal(got.length, (c.P + c.N * c.L) * c.Hq * c.D, `${path}: P + N L rows`);
          let same = true;
          for (let i = 0; i < want.length; i++) same &&= Object.is(got[i], want[i]);
          t.ok(same, `${bf16 ? 'bf16' : 'f32'}, ${path}: bit for bit the two calls joined`);
          if (!bf16) {
            const ref = causalReference(c, x);
            let worst = 0;
            for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs(got[i] - ref[i]));
            t.ok(
              worst <= 1e-5,
              `f32, ${path}: the query's rows within 1e-5 of the float64 causal reference (worst ${worst.toExponential(2)})`,
            );
          }
        });
      }
    }
    t.end();
  });
}

test("malformed joined calls are the handler's errors, and the process lives; the builder refuses a grouped call", async (t) => {
  const c = CASES[2];
  const ok = operandTypes(c);
  const result = TensorType.f32([c.P + c.N * c.L, c.Hq, c.D]);
  const swap = (i, type) => ok.map((o, j) => (j === i ? [o[0], type] : o));
  const bad = [
    ['seven operands', ok.slice(0, 7), result, /expects 8 operands|operand/],
    [
      'item heads that do not match',
      swap(4, TensorType.f32([c.N, c.L, c.Hq + 1, c.D])),
      result,
      /item q .* must be \[N, L, Hq, D\]/,
    ],
    [
      'item lengths of another count',
      swap(7, new TensorType('s32', [c.N + 1])),
      result,
      /item lengths \[4\] must be \[N\] = \[3\]/,
    ],
    [
      'a result of P rows only',
      ok,
      TensorType.f32([c.P, c.Hq, c.D]),
      /result \[9, 4, 32\] must be \[P \+ N L, Hq, D\] = \[15, 4, 32\]/,
    ],
    [
      'k of another length than q',
      swap(1, TensorType.f32([c.P + 1, c.Hkv, c.D])),
      result,
      /k \[10, 1, 32\] and v \[9, 1, 32\] must be \[P, Hkv, D\]/,
    ],
  ];
  for (const [name, operands, res, message] of bad) {
    const prog = buildProgram(`query_items_bad_${name.replace(/\W+/g, '_')}`, (f) => ({
      y: f.customCall(
        QUERY_ITEMS_ATTENTION_TARGET,
        operands.map(([n, type]) => f.param(type, n)),
        [res],
      )[0],
    }));
    const data = prog.inputs.map((spec) => {
      const n = spec.dims.reduce((a, b) => a * b, 1);
      return spec.dtype === 's32' ? new Int32Array(n) : new Float32Array(n);
    });
    await runProgram(client, prog, data).then(
      () => t.fail(`${name}: ran`),
      (err) => t.match(String(err.message), message, `${name}: ${String(err.message).split('\n')[0].slice(0, 160)}`),
    );
  }
  t.throws(
    () =>
      buildProgram('query_items_grouped', (f) => {
        const g = (type) => new TensorType(type.elementType, [2, ...type.dims]);
        const [q, k, v, plen, iq, ik, iv, ilens] = ok.map(([name, type]) => f.param(g(type), name));
        return {
          y: queryAndItemsAttentionKernel(f, {
            q,
            k,
            v,
            prefixLength: plen,
            itemQ: iq,
            itemK: ik,
            itemV: iv,
            itemLengths: ilens,
          }),
        };
      }),
    /the addon's kernels take one query \(prefixLength s32\[\]\)/,
    'a grouped call (prefixLength s32[2]) is refused',
  );
  t.end();
});

/** RoPE's tables for positions (float64 angles rounded to f32, as rotaryTablesFrom), [rows, D / 2]. */
function ropeTables(positions, d, theta = 10000) {
  const half = d / 2;
  const cos = new Float32Array(positions.length * half);
  const sin = new Float32Array(positions.length * half);
  positions.forEach((p, r) => {
    for (let j = 0; j < half; j++) {
      const angle = p * theta ** ((-2 * j) / d);
      cos[r * half + j] = Math.cos(angle);
      sin[r * half + j] = Math.sin(angle);
    }
  });
  return { cos, sin };
}

/** The projection's inputs: qkv [T, (Hq + 2 Hkv) D], the query's positions 0.. and each item's after the prefix length. */
function projectionInputs(c, seed) {
  const T = c.P + c.N * c.L;
  const width = (c.Hq + 2 * c.Hkv) * c.D;
  const qkv = fill(T * width, seed);
  const query = ropeTables(
    Array.from({ length: c.P }, (_, i) => i),
    c.D,
  );
  const items = ropeTables(
    Array.from({ length: c.N * c.L }, (_, i) => c.prefixLength + (i % c.L)),
    c.D,
  );
  return { qkv, query, items, T, width };
}

/** The query's rows of qkv rotated in float64 (x1 c - x2 s, x2 c + x1 s), rounded to f32: q [P, Hq, D], k, v [P, Hkv, D]. */
function rotatedQuery(c, { qkv, query, width }) {
  const half = c.D / 2;
  const q = new Float32Array(c.P * c.Hq * c.D);
  const k = new Float32Array(c.P * c.Hkv * c.D);
  const v = new Float32Array(c.P * c.Hkv * c.D);
  for (let r = 0; r < c.P; r++) {
    const rotate = (h, out) => {
      for (let j = 0; j < half; j++) {
        const x1 = qkv[r * width + h * c.D + j];
        const x2 = qkv[r * width + h * c.D + j + half];
        const cs = query.cos[r * half + j];
        const sn = query.sin[r * half + j];
        out[j] = x1 * cs - x2 * sn;
        out[j + half] = x2 * cs + x1 * sn;
      }
    };
    for (let h = 0; h < c.Hq; h++) rotate(h, q.subarray((r * c.Hq + h) * c.D, (r * c.Hq + h + 1) * c.D));
    for (let h = 0; h < c.Hkv; h++) rotate(c.Hq + h, k.subarray((r * c.Hkv + h) * c.D, (r * c.Hkv + h + 1) * c.D));
    v.set(qkv.subarray(r * width + (c.Hq + c.Hkv) * c.D, r * width + (c.Hq + 2 * c.Hkv) * c.D), r * c.Hkv * c.D);
  }
  return [q, k, v];
}

/** On the projection: the rotating call, or XLA's rotation (applyRotary) then the joined call. */
function projectionProgram(c, rotating, bf16) {
  const T = c.P + c.N * c.L;
  const width = (c.Hq + 2 * c.Hkv) * c.D;
  const half = c.D / 2;
  return buildProgram(
    `query_items_projection_${rotating ? 'call' : 'xla'}_${bf16 ? 'bf16' : 'f32'}_${c.P}_${c.N}_${c.L}_${c.Hq}_${c.Hkv}_${c.D}`,
    (f) => {
      const qkv = f.param(TensorType.f32([T, width]), 'qkv');
      const queryCos = f.param(TensorType.f32([c.P, half]), 'query_cos');
      const querySin = f.param(TensorType.f32([c.P, half]), 'query_sin');
      const itemCos = f.param(TensorType.f32([c.N, c.L, half]), 'item_cos');
      const itemSin = f.param(TensorType.f32([c.N, c.L, half]), 'item_sin');
      const prefixLength = f.param(new TensorType('s32', []), 'prefix_length');
      const itemLengths = f.param(new TensorType('s32', [c.N]), 'item_lengths');
      if (rotating)
        return {
          out: queryAndItemsAttentionOnProjection(f, {
            qkv,
            heads: { hq: c.Hq, hkv: c.Hkv, d: c.D },
            queryCos,
            querySin,
            itemCos,
            itemSin,
            prefixLength,
            itemLengths,
          }),
        };
      const cos = f.concatenate([queryCos, f.reshape(itemCos, [c.N * c.L, half])], 0);
      const sin = f.concatenate([querySin, f.reshape(itemSin, [c.N * c.L, half])], 0);
      const heads = (from, count) =>
        f.reshape(f.slice(qkv, [0, from * c.D], [T, (from + count) * c.D]), [T, count, c.D]);
      const q = nn.applyRotary(f, heads(0, c.Hq), cos, sin);
      const k = nn.applyRotary(f, heads(c.Hq, c.Hkv), cos, sin);
      const v = heads(c.Hq + c.Hkv, c.Hkv);
      const part = (x, from, to) => f.slice(x, [from, 0, 0], [to, x.dims[1], c.D]);
      const items = (x) => f.reshape(part(x, c.P, T), [c.N, c.L, x.dims[1], c.D]);
      return {
        out: queryAndItemsAttentionKernel(f, {
          q: part(q, 0, c.P),
          k: part(k, 0, c.P),
          v: part(v, 0, c.P),
          prefixLength,
          itemQ: items(q),
          itemK: items(k),
          itemV: items(v),
          itemLengths,
        }),
      };
    },
    bf16 ? { dotPrecision: 'DEFAULT', dotOperands: 'bf16' } : {},
  );
}

for (const c of CASES) {
  test(`on the projection: RoPE, the scale and the split in the call (${c.name})`, async (t) => {
    const x = projectionInputs(c, c.P * 7 + c.N);
    const data = [
      x.qkv,
      x.query.cos,
      x.query.sin,
      x.items.cos,
      x.items.sin,
      Int32Array.of(c.prefixLength),
      Int32Array.from(c.itemLengths),
    ];
    const rotating = projectionProgram(c, true, false);
    const viaXla = projectionProgram(c, false, false);
    t.ok(rotating.text.includes(QUERY_ITEMS_ATTENTION_ROPE_TARGET), 'the program calls the rotating target');
    const ref = causalReference(c, rotatedQuery(c, x));
    for (const { isa, path } of f32Paths(c.D)) {
      await withIsa(isa, async () => {
        const [got] = await runProgram(client, rotating, data);
        const [want] = await runProgram(client, viaXla, data);
        let worstRef = 0;
        for (let i = 0; i < ref.length; i++) worstRef = Math.max(worstRef, Math.abs(got[i] - ref[i]));
        let worstXla = 0;
        for (let i = 0; i < want.length; i++) worstXla = Math.max(worstXla, Math.abs(got[i] - want[i]));
        t.ok(
          worstRef <= 1e-5,
          `${path}: the query's rows within 1e-5 of the float64 causal reference on the float64 rotation (worst ${worstRef.toExponential(2)})`,
        );
        t.ok(
          worstXla <= 1e-5,
          `${path}: every row within 1e-5 of XLA's rotation then the joined call (worst ${worstXla.toExponential(2)})`,
        );
      });
    }
    // bf16: the same call rounding q, K, V to bf16; against XLA's rotation then the joined bf16 call.
    const [gotBf16] = await runProgram(client, projectionProgram(c, true, true), data);
    const [wantBf16] = await runProgram(client, projectionProgram(c, false, true), data);
    let worst = 0;
    for (let i = 0; i < wantBf16.length; i++) worst = Math.max(worst, Math.abs(gotBf16[i] - wantBf16[i]));
    t.ok(
      worst <= 5e-3,
      `bf16: within 5e-3 of XLA's rotation then the joined bf16 call (an f32 rounding apart can move a bf16 rounding: worst ${worst.toExponential(2)})`,
    );
    t.end();
  });
}

test('malformed rotating calls: the builder refuses them, and so does the handler', async (t) => {
  const c = CASES[2];
  const T = c.P + c.N * c.L;
  const half = c.D / 2;
  const ok = [
    ['qkv', TensorType.f32([T, (c.Hq + 2 * c.Hkv) * c.D])],
    ['query_cos', TensorType.f32([c.P, half])],
    ['query_sin', TensorType.f32([c.P, half])],
    ['item_cos', TensorType.f32([c.N, c.L, half])],
    ['item_sin', TensorType.f32([c.N, c.L, half])],
    ['scale', TensorType.f32([])],
    ['prefix_length', new TensorType('s32', [])],
    ['item_lengths', new TensorType('s32', [c.N])],
  ];
  const result = TensorType.f32([T, c.Hq, c.D]);
  const swap = (i, type) => ok.map((o, j) => (j === i ? [o[0], type] : o));
  const bad = [
    [
      'a qkv width of no whole heads',
      swap(0, TensorType.f32([T, (c.Hq + 2 * c.Hkv) * c.D + 1])),
      result,
      /qkv \[15, 193\] must be \[T, \(Hq \+ 2 Hkv\) D\]/,
    ],
    [
      'item tables of another length',
      swap(3, TensorType.f32([c.N, c.L + 1, half])),
      result,
      /item cos \[3, 3, 16\] .* must be \[P, D \/ 2\] and \[N, L, D \/ 2\] with P \+ N L = 15/,
    ],
    ['an odd head dim', ok, TensorType.f32([T, c.Hq * 2, 3]), /even head dim/],
  ];
  for (const [name, operands, res, message] of bad) {
    const prog = buildProgram(`query_items_rope_bad_${name.replace(/\W+/g, '_')}`, (f) => ({
      y: f.customCall(
        QUERY_ITEMS_ATTENTION_ROPE_TARGET,
        operands.map(([n, type]) => f.param(type, n)),
        [res],
      )[0],
    }));
    const data = prog.inputs.map((spec) => {
      const n = spec.dims.reduce((a, b) => a * b, 1);
      return spec.dtype === 's32' ? new Int32Array(n) : new Float32Array(n);
    });
    await runProgram(client, prog, data).then(
      () => t.fail(`${name}: ran`),
      (err) => t.match(String(err.message), message, `${name}: ${String(err.message).split('\n')[0].slice(0, 160)}`),
    );
  }
  t.throws(
    () =>
      buildProgram('query_items_rope_refused', (f) => {
        const [qkv, queryCos, querySin, itemCos, itemSin, , prefixLength, itemLengths] = ok.map(([n, type]) =>
          f.param(type, n),
        );
        return {
          y: queryAndItemsAttentionOnProjection(f, {
            qkv,
            heads: { hq: c.Hq, hkv: c.Hkv + 1, d: c.D },
            queryCos,
            querySin,
            itemCos,
            itemSin,
            prefixLength,
            itemLengths,
          }),
        };
      }),
    /queryAndItemsAttentionOnProjection: qkv must be f32 \[15, 256\], got tensor<15x192xf32>/,
    'the builder refuses heads the projection does not hold',
  );
  t.end();
});

test('the packed pass calls it once a layer where both forms are the kernel, and the two calls otherwise', (t) => {
  const d = {
    vocabSize: 64,
    hiddenSize: 32,
    intermediateSize: 48,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 8,
    rmsEps: 1e-5,
    ropeTheta: 10000,
  };
  const shape = { prefix: 8, items: 3, itemLength: 4, labels: 2 };
  const count = (text, target) => (text.match(new RegExp(`call_target_name = "${target}"`, 'g')) || []).length;
  const both = { prefixAttention: parsePrefixAttentionTag('ffi'), causalAttention: parseCausalAttentionTag('ffi') };
  const kernels = decoderFused(d, shape, both).text;
  t.equal(
    count(kernels, QUERY_ITEMS_ATTENTION_ROPE_TARGET),
    1,
    'both forms the kernel: one rotating joined call in the layer loop',
  );
  t.equal(
    count(kernels, QUERY_ITEMS_ATTENTION_TARGET) +
      count(kernels, 'pjrt_score_causal_attention') +
      count(kernels, 'pjrt_score_prefix_attention'),
    0,
    'and no other attention call',
  );
  const biased = decoderFused({ ...d, attentionBias: true }, shape, both).text;
  t.equal(count(biased, QUERY_ITEMS_ATTENTION_TARGET), 1, 'a q | k | v bias: XLA rotates, then the joined call');
  t.equal(count(biased, QUERY_ITEMS_ATTENTION_ROPE_TARGET), 0, 'not the rotating one');
  const mixed = decoderFused(d, shape, { prefixAttention: parsePrefixAttentionTag('ffi') }).text;
  t.equal(count(mixed, QUERY_ITEMS_ATTENTION_TARGET), 0, 'the causal form StableHLO: no joined call');
  t.equal(count(mixed, 'pjrt_score_prefix_attention'), 1, 'the prefix kernel alone');
  t.end();
});

test('teardown', (t) => {
  client.dispose();
  t.end();
});
