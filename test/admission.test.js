'use strict';
// The admission queue in front of the device (lib/scoring/execution/admission.ts),
// against a fake device turn that the test releases by hand: FIFO order, the bound (429), requests
// that share a query taken together into one call (each still its own
// request, answered with its own rows), deadlines that drop waiting work,
// and one member's abort or failure leaving the others.
const test = require('tape');
const { AbortError, AdmissionQueue, QueueFullError, ScoreInputError } = require('../dist/scoring');
const { normalizeScoreBody } = require('../dist/wire');

const CONTEXT = {
  vocabSize: 1000,
  contextLength: 64,
  maxItems: 16,
  maxRequestTokens: 200,
  tokenize: (s) => Array.from(s, (c) => c.charCodeAt(0) % 1000),
  addBos: false,
};

/** An item's score is a function of its tokens alone. */
function scoresOf(n) {
  return n.itemTokens.map((item) => n.labels.map((l) => (item.reduce((a, b) => a + b, 0) + l) / 1e4));
}

/** A device whose turns park until release(); release(i -> error) fails chosen members. */
function fakeDevice() {
  const calls = [];
  return {
    calls,
    runTurn(jobs) {
      return new Promise((resolve) => {
        const call = { jobs, done: false };
        call.release = (errorFor = () => null) => {
          call.done = true;
          resolve(
            jobs.map((job, i) => {
              const error = job.signal?.aborted
                ? Object.assign(new Error('aborted'), { name: 'AbortError' })
                : errorFor(i);
              if (error) return { ok: false, error };
              const n = job.request;
              return {
                ok: true,
                result: {
                  scores: scoresOf(n),
                  usage: { promptTokens: n.promptTokens, completionTokens: 0, totalTokens: n.promptTokens },
                  algorithm: 'prefix',
                  model: 'fake',
                },
              };
            }),
          );
        };
        calls.push(call);
      });
    },
  };
}

/** The queue over a fake device, as the Scorer builds it. */
function queueOver(device, { queueSize, coalesce, maxItems, maxRequestTokens }) {
  return new AdmissionQueue(
    { queueSize, takeAlong: coalesce ? 'same-query' : 'none', maxItems, maxRequestTokens },
    (jobs) => device.runTurn(jobs),
  );
}

// A turn starts on the queue's setImmediate; after a release, the previous
// turn settles in microtasks and schedules the next: two event-loop turns see it.
const tick = async () => {
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
};

function job(body, controller = new AbortController()) {
  return { request: normalizeScoreBody(body, CONTEXT), signal: controller.signal, controller };
}

const expected = (items, labels) =>
  items.map((s) => labels.map((l) => (CONTEXT.tokenize(s).reduce((a, b) => a + b, 0) + l) / 1e4));

test('requests that share query, labels and flags go in one call, each answered with its own rows', async (t) => {
  const backend = fakeDevice();
  const queue = queueOver(backend, { queueSize: 8, coalesce: true, maxItems: 16, maxRequestTokens: 200 });
  const a = queue.submit(job({ query: 'qq', items: ['a'], label_token_ids: [1, 2] }));
  await tick(); // a reaches the idle device alone; the rest arrive while it runs
  const b = queue.submit(job({ query: 'qq', items: ['bb', 'c'], label_token_ids: [1, 2] }));
  const other = queue.submit(job({ query: 'zz', items: ['d'], label_token_ids: [1, 2] }));
  const c = queue.submit(job({ query: 'qq', items: ['eee'], label_token_ids: [1, 2] }));
  const labelsDiffer = queue.submit(job({ query: 'qq', items: ['f'], label_token_ids: [3] }));
  await tick();
  t.equal(backend.calls.length, 1, 'one call at a time');
  t.equal(queue.queueDepth, 4, 'four waiting');
  backend.calls[0].release();
  t.deepEqual((await a).result.scores, expected(['a'], [1, 2]), 'the first request alone');
  await tick();
  t.equal(backend.calls.length, 2, 'next call');
  t.deepEqual(
    backend.calls[1].jobs.map((j) => j.request.itemTokens.length),
    [2, 1],
    'b and c in one call, each as its own request, skipping the other query',
  );
  t.equal(queue.queueDepth, 2, 'the other query and the other labels still wait, in order');
  backend.calls[1].release();
  const [{ result: rb, admission }, { result: rc }] = await Promise.all([b, c]);
  t.deepEqual(rb.scores, expected(['bb', 'c'], [1, 2]), 'b gets its own rows');
  t.deepEqual(rc.scores, expected(['eee'], [1, 2]), 'c gets its own rows');
  t.equal(admission.turnSize, 2, 'turn size reported');
  t.equal(rb.usage.promptTokens, 2 + 3, 'b usage: its query plus its items');
  t.equal(rc.usage.promptTokens, 2 + 3, 'c usage: its query plus its item');
  await tick();
  t.equal(backend.calls[2].jobs[0].request.queryTokens.length, 2, 'then the other query');
  backend.calls[2].release();
  await other;
  await tick();
  backend.calls[3].release();
  t.deepEqual((await labelsDiffer).result.scores, expected(['f'], [3]), 'other labels run on their own');
  await queue.idle();
});

test('a batch respects the item limit', async (t) => {
  const backend = fakeDevice();
  const queue = queueOver(backend, { queueSize: 8, coalesce: true, maxItems: 4, maxRequestTokens: 200 });
  const first = queue.submit(job({ query: 'q', items: ['a'], label_token_ids: [1] }));
  await tick();
  const rest = [0, 1, 2].map(() => queue.submit(job({ query: 'q', items: ['a', 'b'], label_token_ids: [1] })));
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

test('calls made in the same event-loop turn share the first turn; nothing waits on a timer', async (t) => {
  const backend = fakeDevice();
  const queue = new AdmissionQueue({ queueSize: 8, takeAlong: 'all', maxItems: 16, maxRequestTokens: 200 }, (jobs) =>
    backend.runTurn(jobs),
  );
  const bodies = [
    { query: 'q', items: ['a'], label_token_ids: [1] },
    { query: 'other', items: ['bb'], label_token_ids: [1] },
    { query: 'third', items: ['d', 'e'], label_token_ids: [1] },
  ];
  const outcomes = bodies.map((body) => queue.submit(job(body)));
  t.equal(backend.calls.length, 0, 'no turn before the event loop moves on');
  t.equal(queue.isIdle(), false, 'a turn is due: not idle');
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(backend.calls.length, 1, 'one turn, started at the next event-loop turn');
  t.deepEqual(
    backend.calls[0].jobs.map((j) => j.request.itemTokens.length),
    [1, 1, 2],
    'the three calls in it, in submission order',
  );
  backend.calls[0].release();
  const results = await Promise.all(outcomes);
  t.deepEqual(
    results.map((r) => r.result.scores),
    [expected(['a'], [1]), expected(['bb'], [1]), expected(['d', 'e'], [1])],
    'each answered with its own rows',
  );
  t.ok(
    results.every((r) => r.admission.turnSize === 3),
    'in a turn of 3',
  );
  await queue.idle();
});

test('submitAll queues its jobs before the device takes a turn: they meet in one turn, and the bound still holds', async (t) => {
  const backend = fakeDevice();
  const queue = new AdmissionQueue({ queueSize: 1, takeAlong: 'all', maxItems: 16, maxRequestTokens: 200 }, (jobs) =>
    backend.runTurn(jobs),
  );
  const bodies = [
    { query: 'q', items: ['a'], label_token_ids: [1] },
    { query: 'other', items: ['bb', 'c'], label_token_ids: [1] },
    { query: 'third', items: ['d'], label_token_ids: [1] },
  ];
  const outcomes = queue.submitAll(bodies.map((body) => job(body)));
  const settled = Promise.allSettled(outcomes);
  await tick();
  t.equal(backend.calls.length, 1, 'one turn');
  t.equal(backend.calls[0].jobs.length, 2, 'the device free: the one it takes next and queueSize (1) more, together');
  backend.calls[0].release();
  const [a, b, c] = await settled;
  t.deepEqual(a.value.result.scores, expected(['a'], [1]), 'the first answered with its own rows');
  t.deepEqual(b.value.result.scores, expected(['bb', 'c'], [1]), 'the second with its own');
  t.equal(a.value.admission.turnSize, 2, 'in a turn of 2');
  t.ok(
    c.status === 'rejected' && c.reason instanceof QueueFullError,
    'the third refused with QueueFullError, as if submitted alone',
  );
});

test('the queue bound: QueueFullError at once', async (t) => {
  const backend = fakeDevice();
  const queue = queueOver(backend, { queueSize: 1, coalesce: false, maxItems: 16, maxRequestTokens: 200 });
  const running = queue.submit(job({ query: 'q', items: ['a'], label_token_ids: [1] }));
  const waiting = queue.submit(job({ query: 'q', items: ['b'], label_token_ids: [1] }));
  await queue.submit(job({ query: 'q', items: ['c'], label_token_ids: [1] })).then(
    () => t.fail('should be refused'),
    (error) =>
      t.ok(
        error instanceof QueueFullError && error.retryAfterSeconds >= 1,
        'the third is refused at once, with a Retry-After hint',
      ),
  );
  t.ok(queue.retryAfterSeconds() >= 1, 'a Retry-After hint of at least 1 s');
  await tick();
  backend.calls[0].release();
  await running;
  await tick();
  backend.calls[1].release();
  await waiting;
});

test('an aborted waiting request leaves the queue without reaching the device', async (t) => {
  const backend = fakeDevice();
  const queue = queueOver(backend, { queueSize: 4, coalesce: true, maxItems: 16, maxRequestTokens: 200 });
  const running = queue.submit(job({ query: 'q', items: ['a'], label_token_ids: [1] }));
  const doomed = job({ query: 'q', items: ['b'], label_token_ids: [1] });
  const pending = queue.submit(doomed);
  await tick();
  doomed.controller.abort(new Error('deadline'));
  await pending.then(
    () => t.fail('should reject'),
    (error) => t.equal(error.name, 'AbortError', 'rejects with an AbortError'),
  );
  t.equal(queue.queueDepth, 0, 'removed from the queue');
  backend.calls[0].release();
  await running;
  await queue.idle();
  t.equal(backend.calls.length, 1, 'the device never saw it');
});

test('in a batch, one member aborting or failing leaves the others', async (t) => {
  const backend = fakeDevice();
  const queue = queueOver(backend, { queueSize: 8, coalesce: true, maxItems: 16, maxRequestTokens: 200 });
  const blocker = queue.submit(job({ query: 'x', items: ['a'], label_token_ids: [1] }));
  const m1 = job({ query: 'q', items: ['a'], label_token_ids: [1] });
  const m2 = job({ query: 'q', items: ['b'], label_token_ids: [1] });
  const m3 = job({ query: 'q', items: ['c'], label_token_ids: [1] });
  const p1 = queue.submit(m1);
  const p2 = queue.submit(m2);
  const p3 = queue.submit(m3);
  await tick();
  backend.calls[0].release();
  await blocker;
  await tick();
  const batch = backend.calls[1];
  t.equal(batch.jobs.length, 3, 'one call for the three');
  m1.controller.abort(new Error('gone'));
  await p1.catch((error) => t.equal(error.name, 'AbortError', 'the aborted member rejects at once'));
  t.ok(batch.jobs[0].signal.aborted, 'its own signal reaches the device turn, which skips its plan');
  batch.release((i) => (i === 2 ? new ScoreInputError('refused', 'items') : null));
  t.deepEqual((await p2).result.scores, expected(['b'], [1]), 'the other member gets its rows');
  await p3.then(
    () => t.fail('should reject'),
    (error) => t.ok(error instanceof ScoreInputError, 'a failing member gets its own error'),
  );
  await queue.idle();
});

test('an abort keeps its reason: an AbortError reason comes back as is, any other is carried', async (t) => {
  const backend = fakeDevice();
  const queue = queueOver(backend, { queueSize: 4, coalesce: false, maxItems: 16, maxRequestTokens: 200 });
  const running = queue.submit(job({ query: 'q', items: ['a'], label_token_ids: [1] }));
  const deadline = new AbortError('the request did not finish within 5 ms');
  const first = job({ query: 'q', items: ['b'], label_token_ids: [1] });
  const second = job({ query: 'q', items: ['c'], label_token_ids: [1] });
  const p1 = queue.submit(first).catch((error) => error);
  const p2 = queue.submit(second).catch((error) => error);
  await tick();
  first.controller.abort(deadline);
  const gone = new Error('the client went away');
  second.controller.abort(gone);
  t.equal(await p1, deadline, 'the reason itself');
  const e2 = await p2;
  t.ok(
    e2 instanceof AbortError && e2.reason === gone && e2.message === gone.message,
    'an AbortError carrying the reason',
  );
  backend.calls[0].release();
  await running;
  await queue.idle();
});
