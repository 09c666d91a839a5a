'use strict';
// `pjrt-score serve --batching cross-request` on the real model: 16 distinct
// requests (16 different queries) sent at once are scored in fewer device
// passes than requests (the /metrics counters), and each answer is within
// CROSS_PROGRAM_BOUND on probabilities of the same request sent alone
// (another compiled program: docs/design.md "Batch invariance"). The flag's bad value is refused
// before anything loads.
const test = require('tape');
const { startService } = require('./helpers/service');
const { CROSS_PROGRAM_BOUND } = require('./helpers/bounds');
const { resolveServeOptions, OptionError } = require('../dist/server/settings/serve-settings');

const BOUND = CROSS_PROGRAM_BOUND;
const LABELS = [9805, 787];
const BODIES = Array.from({ length: 16 }, (_, i) => ({
  query: `Request ${i}: does the candidate name ${['a fruit', 'a vehicle', 'a tool', 'an animal'][i % 4]}? Answer yes or no:`,
  items: [' apple', ' a red bicycle', ' hammer', ' horse', ''].slice(i % 3, 3 + (i % 3)),
  label_token_ids: LABELS,
  apply_softmax: i % 2 === 0,
}));

let service;

/** The value of a counter in the Prometheus exposition (0 when absent). */
async function counter(name) {
  const res = await service.request({ path: '/metrics' });
  const line = res.text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

test('the flag: cross-request or invariant; anything else is refused with the flag named', (t) => {
  t.equal(resolveServeOptions({ batching: 'cross-request' }, {}).batching, 'cross-request', '--batching cross-request');
  t.equal(
    resolveServeOptions({}, { PJRT_SCORE_BATCHING: 'invariant' }).batching,
    'invariant',
    'PJRT_SCORE_BATCHING=invariant',
  );
  t.equal(resolveServeOptions({}, {}).batching, 'invariant', 'unset: the default (invariant)');
  t.throws(
    () => resolveServeOptions({ batching: 'always' }, {}),
    (e) => e instanceof OptionError && e.message === '--batching must be one of invariant, cross-request, got "always"',
    'a bad value names the flag and the choices',
  );
  t.end();
});

test('setup: serve --batching cross-request on the real model', async (t) => {
  service = await startService(['--batching', 'cross-request', '--warmup', 'none', '--timeout-ms', '600000']);
  const ready = service.logs.find((e) => e.event === 'ready');
  t.equal(ready.batching, 'cross-request', 'the ready line says batching cross-request');
});

const alone = [];
test('each request alone, one after another', async (t) => {
  for (const body of BODIES) {
    const res = await service.score(body);
    t.equal(res.status, 200, `alone: 200 ${res.status === 200 ? '' : res.text}`);
    alone.push(res.json.scores);
  }
});

test(`16 distinct requests at once: fewer device passes than requests, each within ${BOUND} of alone`, async (t) => {
  const passesBefore = await counter('pjrt_score_device_passes_total');
  const batchedBefore = await counter('pjrt_score_batched_requests_total');
  const answers = await Promise.all(BODIES.map((body) => service.score(body, { timeoutMs: 600_000 })));
  t.ok(
    answers.every((a) => a.status === 200),
    `all 200 ${answers
      .filter((a) => a.status !== 200)
      .map((a) => a.text)
      .slice(0, 2)
      .join('; ')}`,
  );
  const passes = (await counter('pjrt_score_device_passes_total')) - passesBefore;
  const batched = (await counter('pjrt_score_batched_requests_total')) - batchedBefore;
  t.ok(passes < BODIES.length, `${passes} device passes for ${BODIES.length} requests`);
  t.ok(batched >= 2, `${batched} requests scored in shared passes`);
  let worst = 0;
  let compared = 0;
  answers.forEach((a, i) => {
    t.equal(a.json.scores.length, BODIES[i].items.length, `request ${i}: one row per item`);
    a.json.scores.forEach((row, j) =>
      row.forEach((v, k) => {
        worst = Math.max(worst, Math.abs(v - alone[i][j][k]));
        compared++;
      }),
    );
  });
  t.equal(
    compared,
    BODIES.reduce((n, b) => n + b.items.length * LABELS.length, 0),
    'every score compared',
  );
  t.ok(worst <= BOUND, `max |score - score alone| ${worst.toExponential(2)} <= ${BOUND}`);
});

test('teardown', async (t) => {
  const exit = await service.stop();
  t.equal(exit.code, 0, 'clean exit');
});
