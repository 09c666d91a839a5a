'use strict';
// makeBatchPlan (cross-request batching as data), checked by plain loops over
// its output: every item of every request is scored exactly once, each
// request in one group of one pass or alone; every pass holds its budgets
// with its bucketed sizes; G and the per-group sizes are rungs of the
// ladders and cover each member; requests that cannot join run alone.
const test = require('tape');
const { makeBatchPlan, canJoinBatch } = require('../dist/scoring/planning/batch-plan');
const { prng } = require('./helpers/prng');

const LADDERS = {
  tokens: [8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512],
  itemTokens: [8, 12, 16, 20, 24, 28, 32, 40, 48, 64, 80, 96, 128, 160, 192, 256, 320, 384, 512],
  counts: [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64],
  labels: [2, 4, 8, 16],
};
const SIZING = {
  ladders: LADDERS,
  budget: { tokensPerPass: 1536, scoreBytesPerPass: 256 * 2 ** 20, batchRowsPerPass: 4096 },
  numHeads: 9,
};

const atLeast = (n, ladder) => ladder.find((v) => v >= n);

/** Every property the plan must have, as a list of broken ones (empty when it holds). */
function violations(plan, shapes, sizing) {
  const bad = [];
  const seen = shapes.map((s) => new Array(s.itemLengths.length).fill(0));
  const placed = new Array(shapes.length).fill(0);
  for (const i of plan.alone) {
    placed[i]++;
    seen[i].fill(1);
  }
  plan.passes.forEach((pass, p) => {
    const k = pass.program;
    if (k.program !== 'decoder_fused') bad.push(`pass ${p}: program ${k.program}`);
    if (!LADDERS.counts.includes(k.groups)) bad.push(`pass ${p}: G=${k.groups} is not on the count ladder`);
    if (pass.groups.length < 2) bad.push(`pass ${p}: ${pass.groups.length} group(s) is no batch`);
    if (pass.groups.length > k.groups) bad.push(`pass ${p}: ${pass.groups.length} groups in G=${k.groups}`);
    if (atLeast(pass.groups.length, LADDERS.counts) !== k.groups)
      bad.push(`pass ${p}: G=${k.groups} is not the bucket of ${pass.groups.length} groups`);
    const itemRows = k.items * k.itemLength;
    const rows = k.groups * (k.prefix + itemRows);
    const scoreBytes = k.groups * sizing.numHeads * (k.prefix * k.prefix + itemRows * (k.prefix + k.itemLength)) * 4;
    if (rows > sizing.budget.batchRowsPerPass)
      bad.push(`pass ${p}: ${rows} rows over ${sizing.budget.batchRowsPerPass}`);
    if (k.groups * itemRows > sizing.budget.tokensPerPass)
      bad.push(`pass ${p}: ${k.groups * itemRows} item rows over ${sizing.budget.tokensPerPass}`);
    if (scoreBytes > sizing.budget.scoreBytesPerPass) bad.push(`pass ${p}: ${scoreBytes} score bytes over budget`);
    for (const g of pass.groups) {
      const s = shapes[g.request];
      placed[g.request]++;
      if (s.itemFirst) bad.push(`pass ${p}: item_first request ${g.request} joined`);
      if (k.prefix < s.queryLength)
        bad.push(`pass ${p}: P=${k.prefix} < query ${s.queryLength} of request ${g.request}`);
      if (g.items.length > k.items) bad.push(`pass ${p}: ${g.items.length} items in N=${k.items}`);
      if (k.labels < s.labelCount || atLeast(s.labelCount, LADDERS.labels) !== k.labels)
        bad.push(`pass ${p}: B=${k.labels} is not the label bucket of request ${g.request}`);
      for (const item of g.items) {
        seen[g.request][item]++;
        if (s.itemLengths[item] > k.itemLength)
          bad.push(`pass ${p}: item of ${s.itemLengths[item]} tokens in L=${k.itemLength}`);
      }
    }
    if (
      !LADDERS.itemTokens.includes(k.prefix) ||
      !LADDERS.itemTokens.includes(k.itemLength) ||
      !LADDERS.counts.includes(k.items)
    )
      bad.push(`pass ${p}: sizes off the ladders`);
  });
  placed.forEach((n, i) => n !== 1 && bad.push(`request ${i} placed ${n} times`));
  seen.forEach((items, i) => items.forEach((n, j) => n !== 1 && bad.push(`request ${i} item ${j} scored ${n} times`)));
  return bad;
}

function randomShapes(rng, count) {
  return Array.from({ length: count }, () => {
    const kind = rng.next();
    const items = kind < 0.05 ? 0 : 1 + Math.floor(rng.next() * (kind < 0.9 ? 12 : 200));
    return {
      queryLength: 1 + Math.floor(rng.next() * (kind < 0.8 ? 300 : 900)),
      itemLengths: Array.from({ length: items }, () => Math.floor(rng.next() * (kind < 0.7 ? 24 : 120))),
      labelCount: rng.next() < 0.8 ? 2 : 3 + Math.floor(rng.next() * 10),
      itemFirst: rng.next() < 0.05,
    };
  });
}

test('random batches: every item of every request exactly once, budgets held, G bucketed', (t) => {
  const rng = prng(17);
  let passes = 0;
  let joined = 0;
  for (let trial = 0; trial < 300; trial++) {
    const shapes = randomShapes(rng, 1 + Math.floor(rng.next() * 40));
    const plan = makeBatchPlan(shapes, SIZING);
    const bad = violations(plan, shapes, SIZING);
    if (bad.length) {
      t.fail(`trial ${trial}: ${bad.slice(0, 5).join('; ')}`);
      return t.end();
    }
    passes += plan.passes.length;
    joined += plan.passes.reduce((n, p) => n + p.groups.length, 0);
  }
  t.ok(
    passes > 100 && joined > 2 * passes,
    `300 random batches hold every property (${joined} requests in ${passes} shared passes)`,
  );
  t.end();
});

test('the PR workload: 16 requests of 300-token queries and 10 items of 20 tokens', (t) => {
  const shapes = Array.from({ length: 16 }, () => ({
    queryLength: 300,
    itemLengths: new Array(10).fill(20),
    labelCount: 2,
    itemFirst: false,
  }));
  const plan = makeBatchPlan(shapes, SIZING);
  t.deepEqual(violations(plan, shapes, SIZING), [], 'every property holds');
  // One group is 320 + 12 x 20 = 560 rows: 4096 rows hold 7, so passes of 6 (a rung); the last 4 pad nothing.
  t.deepEqual(
    plan.passes.map((p) => [p.program.groups, p.groups.length]),
    [
      [6, 6],
      [6, 6],
      [4, 4],
    ],
    'passes of G=6, 6, 4',
  );
  t.deepEqual(plan.alone, [], 'none alone');
  t.deepEqual(
    plan.passes[0].program,
    { program: 'decoder_fused', groups: 6, prefix: 320, items: 12, itemLength: 20, labels: 2 },
    'per-group buckets',
  );
  t.end();
});

test('who runs alone: item_first, no items, too large, a label bucket of its own, a lone remainder', (t) => {
  const small = { queryLength: 20, itemLengths: [3, 4], labelCount: 2, itemFirst: false };
  const shapes = [
    small,
    { ...small, itemFirst: true },
    { ...small, itemLengths: [] },
    { ...small, queryLength: 500, itemLengths: new Array(200).fill(20) }, // 4,000 item rows: over the per-pass budget alone
    { ...small, labelCount: 5 }, // the only request of its label bucket
    small,
  ];
  const plan = makeBatchPlan(shapes, SIZING);
  t.deepEqual(violations(plan, shapes, SIZING), [], 'every property holds');
  t.deepEqual(plan.alone, [1, 2, 3, 4], 'item_first, empty, too large and the lone label bucket run alone');
  t.deepEqual(
    plan.passes.map((p) => p.groups.map((g) => g.request)),
    [[0, 5]],
    'the two small requests share one pass',
  );
  t.equal(canJoinBatch(shapes[1], SIZING), false, 'canJoinBatch: item_first cannot join');
  t.equal(canJoinBatch(shapes[3], SIZING), false, 'canJoinBatch: too large cannot join');
  t.equal(canJoinBatch(small, SIZING), true, 'canJoinBatch: a small request can');
  const one = makeBatchPlan([small], SIZING);
  t.deepEqual([one.passes.length, one.alone], [0, [0]], 'a single request runs alone (its own plan)');
  t.end();
});

test('the last pass of a label bucket pads groups; earlier passes are cut to a rung', (t) => {
  // 5 groups of 20 + 2 x 8 = 36 rows; a budget of 180 rows fits 5 but 5 is no rung: passes of 4, then 1 (alone).
  const sizing = { ...SIZING, budget: { ...SIZING.budget, batchRowsPerPass: 180 } };
  const shapes = Array.from({ length: 5 }, () => ({
    queryLength: 20,
    itemLengths: [8, 8],
    labelCount: 2,
    itemFirst: false,
  }));
  const plan = makeBatchPlan(shapes, sizing);
  t.deepEqual(violations(plan, shapes, sizing), [], 'every property holds');
  t.deepEqual(
    plan.passes.map((p) => [p.program.groups, p.groups.length]),
    [[4, 4]],
    'a pass of 4',
  );
  t.equal(plan.alone.length, 1, 'the fifth runs alone');
  // 7 requests under a budget of 8 groups: one pass of G=8 with one padding group.
  const seven = Array.from({ length: 7 }, () => shapes[0]);
  const padded = makeBatchPlan(seven, SIZING);
  t.deepEqual(
    padded.passes.map((p) => [p.program.groups, p.groups.length]),
    [[8, 7]],
    'the last pass: 7 requests in G=8',
  );
  t.end();
});
