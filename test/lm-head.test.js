'use strict';
// The LM-head gather program on the real CPU plugin against the naive JS
// reference: duplicate and padded gather indices, labels at the vocabulary
// edges, the eps parameter, and the log-normalizer label (-logsumexp: a
// label's raw logit is its column minus that one).
const test = require('tape');
const { Client } = require('../dist/runtime');
const { programs, LOG_NORMALIZER_LABEL, buildProgram, TensorType, lmHeadLabelLogprobs } = require('../dist/hlo');
const { runProgram } = require('./helpers/run-program');
const ref = require('./helpers/attention-reference');

const TOL = 1e-5;
let client;

async function runLmHead(dims, x) {
  const program = programs.lmHeadGather(dims);
  const exe = await client.compile(program.text);
  const inputs = [x.hidden, x.gatherIndices, x.finalNormWeight, x.lmHead, x.labels];
  const buffers = await Promise.all(program.inputs.map((spec, i) => client.upload(inputs[i], spec.dims, spec.dtype)));
  const [out] = await exe.execute(buffers);
  checkOutputDims(program, out);
  const host = await out.toHost();
  for (const b of [...buffers, out]) b.dispose();
  exe.dispose();
  return host;
}

function checkOutputDims(program, out) {
  const [spec] = program.outputs;
  if (out.dims.join() !== spec.dims.join()) throw new Error(`output dims ${out.dims} != ${spec.dims}`);
}

function makeInputs(seed, { T, Dm, V }, gatherIndices, labels, hiddenScale = 1) {
  const next = ref.rng(seed);
  return {
    hidden: ref.randomF32(next, T * Dm, hiddenScale),
    gatherIndices: Int32Array.from(gatherIndices),
    finalNormWeight: Float32Array.from(ref.randomF32(next, Dm), (w) => 1 + 0.5 * w),
    lmHead: ref.randomF32(next, V * Dm, 0.5),
    labels: Int32Array.from(labels),
  };
}

/** Max |a - b| over the rows i with gatherIndices[i] >= 0. */
function realRowsDiff(a, b, gatherIndices, Lb) {
  const idx = [];
  gatherIndices.forEach((g, i) => {
    if (g >= 0) for (let j = 0; j < Lb; j++) idx.push(i * Lb + j);
  });
  return ref.maxAbsDiff(a, b, idx);
}

test('setup: CPU client', async (t) => {
  client = await Client.create();
  t.equal(client.platformName, 'cpu');
});

test('duplicate and padded gather indices, labels 0 and V-1', async (t) => {
  const [T, Dm, V] = [13, 16, 50];
  const gatherIndices = [3, 3, 12, 0, -1, -1];
  const labels = [0, V - 1, 7, 7];
  const eps = 1e-6;
  const x = makeInputs(1, { T, Dm, V }, gatherIndices, labels);
  const out = await runLmHead(
    { tokens: T, hiddenSize: Dm, gatherCount: gatherIndices.length, vocabSize: V, labelCount: labels.length, eps },
    x,
  );
  const expect = ref.lmHeadGather({ ...x, T, Dm, V, eps });
  const d = realRowsDiff(out, expect, gatherIndices, labels.length);
  t.ok(d <= TOL, `vs reference: ${d.toExponential(2)}`);
  t.ok(out.every(Number.isFinite), 'every row finite, padded ones included');
  t.deepEqual(Array.from(out.subarray(0, 4)), Array.from(out.subarray(4, 8)), 'duplicate index -> identical rows');
  t.equal(out[2], out[3], 'duplicate label -> identical columns');
  t.ok(
    out.every((v) => v <= 0),
    'log-probabilities are <= 0',
  );
});

test('eps is a build parameter that matters', async (t) => {
  const [T, Dm, V] = [4, 8, 10];
  const gatherIndices = [0, 1, 2, 3];
  const labels = [1, 9];
  const x = makeInputs(2, { T, Dm, V }, gatherIndices, labels, 0.05);
  const dims = { tokens: T, hiddenSize: Dm, gatherCount: 4, vocabSize: V, labelCount: 2 };
  const small = await runLmHead({ ...dims, eps: 1e-6 }, x);
  const large = await runLmHead({ ...dims, eps: 0.5 }, x);
  t.ok(ref.maxAbsDiff(small, ref.lmHeadGather({ ...x, T, Dm, V, eps: 1e-6 })) <= TOL, 'eps 1e-6 vs reference');
  t.ok(ref.maxAbsDiff(large, ref.lmHeadGather({ ...x, T, Dm, V, eps: 0.5 })) <= TOL, 'eps 0.5 vs reference');
  t.ok(ref.maxAbsDiff(small, large) > 1e-3, 'the two differ');
});

test('larger vocabulary and sharper logits', async (t) => {
  const [T, Dm, V] = [40, 64, 3001];
  const gatherIndices = [39, 0, 17, 17, 5, -3, 22, -1, 38];
  const labels = [V - 1, 0, 1234];
  const eps = 1e-5;
  const x = makeInputs(3, { T, Dm, V }, gatherIndices, labels, 4);
  const out = await runLmHead(
    { tokens: T, hiddenSize: Dm, gatherCount: gatherIndices.length, vocabSize: V, labelCount: labels.length, eps },
    x,
  );
  const expect = ref.lmHeadGather({ ...x, T, Dm, V, eps });
  const d = realRowsDiff(out, expect, gatherIndices, labels.length);
  t.ok(d <= TOL, `vs reference: ${d.toExponential(2)}`);
  t.ok(out.every(Number.isFinite), 'finite');
});

test('the log-normalizer label reads -logsumexp: label logprob minus it is the raw logit, the other columns unchanged', async (t) => {
  const [T, Dm, V] = [9, 16, 300];
  const gatherIndices = [8, 0, 4, -1];
  const plain = [17, 0, V - 1];
  const labels = [...plain, LOG_NORMALIZER_LABEL];
  t.equal(LOG_NORMALIZER_LABEL, -1, 'the log-normalizer label is -1 (no token id)');
  const x = makeInputs(4, { T, Dm, V }, gatherIndices, labels, 3);
  const dims = { tokens: T, hiddenSize: Dm, gatherCount: gatherIndices.length, vocabSize: V, eps: 1e-6 };
  const out = await runLmHead({ ...dims, labelCount: labels.length }, x);
  const without = await runLmHead({ ...dims, labelCount: plain.length }, { ...x, labels: Int32Array.from(plain) });
  const logits = ref.lmHeadLogits({ ...x, T, Dm, V, eps: 1e-6 });
  let dLogit = 0;
  let dSame = 0;
  let dNorm = 0;
  for (let i = 0; i < 3; i++) {
    const row = logits.subarray(i * V, (i + 1) * V);
    let max = -Infinity;
    for (const l of row) max = Math.max(max, l);
    let sum = 0;
    for (const l of row) sum += Math.exp(l - max);
    dNorm = Math.max(dNorm, Math.abs(out[i * 4 + 3] + (max + Math.log(sum))));
    for (let j = 0; j < 3; j++) {
      dLogit = Math.max(dLogit, Math.abs(out[i * 4 + j] - out[i * 4 + 3] - row[plain[j]]));
      dSame = Math.max(dSame, Math.abs(out[i * 4 + j] - without[i * 3 + j]));
    }
  }
  t.ok(dNorm <= TOL, `the -1 column is -logsumexp of the row's logits (${dNorm.toExponential(2)})`);
  t.ok(dLogit <= TOL, `column minus the -1 column is the raw logit (${dLogit.toExponential(2)})`);
  t.ok(
    dSame <= 1e-6,
    `the other columns are the values the program gives without the -1 label (${dSame.toExponential(2)})`,
  );
});

test("the normalize input: 1 gives the label logprobs, 0 the label logits alone (the JS reference's), labels shared or each row's own", async (t) => {
  const [K, Dm, V] = [5, 16, 300];
  const x = makeInputs(41, { T: K, Dm, V }, [0, 1, 2, 3, 4], [7, V - 1, 0]);
  const shared = [7, V - 1, 0];
  const perRow = Array.from({ length: K }, (_, i) => [i * 11, V - 1 - i, (i * 37) % V]);
  const logits = ref.lmHeadLogits({ ...x, T: K, Dm, V, eps: 1e-6 });
  const lse = Array.from({ length: K }, (_, i) => {
    const row = logits.subarray(i * V, (i + 1) * V);
    const max = Math.max(...row);
    return max + Math.log(row.reduce((sum, l) => sum + Math.exp(l - max), 0));
  });
  for (const [name, labels] of [
    ['shared', shared],
    ['per row', perRow],
  ]) {
    const Lb = 3;
    const dims = name === 'shared' ? [Lb] : [K, Lb];
    const program = buildProgram(`lm_head_normalize_${name.replace(' ', '_')}`, (f) => {
      const rows = f.param(TensorType.f32([K, Dm]), 'rows');
      const norm = f.param(TensorType.f32([Dm]), 'norm');
      const table = f.param(TensorType.f32([V, Dm]), 'table');
      const ids = f.param(TensorType.s32(dims), 'labels');
      const normalize = f.param(TensorType.s32([]), 'normalize');
      const y = lmHeadLabelLogprobs(
        f,
        { rows, finalNormWeight: norm, lmHead: table, labels: ids, normalize },
        { eps: 1e-6 },
      );
      return { y };
    });
    const ids = Int32Array.from(labels.flat());
    for (const normalize of [1, 0]) {
      const [got] = await runProgram(client, program, [
        x.hidden,
        x.finalNormWeight,
        x.lmHead,
        ids,
        Int32Array.of(normalize),
      ]);
      let worst = 0;
      for (let i = 0; i < K; i++)
        for (let j = 0; j < Lb; j++) {
          const label = name === 'shared' ? shared[j] : perRow[i][j];
          const want = logits[i * V + label] - (normalize ? lse[i] : 0);
          worst = Math.max(worst, Math.abs(got[i * Lb + j] - want));
        }
      t.ok(
        worst <= TOL,
        `${name}, normalize ${normalize}: ${normalize ? 'logprobs' : 'logits'} of the reference within ${TOL} (${worst.toExponential(2)})`,
      );
    }
  }
});

test("a bf16 table read through readRows: the label rows widened alone, the logsumexp over the vocabulary in chunks (the last one overlapping the one before), with and without the normalize input, the JS reference's", async (t) => {
  // Three chunks of the head's 8192 rows, the last starting inside the second.
  const [K, Dm, V] = [3, 8, 2 * 8192 + 77];
  const x = makeInputs(43, { T: K, Dm, V }, [0, 1, 2], []);
  const f32 = new Float32Array(1);
  const u32 = new Uint32Array(f32.buffer);
  // The table's bf16 bits (truncated: any bits will do), and the f32 values they hold, for the reference.
  const bits = Uint16Array.from(x.lmHead, (v) => ((f32[0] = v), u32[0] >>> 16));
  const table = Float32Array.from(bits, (b) => ((u32[0] = b << 16), f32[0]));
  const logits = ref.lmHeadLogits({ ...x, lmHead: table, T: K, Dm, V, eps: 1e-6 });
  const lse = Array.from({ length: K }, (_, i) => {
    const row = logits.subarray(i * V, (i + 1) * V);
    const max = row.reduce((m, l) => Math.max(m, l), -Infinity);
    return max + Math.log(row.reduce((sum, l) => sum + Math.exp(l - max), 0));
  });
  const labels = [0, 8191, 8192, 16383, 16384, V - 77, V - 1];
  const Lb = labels.length;
  const readRows = (b, rows) => b.bitcastConvert(b.shiftLeft(b.convert(rows, 'u32'), 16), 'f32');
  for (const withInput of [true, false]) {
    const program = buildProgram(`lm_head_read_rows_${withInput}`, (f) => {
      const rows = f.param(TensorType.f32([K, Dm]), 'rows');
      const norm = f.param(TensorType.f32([Dm]), 'norm');
      const stored = f.param(new TensorType('u16', [V, Dm]), 'table');
      const ids = f.param(TensorType.s32([Lb]), 'labels');
      const normalize = withInput ? { normalize: f.param(TensorType.s32([]), 'normalize') } : {};
      const inputs = { rows, finalNormWeight: norm, lmHead: stored, readRows, labels: ids, ...normalize };
      return { y: lmHeadLabelLogprobs(f, inputs, { eps: 1e-6 }) };
    });
    for (const normalize of withInput ? [1, 0] : [1]) {
      const inputs = [x.hidden, x.finalNormWeight, bits, Int32Array.from(labels)];
      const [got] = await runProgram(client, program, withInput ? [...inputs, Int32Array.of(normalize)] : inputs);
      let worst = 0;
      for (let i = 0; i < K; i++)
        for (let j = 0; j < Lb; j++) {
          const want = logits[i * V + labels[j]] - (normalize ? lse[i] : 0);
          worst = Math.max(worst, Math.abs(got[i * Lb + j] - want));
        }
      t.ok(
        worst <= TOL,
        `${withInput ? `normalize ${normalize}` : 'no normalize input'}: the reference's ${normalize ? 'logprobs' : 'logits'} within ${TOL} (${worst.toExponential(2)})`,
      );
    }
  }
});

test('teardown', (t) => {
  client.dispose();
  t.end();
});
