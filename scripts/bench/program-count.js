'use strict';
// How many distinct packed programs mixed small-request traffic compiles, and its padding, under the
// CPU's ladders before and after the finer rungs (docs/performance.md, 'Small requests'); no device:
//
//   node scripts/bench/program-count.js [requests]
//
// Requests: queries of 250-350 tokens, 10-50 items of 12-25 tokens (pseudo-random, fixed seed), each
// planned `packed` with the CPU's budget; printed per ladder set: distinct programs, and token rows
// computed per useful row.
const { bucketLadder, makePlan, programKeyString } = require('../../dist/scoring/planning');
const { platformFacts } = require('../../dist/scoring/platform');

const requests = Number(process.argv[2] ?? 2000);
const facts = platformFacts('cpu');
const fixed = {
  tokens: bucketLadder({ min: 8, max: 8192, steps: [1.5], align: 8 }),
  itemTokens: bucketLadder({ min: 8, max: 8192, steps: [1.25, 1.5, 1.75], align: 4 }),
  labels: bucketLadder({ min: 2, max: 49152 }),
};
const LADDERS = {
  "before (counts 1.5x, queries on the item lengths' ladder)": {
    ...fixed,
    counts: bucketLadder({ min: 1, max: 4096, steps: [1.5] }),
  },
  'counts 1.25x only': { ...fixed, counts: bucketLadder({ min: 1, max: 4096, steps: facts.countSteps }) },
  'now (counts 1.25x, queries in sixteenths)': {
    ...fixed,
    counts: bucketLadder({ min: 1, max: 4096, steps: facts.countSteps }),
    queryTokens: bucketLadder({ min: 8, max: 8192, steps: facts.queryTokenSteps, align: 4 }),
  },
};

let seed = 7;
const between = (a, b) => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 1;
  return a + (seed % (b - a + 1));
};
const shapes = Array.from({ length: requests }, () => {
  const n = between(10, 50);
  const l = between(15, 25);
  return {
    queryLength: between(250, 350),
    itemLengths: Array.from({ length: n }, () => between(l - 3, l)),
    labelCount: 2,
    itemFirst: false,
  };
});
for (const [name, ladders] of Object.entries(LADDERS)) {
  const sizing = { ladders, budget: facts.budget, numHeads: 9 };
  const keys = new Set();
  let rows = 0;
  let useful = 0;
  for (const s of shapes) {
    const plan = makePlan('packed', s, sizing);
    for (const pass of plan.passes) {
      keys.add(programKeyString(pass.program));
      rows += pass.program.prefix + pass.program.items * pass.program.itemLength;
    }
    useful += s.queryLength * plan.passes.length + s.itemLengths.reduce((a, b) => a + b, 0);
  }
  console.log(`${name}: ${keys.size} distinct programs, ${(rows / useful).toFixed(3)} rows computed per useful row`);
}
