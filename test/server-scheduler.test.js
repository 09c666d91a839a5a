'use strict';
// The service's queue in front of the Scorer, against a fake backend whose
// calls the test releases by hand: FIFO order, the bound (429), requests
// that share a query taken together into one call (each still its own
// request, answered with its own rows), deadlines that drop waiting work,
// and one member's abort or failure leaving the others.
const test = require('tape');
const { Scheduler, QueueFullError } = require('../dist/server/scheduler');
const { normalizeRequestBody } = require('../dist/scoring/request');
const { ScoreInputError } = require('../dist/scoring/errors');

const CONTEXT = { vocabSize: 1000, contextLength: 64, maxItems: 16, maxRequestTokens: 200, tokenize: (s) => Array.from(s, (c) => c.charCodeAt(0) % 1000), addBos: false };

/** An item's score is a function of its tokens alone. */
function scoresOf(n) {
  return n.itemTokens.map((item) => n.labels.map((l) => (item.reduce((a, b) => a + b, 0) + l) / 1e4));
}

/** A backend that parks every batch until release(); release(i -> error) fails chosen members. */
function fakeBackend() {
  const calls = [];
  return {
    calls,
    modelName: 'fake',
    config: { vocabSize: 1000, contextLength: 64, addBos: false },
    get pending() {
      return calls.filter((c) => !c.done).length;
    },
    tokenize: CONTEXT.tokenize,
    normalizeBody: (body) => normalizeRequestBody(body, CONTEXT),
    stats: () => ({}),
    warmup: async () => undefined,
    dispose: () => undefined,
    scoreBody: async () => {
      throw new Error('the service scores through scoreBatch');
    },
    scoreBatch(jobs) {
      return new Promise((resolve) => {
        const call = { jobs, done: false };
        call.release = (errorFor = () => null) => {
          call.done = true;
          resolve(
            jobs.map((job, i) => {
              const error = job.signal?.aborted ? Object.assign(new Error('aborted'), { name: 'AbortError' }) : errorFor(i);
              if (error) return { ok: false, error };
              const n = job.request;
              return { ok: true, result: { scores: scoresOf(n), usage: { promptTokens: n.promptTokens, completionTokens: 0, totalTokens: n.promptTokens }, algorithm: 'prefix', model: 'fake' } };
            }),
          );
        };
        calls.push(call);
      });
    },
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

function job(body, controller = new AbortController()) {
  return { id: 'x', request: normalizeRequestBody(body, CONTEXT), signal: controller.signal, controller };
}

const expected = (items, labels) => items.map((s) => labels.map((l) => (CONTEXT.tokenize(s).reduce((a, b) => a + b, 0) + l) / 1e4));

test('requests that share query, labels and flags go in one call, each answered with its own rows', async (t) => {
  const backend = fakeBackend();
  const scheduler = new Scheduler(backend, { queueSize: 8, maxConcurrent: 1, coalesce: true, maxItems: 16, maxRequestTokens: 200 });
  const a = scheduler.submit(job({ query: 'qq', items: ['a'], label_token_ids: [1, 2] }));
  const b = scheduler.submit(job({ query: 'qq', items: ['bb', 'c'], label_token_ids: [1, 2] }));
  const other = scheduler.submit(job({ query: 'zz', items: ['d'], label_token_ids: [1, 2] }));
  const c = scheduler.submit(job({ query: 'qq', items: ['eee'], label_token_ids: [1, 2] }));
  const labelsDiffer = scheduler.submit(job({ query: 'qq', items: ['f'], label_token_ids: [3] }));
  await tick();
  t.equal(backend.calls.length, 1, 'one call at a time');
  t.equal(scheduler.queueDepth, 4, 'four waiting');
  backend.calls[0].release();
  t.deepEqual((await a).scores, expected(['a'], [1, 2]), 'the first request alone');
  await tick();
  t.equal(backend.calls.length, 2, 'next call');
  t.deepEqual(
    backend.calls[1].jobs.map((j) => j.request.itemTokens.length),
    [2, 1],
    'b and c in one call, each as its own request, skipping the other query',
  );
  t.equal(scheduler.queueDepth, 2, 'the other query and the other labels still wait, in order');
  backend.calls[1].release();
  const [rb, rc] = await Promise.all([b, c]);
  t.deepEqual(rb.scores, expected(['bb', 'c'], [1, 2]), 'b gets its own rows');
  t.deepEqual(rc.scores, expected(['eee'], [1, 2]), 'c gets its own rows');
  t.equal(rb.batchSize, 2, 'batch size reported');
  t.equal(rb.promptTokens, 2 + 3, 'b usage: its query plus its items');
  t.equal(rc.promptTokens, 2 + 3, 'c usage: its query plus its item');
  await tick();
  t.equal(backend.calls[2].jobs[0].request.queryTokens.length, 2, 'then the other query');
  backend.calls[2].release();
  await other;
  await tick();
  backend.calls[3].release();
  t.deepEqual((await labelsDiffer).scores, expected(['f'], [3]), 'other labels run on their own');
  await scheduler.idle();
});

test('a batch respects the item limit', async (t) => {
  const backend = fakeBackend();
  const scheduler = new Scheduler(backend, { queueSize: 8, maxConcurrent: 1, coalesce: true, maxItems: 4, maxRequestTokens: 200 });
  const first = scheduler.submit(job({ query: 'q', items: ['a'], label_token_ids: [1] }));
  const rest = [0, 1, 2].map(() => scheduler.submit(job({ query: 'q', items: ['a', 'b'], label_token_ids: [1] })));
  await tick();
  backend.calls[0].release();
  await first;
  await tick();
  t.equal(backend.calls[1].jobs.length, 2, 'two requests of 2 items fill the limit of 4');
  backend.calls[1].release();
  await tick();
  await tick();
  t.equal(backend.calls[2].jobs.length, 1, 'the third runs next');
  backend.calls[2].release();
  await Promise.all(rest);
});

test('the queue bound: QueueFullError at once', async (t) => {
  const backend = fakeBackend();
  const scheduler = new Scheduler(backend, { queueSize: 1, maxConcurrent: 1, coalesce: false, maxItems: 16, maxRequestTokens: 200 });
  const running = scheduler.submit(job({ query: 'q', items: ['a'], label_token_ids: [1] }));
  const waiting = scheduler.submit(job({ query: 'q', items: ['b'], label_token_ids: [1] }));
  t.throws(() => scheduler.submit(job({ query: 'q', items: ['c'], label_token_ids: [1] })), QueueFullError, 'the third is refused');
  t.ok(scheduler.retryAfterSeconds() >= 1, 'a Retry-After hint of at least 1 s');
  await tick();
  backend.calls[0].release();
  await running;
  await tick();
  backend.calls[1].release();
  await waiting;
});

test('an aborted waiting request leaves the queue without reaching the backend', async (t) => {
  const backend = fakeBackend();
  const scheduler = new Scheduler(backend, { queueSize: 4, maxConcurrent: 1, coalesce: true, maxItems: 16, maxRequestTokens: 200 });
  const running = scheduler.submit(job({ query: 'q', items: ['a'], label_token_ids: [1] }));
  const doomed = job({ query: 'q', items: ['b'], label_token_ids: [1] });
  const pending = scheduler.submit(doomed);
  await tick();
  doomed.controller.abort(new Error('deadline'));
  await pending.then(
    () => t.fail('should reject'),
    (error) => t.equal(error.name, 'AbortError', 'rejects with an AbortError'),
  );
  t.equal(scheduler.queueDepth, 0, 'removed from the queue');
  backend.calls[0].release();
  await running;
  await scheduler.idle();
  t.equal(backend.calls.length, 1, 'the backend never saw it');
});

test('in a batch, one member aborting or failing leaves the others', async (t) => {
  const backend = fakeBackend();
  const scheduler = new Scheduler(backend, { queueSize: 8, maxConcurrent: 1, coalesce: true, maxItems: 16, maxRequestTokens: 200 });
  const blocker = scheduler.submit(job({ query: 'x', items: ['a'], label_token_ids: [1] }));
  const m1 = job({ query: 'q', items: ['a'], label_token_ids: [1] });
  const m2 = job({ query: 'q', items: ['b'], label_token_ids: [1] });
  const m3 = job({ query: 'q', items: ['c'], label_token_ids: [1] });
  const p1 = scheduler.submit(m1);
  const p2 = scheduler.submit(m2);
  const p3 = scheduler.submit(m3);
  await tick();
  backend.calls[0].release();
  await blocker;
  await tick();
  const batch = backend.calls[1];
  t.equal(batch.jobs.length, 3, 'one call for the three');
  m1.controller.abort(new Error('gone'));
  await p1.catch((error) => t.equal(error.name, 'AbortError', 'the aborted member rejects at once'));
  t.ok(batch.jobs[0].signal.aborted, 'its own signal reaches the backend, which skips its plan');
  batch.release((i) => (i === 2 ? new ScoreInputError('refused', 'items') : null));
  t.deepEqual((await p2).scores, expected(['b'], [1]), 'the other member gets its rows');
  await p3.then(
    () => t.fail('should reject'),
    (error) => t.ok(error instanceof ScoreInputError, 'a failing member gets its own error'),
  );
  await scheduler.idle();
});
