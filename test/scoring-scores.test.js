'use strict';
// Label logprobs -> scores (docs/design.md "Scoring semantics"): softmax over labels, or exp.
const test = require('tape');
const { scoresFromLabelLogprobs, softmaxScores, expScores } = require('../dist/scoring');

const close = (t, actual, expected, tol, msg) => {
  const ok = actual.length === expected.length && actual.every((a, i) => Math.abs(a - expected[i]) <= tol);
  t.ok(ok, `${msg}: ${JSON.stringify(actual)} vs ${JSON.stringify(expected)}`);
};

test('apply_softmax: softmax over the labels, rows sum to 1', (t) => {
  const data = Float32Array.from([Math.log(0.2), Math.log(0.6), -3, -3, -1000, -1001, -1e30, -1e30 + 1e24]);
  const rows = scoresFromLabelLogprobs(data, { itemCount: 4, labelCount: 2, applySoftmax: true });
  t.equal(rows.length, 4);
  for (const row of rows) t.ok(Math.abs(row[0] + row[1] - 1) < 1e-12, `row sums to 1: ${row}`);
  close(t, rows[0], [0.25, 0.75], 1e-6, 'relative to each other');
  close(t, rows[1], [0.5, 0.5], 0, 'equal logprobs');
  // Naive exp(-1000) underflows to 0 and would give 0/0: max subtraction keeps it exact.
  close(t, rows[2], [1 / (1 + Math.exp(-1)), Math.exp(-1) / (1 + Math.exp(-1))], 1e-12, 'very negative but finite');
  t.end();
});

test('without apply_softmax: exp(logprob), not normalized', (t) => {
  const data = [Math.log(0.1), Math.log(0.3), 0, -2];
  const rows = scoresFromLabelLogprobs(data, { itemCount: 2, labelCount: 2, applySoftmax: false });
  close(t, rows[0], [0.1, 0.3], 1e-12, 'probabilities over the whole vocabulary');
  close(t, rows[1], [1, Math.exp(-2)], 1e-12, 'exp');
  t.end();
});

test('underflow scores 0, never NaN', (t) => {
  const data = [-Infinity, Math.log(0.5), -1e4, -800, -Infinity, -Infinity];
  const plain = scoresFromLabelLogprobs(data, { itemCount: 3, labelCount: 2, applySoftmax: false });
  t.deepEqual(plain[0], [0, 0.5], '-Infinity -> 0');
  t.deepEqual(plain[1], [0, 0], 'exp underflow -> 0');
  t.deepEqual(plain[2], [0, 0]);
  const soft = scoresFromLabelLogprobs(data, { itemCount: 3, labelCount: 2, applySoftmax: true });
  t.deepEqual(soft[0], [0, 1], '-Infinity next to a finite label -> exactly 0 and 1');
  close(t, soft[1], [Math.exp(-9200), 1], 1e-12, 'finite but far apart: the larger label takes everything');
  t.deepEqual(soft[2], [0, 0], 'every label -Infinity: all zeros (no limit exists), not NaN');
  for (const row of [...plain, ...soft])
    t.ok(
      row.every((x) => !Number.isNaN(x)),
      'no NaN',
    );
  t.end();
});

test('padded rows and columns are skipped', (t) => {
  // K = 3 rows, Lb = 4 columns; 2 real items, 3 real labels. NaN marks padding that must never be read.
  const data = [-1, -2, -3, NaN, -4, -5, -6, NaN, NaN, NaN, NaN, NaN];
  const rows = scoresFromLabelLogprobs(data, { itemCount: 2, labelCount: 3, rowStride: 4, applySoftmax: false });
  close(t, rows[0], [-1, -2, -3].map(Math.exp), 1e-15, 'row 0');
  close(t, rows[1], [-4, -5, -6].map(Math.exp), 1e-15, 'row 1');
  t.deepEqual(
    scoresFromLabelLogprobs([], { itemCount: 0, labelCount: 2, applySoftmax: true }),
    [],
    'no items, no rows',
  );
  t.end();
});

test('invalid logprobs and shapes throw', (t) => {
  t.throws(
    () => scoresFromLabelLogprobs([NaN, 0], { itemCount: 1, labelCount: 2, applySoftmax: true }),
    /item 0, label 0 is NaN/,
  );
  t.throws(
    () => scoresFromLabelLogprobs([0, Infinity], { itemCount: 1, labelCount: 2, applySoftmax: false }),
    /item 0, label 1 is Infinity/,
  );
  t.throws(() => scoresFromLabelLogprobs([0, 0, 0], { itemCount: 2, labelCount: 2, applySoftmax: false }), RangeError);
  t.throws(
    () => scoresFromLabelLogprobs([0, 0], { itemCount: 1, labelCount: 2, rowStride: 1, applySoftmax: false }),
    RangeError,
  );
  t.throws(() => scoresFromLabelLogprobs([0], { itemCount: 1, labelCount: 0, applySoftmax: false }), RangeError);
  t.end();
});

test('row helpers', (t) => {
  close(t, softmaxScores([0, 0, 0, 0]), [0.25, 0.25, 0.25, 0.25], 0, 'uniform');
  close(t, softmaxScores([1000, 1000]), [0.5, 0.5], 0, 'large values do not overflow');
  t.deepEqual(expScores([0, -Infinity]), [1, 0]);
  t.end();
});
