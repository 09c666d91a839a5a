'use strict';
// The auto selector's choices follow from its cost model: an independent
// FLOP count here decides what it should pick for the seeds' shapes.
const test = require('tape');
const { chooseAlgorithm, costModelFor, bucketLadder } = require('../dist/scoring');

// SmolLM2-135M's shape.
const config = { hiddenSize: 576, intermediateSize: 1536, numLayers: 30, numHeads: 9, numKvHeads: 3, headDim: 64 };
const ladders = {
  tokens: bucketLadder({ min: 8, max: 8192, steps: [1.5], align: 8 }),
  itemTokens: bucketLadder({ min: 8, max: 8192, steps: [1.25, 1.5, 1.75], align: 4 }),
  counts: bucketLadder({ min: 1, max: 4096, steps: [1.5] }),
  labels: bucketLadder({ min: 2, max: 49152 }),
};
const budget = { tokensPerPass: 1536, scoreBytesPerPass: 256 * 2 ** 20 };
const shape = (P, N, L, itemFirst = false) => ({
  queryTokens: new Array(P).fill(1),
  itemTokens: Array.from({ length: N }, () => new Array(L).fill(1)),
  labels: [1, 2],
  itemFirst,
});

test('item_first is always serial', (t) => {
  const c = chooseAlgorithm(shape(300, 100, 10, true), ladders, budget, costModelFor(config), 9, false);
  t.equal(c.algorithm, 'serial');
  t.end();
});

test('a long query with many items: the query once beats it per item by far', (t) => {
  const c = chooseAlgorithm(shape(2000, 500, 20), ladders, budget, costModelFor(config), 9, false);
  t.notEqual(c.algorithm, 'serial', `picked ${c.algorithm}`);
  // Serial recomputes the 2000-token query for every item: at least 100x the FLOPs of any shared-query plan.
  t.ok(c.costs.serial > 50 * Math.min(c.costs.packed, c.costs.prefix), `serial ${c.costs.serial.toExponential(2)} vs best ${Math.min(c.costs.packed, c.costs.prefix).toExponential(2)}`);
  // Packed must recompute the query in every chunk of items; prefix computes it once.
  t.equal(c.algorithm, 'prefix', 'prefix: 500 items need several passes, and only prefix keeps the query between them');
  t.end();
});

test('everything fits in one pass: packed (no second program)', (t) => {
  const c = chooseAlgorithm(shape(300, 10, 10), ladders, budget, costModelFor(config), 9, false);
  t.equal(c.algorithm, 'packed');
  t.ok(c.costs.packed < c.costs.prefix, 'one pass costs less than prefill + extend');
  t.end();
});

test('a cached query makes prefix cheapest', (t) => {
  const c = chooseAlgorithm(shape(300, 10, 10), ladders, budget, costModelFor(config), 9, true);
  t.equal(c.algorithm, 'prefix');
  t.equal(c.reason, 'query K/V cached');
  t.end();
});
