'use strict';
// A Scorer's lifetime (docs/scorer-api.md): close() stops taking calls,
// answers every call already made (those waiting for the device too) and then
// disposes; dispose() frees the device now, and every call still waiting, or
// made later, rejects with the one DisposedError (code ERR_DISPOSED) on every
// path: score, scoreBatch, rerank, normalize, warmup. The reference scores are
// the same requests scored one at a time before (the same compiled programs:
// bit for bit).
const test = require('tape');
const { Scorer, DisposedError } = require('../dist');

const LABELS = [9805, 787];
/** Requests with different queries, so none shares a turn with another (coalescing is per query). */
const requests = [0, 1, 2, 3].map((i) => ({
  query: `Question ${i}: is the number ${i * 7} larger than ten?`,
  items: [' yes', ' no', ' it is exactly ten'],
  labelTokenIds: LABELS,
}));

const isDisposed = (e) => e instanceof DisposedError && e.code === 'ERR_DISPOSED';

/** Settles each promise into { ok, value } or { ok: false, error }. */
const settled = (promises) =>
  Promise.all(
    promises.map((p) =>
      p.then(
        (value) => ({ ok: true, value }),
        (error) => ({ ok: false, error }),
      ),
    ),
  );

let reference;

test('setup: each request scored alone', async (t) => {
  const scorer = await Scorer.load({ diskCache: false });
  reference = [];
  for (const r of requests) reference.push((await scorer.score(r)).scores);
  scorer.dispose();
  t.equal(reference.length, requests.length, 'reference scores');
  t.end();
});

test('close(): every call made before it is answered, waiting ones included; later calls reject; then disposed', async (t) => {
  const scorer = await Scorer.load({ diskCache: false });
  const calls = requests.map((r) => scorer.score(r));
  // The first call's turn starts at the end of this event-loop turn; the others wait behind it.
  await new Promise((resolve) => setImmediate(resolve));
  t.ok(scorer.queueDepth > 0, `calls wait for the device when close() is called (${scorer.queueDepth} waiting)`);
  const closing = scorer.close();
  t.equal(scorer.close(), closing, 'close() is idempotent: the same promise');
  const late = await settled([scorer.score(requests[0]), scorer.rerank({ query: 'q', documents: ['d'] })]);
  t.ok(
    late.every((o) => !o.ok && isDisposed(o.error) && /is closing/.test(o.error.message)),
    'a call made after close() rejects with DisposedError (is closing)',
  );
  const results = await settled(calls);
  t.ok(
    results.every((o) => o.ok),
    'every call made before close() resolved',
  );
  results.forEach((o, i) => t.deepEqual(o.value.scores, reference[i], `call ${i}: the scores of the request alone`));
  await closing;
  const after = await settled([
    scorer.score(requests[0]),
    scorer.scoreBatch([{ request: requests[0] }]),
    scorer.warmup([{ queryTokens: 8, itemTokens: 4, items: 2 }], false),
  ]);
  t.ok(
    after.every((o) => !o.ok && isDisposed(o.error) && /has been disposed/.test(o.error.message)),
    'after close() resolved, calls reject with DisposedError (has been disposed)',
  );
  t.throws(() => scorer.normalize(requests[0]), isDisposed, 'normalize() throws DisposedError');
  scorer.dispose();
  t.pass('dispose() after close() is a no-op');
  t.end();
});

test('dispose(): waiting calls reject with DisposedError at once, the running one finishes or rejects with it', async (t) => {
  const scorer = await Scorer.load({ diskCache: false });
  const calls = requests.map((r) => scorer.score(r));
  await new Promise((resolve) => setImmediate(resolve));
  const waiting = scorer.queueDepth;
  t.ok(waiting > 0, `${waiting} calls wait for the device`);
  scorer.dispose();
  t.equal(scorer.queueDepth, 0, 'nothing waits after dispose()');
  const results = await settled(calls);
  const rejected = results.filter((o) => !o.ok);
  t.ok(rejected.length >= waiting, `every waiting call rejected (${rejected.length} of ${results.length})`);
  t.ok(
    rejected.every((o) => isDisposed(o.error)),
    'each with DisposedError',
  );
  results.forEach((o, i) => {
    if (o.ok) t.deepEqual(o.value.scores, reference[i], `call ${i} was on the device and finished with its own scores`);
  });
  const after = await settled([
    scorer.score(requests[0]),
    scorer.rerank({ query: 'q', documents: ['d'] }),
    scorer.close(),
  ]);
  t.ok(
    after.slice(0, 2).every((o) => !o.ok && isDisposed(o.error)),
    'later calls reject with DisposedError',
  );
  t.ok(after[2].ok, 'close() after dispose() resolves');
  t.end();
});

test('await using: leaving the block closes the Scorer after its calls', async (t) => {
  let outer;
  let pending;
  {
    // `await using` is not syntax in Node 20; this is what it calls on leaving the block.
    const scorer = await Scorer.load({ diskCache: false });
    outer = scorer;
    pending = scorer.score(requests[1]);
    await scorer[Symbol.asyncDispose]();
  }
  const r = await pending;
  t.deepEqual(r.scores, reference[1], 'the call made in the block was answered');
  const after = await settled([outer.score(requests[1])]);
  t.ok(!after[0].ok && isDisposed(after[0].error), 'and the Scorer is disposed');
  t.end();
});
