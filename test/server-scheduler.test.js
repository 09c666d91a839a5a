'use strict';
// The service's queue in front of the Scorer, against a fake backend whose
// calls the test releases by hand: FIFO order, the bound (429), requests
// that share a query merged into one call and split back exactly, deadlines
// that drop waiting work, and a merged call refused as a whole re-run alone.
const test = require('tape');
const { Scheduler, QueueFullError } = require('../dist/server/scheduler');
const { normalizeRequestBody, ScoreInputError } = require('../dist/scoring');

const CONTEXT = { vocabSize: 1000, contextLength: 64, maxItems: 16, maxRequestTokens: 200, tokenize: (s) => Array.from(s, (c) => c.charCodeAt(0) % 1000), addBos: false };

/** A backend that parks every call until release(); an item's score is a function of its tokens alone. */
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
    stats: () => ({}),
    warmup: async () => undefined,
    dispose: () => undefined,
    scoreBody(body, { signal } = {}) {
      return new Promise((resolve, reject) => {
        const call = { body, signal, done: false };
        call.release = (error) => {
          call.done = true;
          if (error) return reject(error);
          const n = normalizeRequestBody(body, CONTEXT);
          const scores = n.itemTokens.map((item) => n.labels.map((l) => (item.reduce((a, b) => a + b, 0) + l) / 1e4));
          resolve({ scores, usage: { promptTokens: n.promptTokens, completionTokens: 0, totalTokens: n.promptTokens }, algorithm: 'prefix', model: 'fake' });
        };
        signal?.addEventListener('abort', () => {
          if (!call.done) {
            call.done = true;
            const e = new Error('aborted');
            e.name = 'AbortError';
            reject(e);
          }
        });
        calls.push(call);
      });
    },
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

function job(body, controller = new AbortController()) {
  return { id: 'x', request: normalizeRequestBody(body, CONTEXT), rawBody: body, signal: controller.signal, controller };
}

const expected = (items, labels) => items.map((s) => labels.map((l) => (CONTEXT.tokenize(s).reduce((a, b) => a + b, 0) + l) / 1e4));

test('requests that share query, labels and flags are merged and split back exactly', async (t) => {
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
  t.deepEqual(backend.calls[1].body.items.length, 3, 'b and c merged (3 items), skipping the other query');
  t.equal(scheduler.queueDepth, 2, 'the other query and the other labels still wait, in order');
  backend.calls[1].release();
  const [rb, rc] = await Promise.all([b, c]);
  t.deepEqual(rb.scores, expected(['bb', 'c'], [1, 2]), 'b gets its own rows');
  t.deepEqual(rc.scores, expected(['eee'], [1, 2]), 'c gets its own rows');
  t.equal(rb.batchSize, 2, 'batch size reported');
  t.equal(rb.promptTokens, 2 + 3, 'b usage: the query once plus its items');
  t.equal(rc.promptTokens, 2 + 3, 'c usage: the query once plus its item');
  await tick();
  t.equal(backend.calls[2].body.query.length, 2, 'then the other query');
  backend.calls[2].release();
  await other;
  await tick();
  backend.calls[3].release();
  t.deepEqual((await labelsDiffer).scores, expected(['f'], [3]), 'other labels run on their own');
  await scheduler.idle();
});

test('merging respects the item limit', async (t) => {
  const backend = fakeBackend();
  const scheduler = new Scheduler(backend, { queueSize: 8, maxConcurrent: 1, coalesce: true, maxItems: 4, maxRequestTokens: 200 });
  const first = scheduler.submit(job({ query: 'q', items: ['a'], label_token_ids: [1] }));
  const rest = [0, 1, 2].map(() => scheduler.submit(job({ query: 'q', items: ['a', 'b'], label_token_ids: [1] })));
  await tick();
  backend.calls[0].release();
  await first;
  await tick();
  t.equal(backend.calls[1].body.items.length, 4, 'two requests of 2 items fill the limit of 4');
  backend.calls[1].release();
  await tick();
  await tick();
  t.equal(backend.calls[2].body.items.length, 2, 'the third runs next');
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

test('in a merged call, one member aborting leaves the others; all aborting aborts the call', async (t) => {
  const backend = fakeBackend();
  const scheduler = new Scheduler(backend, { queueSize: 8, maxConcurrent: 1, coalesce: true, maxItems: 16, maxRequestTokens: 200 });
  const blocker = scheduler.submit(job({ query: 'x', items: ['a'], label_token_ids: [1] }));
  const m1 = job({ query: 'q', items: ['a'], label_token_ids: [1] });
  const m2 = job({ query: 'q', items: ['b'], label_token_ids: [1] });
  const p1 = scheduler.submit(m1);
  const p2 = scheduler.submit(m2);
  await tick();
  backend.calls[0].release();
  await blocker;
  await tick();
  const merged = backend.calls[1];
  t.equal(merged.body.items.length, 2, 'merged');
  m1.controller.abort(new Error('gone'));
  await p1.catch((error) => t.equal(error.name, 'AbortError', 'the aborted member rejects at once'));
  t.notOk(merged.signal.aborted, 'the call goes on for the other member');
  merged.release();
  t.deepEqual((await p2).scores, expected(['b'], [1]), 'the other member gets its rows');

  const m3 = job({ query: 'r', items: ['a'], label_token_ids: [1] });
  const m4 = job({ query: 'r', items: ['b'], label_token_ids: [1] });
  const blocker2 = scheduler.submit(job({ query: 'x', items: ['a'], label_token_ids: [1] }));
  const p3 = scheduler.submit(m3).catch((e) => e);
  const p4 = scheduler.submit(m4).catch((e) => e);
  await tick();
  backend.calls[2].release();
  await blocker2;
  await tick();
  m3.controller.abort(new Error('gone'));
  m4.controller.abort(new Error('gone'));
  await Promise.all([p3, p4]);
  t.ok(backend.calls[3].signal.aborted, 'every member gone: the call is aborted (the work is dropped)');
  await scheduler.idle();
});

test('a merged call refused with a ScoreInputError is re-run request by request', async (t) => {
  const backend = fakeBackend();
  const scheduler = new Scheduler(backend, { queueSize: 8, maxConcurrent: 1, coalesce: true, maxItems: 16, maxRequestTokens: 200 });
  const blocker = scheduler.submit(job({ query: 'x', items: ['a'], label_token_ids: [1] }));
  const p1 = scheduler.submit(job({ query: 'q', items: ['a'], label_token_ids: [1] }));
  const p2 = scheduler.submit(job({ query: 'q', items: ['b'], label_token_ids: [1] }));
  await tick();
  backend.calls[0].release();
  await blocker;
  await tick();
  backend.calls[1].release(new ScoreInputError('merged request refused', 'items'));
  await tick();
  await tick();
  t.equal(backend.calls[2].body.items.length, 1, 'first member alone');
  backend.calls[2].release();
  await tick();
  await tick();
  t.equal(backend.calls[3].body.items.length, 1, 'second member alone');
  backend.calls[3].release();
  t.deepEqual((await p1).scores, expected(['a'], [1]), 'first answered');
  t.deepEqual((await p2).scores, expected(['b'], [1]), 'second answered');
});
