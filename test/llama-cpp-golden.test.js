'use strict';
// The real model's label probabilities agree with llama.cpp's on the same
// token ids (golden file made by scripts/lab/goldens/make-goldens.js with
// node-llama-cpp). llama.cpp quantizes activations on the Q4_1 file, so that
// comparison is loose; on the same weights as F32 it is tight.
const test = require('tape');
const { Scorer } = require('..');
const golden = require('./fixtures/llama-cpp-golden.json');

let scorer;
test('setup', async (t) => {
  scorer = await Scorer.load();
  t.pass(`golden: ${golden.tool}, ${golden.sequences.length} sequences`);
});

test('label probabilities agree with llama.cpp on the same token ids', async (t) => {
  const diffsQ = [];
  const diffsF32 = [];
  let worstLogprobF32 = 0;
  for (const s of golden.sequences) {
    // Score the whole sequence as one query with an empty item: read at its last token.
    const r = await scorer.score({ query: s.tokenIds, items: [[]], labelTokenIds: s.labels, algorithm: 'packed' });
    const ours = r.scores[0];
    ours.forEach((p, j) => {
      diffsQ.push(Math.abs(p - s.probabilities[j]));
      diffsF32.push(Math.abs(p - s.f32.probabilities[j]));
      worstLogprobF32 = Math.max(worstLogprobF32, Math.abs(Math.log(p) - s.f32.labelLogprobs[j]));
    });
  }
  const max = (xs) => Math.max(...xs);
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  t.ok(max(diffsQ) <= 0.02, `vs llama.cpp on Q4_1: max |prob diff| ${max(diffsQ).toExponential(2)} <= 0.02`);
  t.ok(mean(diffsQ) <= 0.01, `vs llama.cpp on Q4_1: mean |prob diff| ${mean(diffsQ).toExponential(2)} <= 0.01`);
  t.ok(
    max(diffsF32) <= 1e-3,
    `vs llama.cpp on the same weights in F32: max |prob diff| ${max(diffsF32).toExponential(2)}`,
  );
  t.ok(worstLogprobF32 <= 5e-3, `vs llama.cpp F32: max |logprob diff| ${worstLogprobF32.toExponential(2)} nats`);
});

test('teardown', (t) => {
  scorer.dispose();
  t.end();
});
