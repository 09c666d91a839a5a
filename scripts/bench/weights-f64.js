#!/usr/bin/env node
'use strict';
// Accuracy of each weight type against the float64 reference forward pass
// (test/helpers/reference-forward.js) of the default model's own weights, on
// the golden sequences of test/fixtures/llama-cpp-golden.json up to 25
// tokens: label probabilities as the Score API returns them (each sequence
// scored as query + one item). Prints max and mean |diff| per weight type.
//   node scripts/bench/weights-f64.js
const { Scorer } = require('../../dist');
const { loadModel } = require('../../dist/model');
const { referenceLogprobs } = require('../../test/helpers/reference-forward');
const golden = require('../../test/fixtures/llama-cpp-golden.json');

async function main() {
  const sequences = golden.sequences.filter(
    (s) => s.tokenIds.length <= 25 && s.queryIds.length > 0 && s.itemIds.length > 0,
  );
  const model = loadModel();
  const reference = sequences.map((s) => {
    const [logprobs] = referenceLogprobs(model.weights, model.config, s.tokenIds, { outputs: [s.tokenIds.length - 1] });
    return s.labels.map((id) => Math.exp(logprobs[id]));
  });
  const rows = [];
  for (const weights of ['f32', 'bf16', 'int8']) {
    const scorer = await Scorer.load({ weights });
    const diffs = [];
    for (let i = 0; i < sequences.length; i++) {
      const s = sequences[i];
      const { scores } = await scorer.score(
        { query: s.queryIds, items: [s.itemIds], labelTokenIds: s.labels },
        { algorithm: 'serial' },
      );
      scores[0].forEach((p, j) => diffs.push(Math.abs(p - reference[i][j])));
    }
    scorer.dispose();
    rows.push({
      weights,
      max: Math.max(...diffs),
      mean: diffs.reduce((a, b) => a + b, 0) / diffs.length,
      probabilities: diffs.length,
    });
  }
  console.log(
    `against the float64 reference, ${sequences.length} golden sequences of ${sequences.map((s) => s.tokenIds.length).join(', ')} tokens:`,
  );
  for (const r of rows)
    console.log(
      `  ${r.weights}: max ${r.max.toExponential(2)}, mean ${r.mean.toExponential(2)} over ${r.probabilities} label probabilities`,
    );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
