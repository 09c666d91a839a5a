'use strict';
// Cross-request batching on the real model (Scorer option batching:
// 'cross-request'): 16 concurrent score() calls with 16 different queries,
// sent while the device is busy, go together in fewer device passes than
// requests, and each gets its own scores: those of the same request run
// alone (its own plan), within CROSS_PROGRAM_BOUND on probabilities (another
// compiled program, so not bit for bit: docs/design.md "Batch invariance"). Requests that
// cannot join (item_first, a forced serial plan) run alone, bit for bit as
// alone; a call aborted while it waits rejects and the others are answered.
const test = require('tape');
const { Scorer } = require('../dist/scoring/scorer');
const { CROSS_PROGRAM_BOUND } = require('./helpers/bounds');

/** Stated bound: cross-request scores against the same request alone, absolute, on probabilities. */
const BOUND = CROSS_PROGRAM_BOUND;
const LABELS = [9805, 787]; // ' yes', ' no'
const TOPICS = ['a fruit', 'an animal', 'a tool', 'a colour', 'a city', 'a planet', 'a metal', 'a dance'];
const NOUNS = [' apple', ' a red bicycle', ' hammer', ' Paris', ' copper', ' tango', ' Mars', ' green', ''];

/** 16 requests, each with its own query, 2 to 5 items (one of them the empty item), some with softmax. */
const REQUESTS = Array.from({ length: 16 }, (_, i) => ({
  query: `Question ${i}: is the following ${TOPICS[i % TOPICS.length]}? Answer yes or no. Candidate:`,
  items: Array.from({ length: 2 + (i % 4) }, (_, j) => NOUNS[(i + 3 * j) % NOUNS.length]),
  labelTokenIds: LABELS,
  applySoftmax: i % 3 === 0,
}));

let scorer;
const alone = [];

function maxDiff(a, b) {
  let worst = 0;
  a.forEach((row, i) => row.forEach((v, j) => (worst = Math.max(worst, Math.abs(v - b[i][j])))));
  return worst;
}

test('setup: the real model, batching cross-request; each request scored alone first', async (t) => {
  scorer = await Scorer.load({ batching: 'cross-request', prefixCacheBytes: 0 });
  t.equal(scorer.batching, 'cross-request', 'the option is kept');
  const before = scorer.stats();
  // One at a time: each call finds the device idle and runs its own plan.
  for (const r of REQUESTS) alone.push(await scorer.score(r));
  const after = scorer.stats();
  t.equal(after.batchedPasses - before.batchedPasses, 0, 'a request alone shares no pass');
  t.ok(
    after.devicePasses - before.devicePasses >= REQUESTS.length,
    `alone: ${after.devicePasses - before.devicePasses} device passes for ${REQUESTS.length} requests`,
  );
});

test(`16 concurrent distinct requests: fewer device passes than requests, each within ${BOUND} of its result alone`, async (t) => {
  const before = scorer.stats();
  // A forced serial plan cannot join: it holds the device while the 16 calls arrive and wait.
  const busy = scorer.score({ ...REQUESTS[0], algorithm: 'serial' });
  const together = await Promise.all(REQUESTS.map((r) => scorer.score(r)));
  const serial = await busy;
  const after = scorer.stats();
  const passes = after.devicePasses - before.devicePasses;
  const serialPasses = scorer.explain({ ...REQUESTS[0], algorithm: 'serial' }).passes.length;
  t.equal(after.batchedRequests - before.batchedRequests, 16, 'all 16 ran in shared passes');
  t.ok(
    passes - serialPasses < 16,
    `${passes - serialPasses} device passes for 16 requests (${after.batchedPasses - before.batchedPasses} shared)`,
  );
  let worst = 0;
  let compared = 0;
  together.forEach((r, i) => {
    t.equal(r.scores.length, REQUESTS[i].items.length, `request ${i}: one row per item`);
    worst = Math.max(worst, maxDiff(r.scores, alone[i].scores));
    compared += r.scores.flat().filter(Number.isFinite).length;
  });
  t.equal(
    compared,
    REQUESTS.reduce((n, r) => n + r.items.length * LABELS.length, 0),
    'every score of every request is a finite number',
  );
  t.ok(worst <= BOUND, `max |score - score alone| over 16 requests: ${worst.toExponential(2)} <= ${BOUND}`);
  t.ok(
    maxDiff(serial.scores, alone[0].scores) <= 1e-4,
    'the serial request agrees with the packed plan (docs/design.md "Scoring semantics")',
  );
  t.deepEqual(
    together.map((r) => r.usage.promptTokens),
    alone.map((r) => r.usage.promptTokens),
    'usage: each request counts its own tokens',
  );
});

test('a request that cannot join runs its own plan, bit for bit as alone', async (t) => {
  const itemFirst = { ...REQUESTS[1], itemFirst: true };
  const first = await scorer.score(itemFirst);
  const busy = scorer.score({ ...REQUESTS[2], algorithm: 'serial' });
  const [again, ...others] = await Promise.all([
    scorer.score(itemFirst),
    ...REQUESTS.slice(0, 4).map((r) => scorer.score(r)),
  ]);
  await busy;
  t.equal(
    JSON.stringify(again.scores),
    JSON.stringify(first.scores),
    'item_first among concurrent calls: bit-identical to alone',
  );
  t.ok(
    others.every((r, i) => maxDiff(r.scores, alone[i].scores) <= BOUND),
    'the others still within the bound',
  );
});

test('a call aborted while it waits rejects; the rest of its batch is answered', async (t) => {
  const busy = scorer.score({ ...REQUESTS[3], algorithm: 'serial' });
  const controller = new AbortController();
  const calls = REQUESTS.slice(0, 4).map((r, i) => scorer.score(r, i === 1 ? { signal: controller.signal } : {}));
  controller.abort();
  const settled = await Promise.allSettled(calls);
  await busy;
  t.equal(settled[1].status, 'rejected', 'the aborted call rejects');
  t.equal(settled[1].reason && settled[1].reason.name, 'AbortError', 'with an AbortError');
  t.ok(
    [0, 2, 3].every(
      (i) => settled[i].status === 'fulfilled' && maxDiff(settled[i].value.scores, alone[i].scores) <= BOUND,
    ),
    'the other three are answered',
  );
});

test('warmup compiles the shared passes: batches of a warmed shape then compile nothing', async (t) => {
  const ids = (n, seed) => Array.from({ length: n }, (_, i) => 200 + ((seed * 37 + i * 11) % 30000));
  const shape = { queryTokens: 12, itemTokens: 4, items: 3, labels: 2 };
  const request = (seed) => ({
    query: ids(12, seed),
    items: [ids(4, seed + 1), ids(4, seed + 2), ids(4, seed + 3)],
    labelTokenIds: LABELS,
  });
  await scorer.warmup([shape, { ...shape, algorithm: 'serial' }], false);
  const before = scorer.stats();
  const busy = scorer.score({ ...request(1), algorithm: 'serial' });
  const answers = await Promise.all([2, 3, 4, 5, 6].map((seed) => scorer.score(request(seed * 10))));
  await busy;
  const after = scorer.stats();
  t.equal(answers.length, 5, 'five requests answered');
  t.equal(after.batchedRequests - before.batchedRequests, 5, 'in shared passes');
  t.equal(after.jit.compiles - before.jit.compiles, 0, 'no compile on the request path');
  t.equal(after.jit.misses - before.jit.misses, 0, 'no lookup waited for a load');
});

test('the option is checked before anything loads', async (t) => {
  try {
    await Scorer.load({ batching: 'sometimes' });
    t.fail('no error');
  } catch (error) {
    t.equal(error.message, 'batching must be one of invariant, cross-request; got "sometimes"', error.message);
  }
});

test('teardown', (t) => {
  scorer.dispose();
  t.end();
});
