'use strict';
// Requests that run together through the service: a request's scores are
// the same, bit for bit, whether it runs alone or in a batch with 23 copies
// of itself and with requests of other lengths (docs/design.md "Batch invariance"), and the
// batch is real (fewer device turns than requests). Also: the service
// validates and tokenizes a request once (one normalization, one tokenizer
// call per text piece), and the Scorer never re-normalizes it.
const test = require('tape');
const { startInProcessServer } = require('./helpers/in-process-server');
const { postJson } = require('./helpers/service');

const counts = { normalizeBody: 0, encode: 0 };
let server;
let scorer;
/** Turns of the device and the requests they served, from the Scorer's admission queue. */
const turns = () => ({ turns: scorer.stats().turns, requests: scorer.stats().turnRequests });

const post = (body) => postJson(`${server.url}/v1/score`, body);

test('setup: the service on the real model, its Scorer instrumented', async (t) => {
  server = await startInProcessServer({
    scorerOptions: { prefixCacheBytes: 0 },
    onScorer: (s) => {
      scorer = s;
      const encode = scorer.tokenizer.encode.bind(scorer.tokenizer);
      scorer.tokenizer.encode = (text) => (counts.encode++, encode(text));
      // The routes normalize through the off-loop normalizer where the Scorer has one (long texts on a worker).
      const normalizeWith = scorer.normalizeWith.bind(scorer);
      scorer.normalizeWith = (read) => (counts.normalizeBody++, normalizeWith(read));
      const offLoop = scorer.offLoop.normalizeWith.bind(scorer.offLoop);
      scorer.offLoop.normalizeWith = (read) => (counts.normalizeBody++, offLoop(read));
      return scorer;
    },
  });
  t.pass(`listening at ${server.url}`);
});

const QUERY = 'Is the following a fruit? Answer yes or no. Candidate:';
const LABELS = [9805, 787]; // ' yes', ' no'
const base = { query: QUERY, items: [' apple', ' a red bicycle', ''], label_token_ids: LABELS };

test('one request: one normalization, one tokenizer call per text piece', async (t) => {
  const before = { ...counts, ...turns() };
  const r = await post(base);
  t.equal(r.status, 200);
  t.equal(counts.normalizeBody - before.normalizeBody, 1, 'normalized once');
  t.equal(counts.encode - before.encode, 1 + base.items.length, 'the query and each item tokenized once');
  t.equal(turns().turns - before.turns, 1, 'one turn of the device');
});

test('the same request alone and in a batch of 24 copies and other lengths: bit-identical scores', async (t) => {
  const alone = await post(base);
  t.equal(alone.status, 200, 'alone: 200');
  const others = [
    { ...base, items: [' pear'] },
    {
      ...base,
      items: Array.from({ length: 40 }, (_, i) => ` candidate ${i} ${'with some more words '.repeat(i % 5)}`),
    },
    {
      ...base,
      items: [
        ' banana',
        ' a very long description of something that is certainly not a fruit at all, like a car engine',
      ],
    },
  ];
  const before = turns();
  // The first request holds the device while the rest queue up and are taken together.
  const sent = [post(base), ...Array.from({ length: 23 }, () => post(base)), ...others.map((b) => post(b))];
  const answers = await Promise.all(sent);
  t.ok(
    answers.every((a) => a.status === 200),
    `all 200: ${answers
      .filter((a) => a.status !== 200)
      .slice(0, 2)
      .map((a) => a.status + ' ' + JSON.stringify(a.body))
      .join('; ')}`,
  );
  const copies = answers.slice(0, 24);
  const identical = copies.filter((a) => JSON.stringify(a.body.scores) === JSON.stringify(alone.body.scores)).length;
  t.equal(
    identical,
    24,
    `24 of 24 copies equal the request alone, bit for bit (JSON numbers carry every bit of a double)`,
  );
  const calls = turns().turns - before.turns;
  const jobs = turns().requests - before.requests;
  t.equal(jobs, 27, 'every request reached the device once');
  t.ok(calls < jobs, `batched: ${jobs} requests in ${calls} turns of the device`);
  // The other requests against their own runs alone.
  for (const [i, b] of others.entries()) {
    const again = await post(b);
    t.equal(
      JSON.stringify(answers[24 + i].body.scores),
      JSON.stringify(again.body.scores),
      `other request ${i} (${b.items.length} items): batched equals alone`,
    );
  }
});

test('teardown', async (t) => {
  await server.close();
  t.pass('closed');
});
