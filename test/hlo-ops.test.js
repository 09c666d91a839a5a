'use strict';
// Every builder op run on the real CPU plugin against plain JS: proves the
// emitted syntax is accepted and the semantics are what the builder claims.
const test = require('tape');
const { Client } = require('../dist/runtime');
const { TensorType, buildProgram, nn } = require('../dist/hlo');
const ref = require('./helpers/attention-reference');

const f32 = TensorType.f32;
const s32 = TensorType.s32;
let client;

/** Builds, compiles and runs a program; `inputs` maps param name -> [type, typed array]. */
async function evaluate(name, inputs, build) {
  const program = buildProgram(name, (f) => {
    const params = {};
    for (const [n, [type]] of Object.entries(inputs)) params[n] = f.param(type, n);
    return build(f, params);
  });
  const exe = await client.compile(program.text);
  const values = Object.values(inputs);
  const buffers = await Promise.all(
    program.inputs.map((spec, i) => client.upload(values[i][1], spec.dims, spec.dtype)),
  );
  const outs = await exe.execute(buffers);
  const result = {};
  for (let i = 0; i < outs.length; i++) result[program.outputs[i].name] = Array.from(await outs[i].toHost());
  for (const b of [...buffers, ...outs]) b.dispose();
  exe.dispose();
  return result;
}

function close(t, actual, expected, msg, tol = 1e-6) {
  const d = ref.maxAbsDiff(Float64Array.from(actual), Float64Array.from(expected));
  t.ok(actual.length === expected.length && d <= tol, `${msg} (max diff ${d.toExponential(2)})`);
}

const X = Float32Array.from([1, -2, 3.5, 0.25, -0.5, 6, 7, -8, 0.1, 10, -11, 12]); // [3, 4]

test('setup: CPU client', async (t) => {
  client = await Client.create();
  t.pass('client');
});

test('elementwise math, compare/select, logic, convert, clamp', async (t) => {
  const r = await evaluate('elementwise', { x: [f32([3, 4]), X] }, (f, { x }) => ({
    sum: f.add(x, x),
    diff: f.subtract(x, 1),
    prod: f.multiply(x, x),
    quot: f.divide(x, 4),
    max: f.maximum(x, 0),
    min: f.minimum(x, 0),
    neg: f.negate(x),
    exp: f.exponential(f.multiply(x, 0.1)),
    log: f.log(f.abs(x)),
    rsqrt: f.rsqrt(f.abs(x)),
    sqrt: f.sqrt(f.abs(x)),
    tanh: f.tanh(x),
    sigmoid: f.logistic(x),
    pow: f.power(f.abs(x), 1.5),
    trig: f.add(f.sine(x), f.cosine(x)),
    floor: f.floor(x),
    sel: f.select(f.and(f.gt(x, 0), f.not(f.ge(x, 7))), x, -1),
    either: f.convert(f.or(f.lt(x, -1), f.eq(x, 0.25)), 's32'),
    conv: f.convert(x, 's32'),
    clamp: f.clamp(-1, x, 2),
  }));
  const xs = Array.from(X);
  close(
    t,
    r.sum,
    xs.map((v) => v + v),
    'add',
  );
  close(
    t,
    r.diff,
    xs.map((v) => v - 1),
    'subtract',
  );
  close(
    t,
    r.prod,
    xs.map((v) => v * v),
    'multiply',
    1e-4,
  );
  close(
    t,
    r.quot,
    xs.map((v) => v / 4),
    'divide',
  );
  close(
    t,
    r.max,
    xs.map((v) => Math.max(v, 0)),
    'maximum',
  );
  close(
    t,
    r.min,
    xs.map((v) => Math.min(v, 0)),
    'minimum',
  );
  close(
    t,
    r.neg,
    xs.map((v) => -v),
    'negate',
  );
  close(
    t,
    r.exp,
    xs.map((v) => Math.exp(Math.fround(v * 0.1))),
    'exponential',
    1e-5,
  );
  close(
    t,
    r.log,
    xs.map((v) => Math.log(Math.abs(v))),
    'log',
  );
  close(
    t,
    r.rsqrt,
    xs.map((v) => 1 / Math.sqrt(Math.abs(v))),
    'rsqrt',
    1e-5,
  );
  close(
    t,
    r.sqrt,
    xs.map((v) => Math.sqrt(Math.abs(v))),
    'sqrt',
  );
  close(t, r.tanh, xs.map(Math.tanh), 'tanh');
  close(
    t,
    r.sigmoid,
    xs.map((v) => 1 / (1 + Math.exp(-v))),
    'logistic',
  );
  close(
    t,
    r.pow,
    xs.map((v) => Math.abs(v) ** 1.5),
    'power',
    1e-4,
  );
  close(
    t,
    r.trig,
    xs.map((v) => Math.sin(v) + Math.cos(v)),
    'sine + cosine',
    1e-5,
  );
  close(t, r.floor, xs.map(Math.floor), 'floor');
  close(
    t,
    r.sel,
    xs.map((v) => (v > 0 && !(v >= 7) ? v : -1)),
    'select with and/not',
  );
  t.deepEqual(
    r.either,
    xs.map((v) => (v < -1 || v === 0.25 ? 1 : 0)),
    'or of compares, pred -> s32',
  );
  t.deepEqual(
    r.conv,
    xs.map((v) => Math.trunc(v) || 0),
    'convert f32 -> s32 truncates',
  );
  close(
    t,
    r.clamp,
    xs.map((v) => Math.min(Math.max(v, -1), 2)),
    'clamp',
  );
});

test('integer shifts: left, and right with zeros shifted in (s32 and u8)', async (t) => {
  const ints = Int32Array.from([1, -1, 0x7fffffff, -256, 12345, 3]);
  const bytes = Uint8Array.from([0x80, 0xff, 0x0f, 0xa5, 0, 1]);
  const r = await evaluate('shifts', { x: [s32([6]), ints], b: [new TensorType('u8', [6]), bytes] }, (f, { x, b }) => ({
    left: f.shiftLeft(x, 3),
    right: f.shiftRightLogical(x, 4),
    bytesRight: f.shiftRightLogical(b, 3),
  }));
  t.deepEqual(
    r.left,
    Array.from(ints, (v) => v << 3),
    'shiftLeft',
  );
  t.deepEqual(
    r.right,
    Array.from(ints, (v) => (v >>> 4) | 0),
    'shiftRightLogical (s32: zeros shifted in, not the sign)',
  );
  t.deepEqual(
    r.bytesRight,
    Array.from(bytes, (v) => v >>> 3),
    'shiftRightLogical (u8)',
  );
});

test('shape ops: iota, broadcast, reshape, transpose, concatenate, slice, pad', async (t) => {
  const r = await evaluate('shapes', { x: [f32([3, 4]), X] }, (f, { x }) => ({
    iota: f.iota(s32([2, 3]), 1),
    bcast: f.broadcastInDim(f.slice(x, [0, 0], [1, 4]), [2, 1, 4], [1, 2]),
    reshaped: f.reshape(x, [2, 6]),
    transposed: f.transpose(x, [1, 0]),
    cat: f.concatenate([x, f.slice(x, [1, 0], [2, 4])], 0),
    strided: f.slice(x, [0, 1], [3, 4], [2, 2]),
    padded: f.pad(f.slice(x, [0, 0], [1, 2]), -9, [1, 1], [0, 1], [0, 1]),
  }));
  t.deepEqual(r.iota, [0, 1, 2, 0, 1, 2], 'iota along dim 1');
  close(t, r.bcast, [...X.slice(0, 4), ...X.slice(0, 4)], 'broadcast_in_dim');
  close(t, r.reshaped, Array.from(X), 'reshape keeps row-major order');
  const xt = [];
  for (let j = 0; j < 4; j++) for (let i = 0; i < 3; i++) xt.push(X[i * 4 + j]);
  close(t, r.transposed, xt, 'transpose');
  close(t, r.cat, [...X, ...X.slice(4, 8)], 'concatenate');
  close(t, r.strided, [X[1], X[3], X[9], X[11]], 'strided slice');
  // [1, 2] -> low (1, 1), high (0, 1), interior (0, 1): [2, 5]
  close(t, r.padded, [-9, -9, -9, -9, -9, -9, X[0], -9, X[1], -9], 'pad');
});

test('dynamic slices, take (gather), dot_general', async (t) => {
  const r = await evaluate(
    'indexing',
    { x: [f32([3, 4]), X], i: [s32([]), Int32Array.from([2])], idx: [s32([5]), Int32Array.from([2, 0, 2, 1, 0])] },
    (f, { x, i, idx }) => ({
      row: f.dynamicIndex(x, i),
      window: f.dynamicSlice(x, [1, i], [2, 2]),
      clampedWindow: f.dynamicSlice(x, [i, 3], [2, 2]),
      updated: f.dynamicUpdateSlice(x, f.full(f32([1, 2]), 0), [i, 1]),
      rows: f.take(x, idx, 0),
      cols: f.take(x, f.slice(idx, [0], [3]), 1),
      gram: f.dotGeneral(x, x, { lhsContract: [1], rhsContract: [1] }),
      batched: f.dotGeneral(f.reshape(x, [3, 2, 2]), f.reshape(x, [3, 2, 2]), {
        lhsBatch: [0],
        rhsBatch: [0],
        lhsContract: [2],
        rhsContract: [2],
      }),
    }),
  );
  const at = (a, b) => X[a * 4 + b];
  close(t, r.row, [at(2, 0), at(2, 1), at(2, 2), at(2, 3)], 'dynamicIndex x[i]');
  close(t, r.window, [at(1, 2), at(1, 3), at(2, 2), at(2, 3)], 'dynamic_slice');
  close(t, r.clampedWindow, [at(1, 2), at(1, 3), at(2, 2), at(2, 3)], 'dynamic_slice clamps its start into bounds');
  const upd = Array.from(X);
  upd[2 * 4 + 1] = 0;
  upd[2 * 4 + 2] = 0;
  close(t, r.updated, upd, 'dynamic_update_slice');
  close(
    t,
    r.rows,
    [2, 0, 2, 1, 0].flatMap((k) => [0, 1, 2, 3].map((j) => at(k, j))),
    'take rows (duplicates allowed)',
  );
  close(
    t,
    r.cols,
    [0, 1, 2].flatMap((a) => [2, 0, 2].map((k) => at(a, k))),
    'take columns',
  );
  const gram = [];
  for (let a = 0; a < 3; a++)
    for (let b = 0; b < 3; b++) gram.push([0, 1, 2, 3].reduce((s, j) => s + at(a, j) * at(b, j), 0));
  close(t, r.gram, gram, 'dot_general x @ x^T', 1e-4);
  const batched = [];
  for (let a = 0; a < 3; a++)
    for (let p = 0; p < 2; p++)
      for (let q = 0; q < 2; q++) batched.push(at(a, 2 * p) * at(a, 2 * q) + at(a, 2 * p + 1) * at(a, 2 * q + 1));
  close(t, r.batched, batched, 'batched dot_general', 1e-4);
});

test('reductions, loops and nn helpers', async (t) => {
  const w = Float32Array.from([0.5, 1, 1.5, 2]);
  const r = await evaluate('reduce_loop', { x: [f32([3, 4]), X], w: [f32([4]), w] }, (f, { x, w: weight }) => {
    const [total, steps] = f.forLoop(
      { count: 3, carried: [f.full(f32([4]), 0), f.scalar(0, 's32')], invariants: [x] },
      (b, i, [acc, n], [xs]) => [
        b.add(acc, b.multiply(b.dynamicIndex(xs, i), b.broadcastScalar(b.convert(b.add(i, 1), 'f32'), [4]))),
        b.add(n, 1),
      ],
    );
    const [countdown] = f.whileLoop(
      [f.scalar(10, 's32')],
      (b, [k]) => b.gt(k, 3),
      (b, [k]) => [b.subtract(k, 2)],
    );
    const [argmaxVal, argmaxIdx] = f.reduce(
      [x, f.iota(s32([3, 4]), 1)],
      [f.scalar(-Infinity), f.scalar(-1, 's32')],
      [1],
      (b, [av, ai], [v, i]) => {
        const take = b.gt(v, av);
        return [b.select(take, v, av), b.select(take, i, ai)];
      },
    );
    return {
      sum: f.reduceSum(x, [1]),
      max: f.reduceMax(x, [0]),
      min: f.reduceMin(x, [0, 1]),
      total,
      steps,
      countdown,
      argmaxVal,
      argmaxIdx,
      softmax: nn.softmax(f, x),
      logSoftmax: nn.logSoftmax(f, x, 0),
      lse: nn.logsumexp(f, x),
      rms: nn.rmsNorm(f, x, weight, 1e-5),
      lseMasked: nn.logsumexp(f, f.full(f32([2, 3]), -Infinity)),
    };
  });
  const rows = [0, 1, 2].map((i) => Array.from(X.slice(i * 4, i * 4 + 4)));
  close(
    t,
    r.sum,
    rows.map((row) => row.reduce((a, b) => a + b)),
    'reduce sum',
  );
  close(
    t,
    r.max,
    [0, 1, 2, 3].map((j) => Math.max(...rows.map((row) => row[j]))),
    'reduce max',
  );
  close(t, r.min, [Math.min(...X)], 'reduce min to a scalar');
  close(
    t,
    r.total,
    [0, 1, 2, 3].map((j) => rows.reduce((s, row, i) => s + (i + 1) * row[j], 0)),
    'forLoop with invariants',
    1e-5,
  );
  t.deepEqual(r.steps, [3], 'forLoop ran 3 times');
  t.deepEqual(r.countdown, [2], 'whileLoop 10 -> 2');
  close(
    t,
    r.argmaxVal,
    rows.map((row) => Math.max(...row)),
    'two-operand reduce (value)',
  );
  t.deepEqual(
    r.argmaxIdx,
    rows.map((row) => row.indexOf(Math.max(...row))),
    'two-operand reduce (argmax index)',
  );
  const softmax = rows.flatMap((row) => {
    const m = Math.max(...row);
    const e = row.map((v) => Math.exp(v - m));
    const s = e.reduce((a, b) => a + b);
    return e.map((v) => v / s);
  });
  close(t, r.softmax, softmax, 'softmax');
  const lse = rows.map((row) => Math.log(row.reduce((s, v) => s + Math.exp(v), 0)));
  close(t, r.lse, lse, 'logsumexp', 1e-5);
  const colLse = [0, 1, 2, 3].map((j) => Math.log(rows.reduce((s, row) => s + Math.exp(row[j]), 0)));
  close(
    t,
    r.logSoftmax,
    rows.flatMap((row) => row.map((v, j) => v - colLse[j])),
    'logSoftmax over axis 0',
    1e-5,
  );
  const rms = rows.flatMap((row) => {
    const inv = 1 / Math.sqrt(row.reduce((s, v) => s + v * v, 0) / 4 + 1e-5);
    return row.map((v, j) => v * inv * w[j]);
  });
  close(t, r.rms, rms, 'rmsNorm', 1e-5);
  t.deepEqual(r.lseMasked, [-Infinity, -Infinity], 'logsumexp of an all -inf row is -inf, not NaN');
});

test('transformer helpers: silu, linear, rotary embedding, per-head norm then rotary', async (t) => {
  const [T, H, D, Out] = [5, 2, 6, 3];
  const next = ref.rng(9);
  const x = ref.randomF32(next, T * H * D);
  const w = ref.randomF32(next, Out * D);
  const b = ref.randomF32(next, Out);
  const g = ref.randomF32(next, D);
  const positions = Int32Array.from([0, 1, 7, 300, 2047]);
  const theta = 10000;
  const r = await evaluate(
    'helpers',
    { x: [f32([T, H, D]), x], w: [f32([Out, D]), w], b: [f32([Out]), b], g: [f32([D]), g], pos: [s32([T]), positions] },
    (f, p) => {
      const { cos, sin } = nn.rotaryTables(f, p.pos, D, theta);
      return {
        silu: nn.silu(f, p.x),
        lin: nn.linear(f, p.x, p.w, p.b),
        rope: nn.applyRotary(f, p.x, cos, sin),
        normRope: nn.rmsNormRotary(f, p.x, p.g, 1e-6, cos, sin),
      };
    },
  );
  close(
    t,
    r.silu,
    Array.from(x, (v) => v / (1 + Math.exp(-v))),
    'silu',
  );
  const lin = [];
  for (let i = 0; i < T * H; i++)
    for (let o = 0; o < Out; o++)
      lin.push(b[o] + [...Array(D).keys()].reduce((s, d) => s + x[i * D + d] * w[o * D + d], 0));
  close(t, r.lin, lin, 'linear with bias', 1e-5);
  // Each head's row rotated (rotate-half), optionally RMS-normalized with weight g first.
  const rotated = (normalize) => {
    const out = [];
    for (let ti = 0; ti < T; ti++) {
      for (let h = 0; h < H; h++) {
        let row = Array.from(x.subarray((ti * H + h) * D, (ti * H + h + 1) * D));
        if (normalize) {
          const inv = 1 / Math.sqrt(row.reduce((s, v) => s + v * v, 0) / D + 1e-6);
          row = row.map((v, j) => v * inv * g[j]);
        }
        const o = new Array(D);
        for (let i = 0; i < D / 2; i++) {
          const angle = positions[ti] * theta ** ((-2 * i) / D);
          o[i] = row[i] * Math.cos(angle) - row[i + D / 2] * Math.sin(angle);
          o[i + D / 2] = row[i + D / 2] * Math.cos(angle) + row[i] * Math.sin(angle);
        }
        out.push(...o);
      }
    }
    return out;
  };
  close(t, r.rope, rotated(false), 'rotary embedding (rotate-half)', 1e-5);
  close(t, r.normRope, rotated(true), 'rmsNormRotary: each head normalized, then rotated', 1e-5);
});

test('rotary tables at long positions: within f32 rounding of the exact angles', async (t) => {
  // Head dim 256 and bases 1e6 (linear scaling 8) and 1e4, as Gemma 3's and
  // Llama's; an angle formed in f32 at position 32,767 is off by up to 2e-3.
  const D = 256;
  const positions = Int32Array.from([0, 1, 511, 2020, 4095, 32767]);
  for (const [theta, factor] of [
    [1e6, 8],
    [1e4, 1],
  ]) {
    const r = await evaluate('rope_tables', { pos: [s32([positions.length]), positions] }, (f, p) =>
      nn.rotaryTables(f, p.pos, D, theta, factor),
    );
    const angles = Array.from(positions).flatMap((p) =>
      Array.from({ length: D / 2 }, (_, i) => (p * theta ** ((-2 * i) / D)) / factor),
    );
    close(t, r.cos, angles.map(Math.cos), `cos, base ${theta}, scaling ${factor}`, 1e-7);
    close(t, r.sin, angles.map(Math.sin), `sin, base ${theta}, scaling ${factor}`, 1e-7);
  }
});

test('teardown', (t) => {
  client.dispose();
  t.end();
});
