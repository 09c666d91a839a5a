'use strict';
// One admission queue for the library and the service: a Scorer (a tiny
// random model) and a service over that same Scorer. With the device held
// busy (a gate in front of the Scorer's turns), a library caller and an HTTP
// caller meet the same bounded queue: both are refused once it is full
// (QueueFullError; 429 with Retry-After), and a library call and an HTTP
// request that share a query run in one turn of the device, each with the
// scores it gets alone.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Scorer, QueueFullError } = require('../dist/scoring');
const { startServer } = require('../dist/server/hosts/standalone-server');
const { silentLogger } = require('../dist/server/telemetry/log');
const { request } = require('./helpers/service');
const { gateScorer } = require('./helpers/embedded');
const { makeTinyModel, writeTinyGguf } = require('./helpers/tiny-model');

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-admission-'));
let scorer;
let gate;
let server;

// Token ids inside the tiny model's vocabulary (64): no tokenizer involved.
const QUERY = [5, 6, 7, 8];
const LABELS = [10, 11];

const post = (body) =>
  request({
    port: server.port,
    method: 'POST',
    path: '/v1/score',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

test('setup: a Scorer with a queue of 2, and a service over the same Scorer', async (t) => {
  const file = path.join(work, 'tiny.gguf');
  writeTinyGguf(makeTinyModel('llama', 3), file, { matrixType: 'F32', embeddingType: 'F32' });
  scorer = await Scorer.load({ model: file, queueSize: 2, diskCache: false, prefixCacheBytes: 0 });
  gate = gateScorer(scorer);
  server = await startServer({
    port: 0,
    host: '127.0.0.1',
    warmup: [],
    logger: silentLogger(),
    warmupProgress: false,
    loadBackend: async () => scorer,
  });
  await server.ready;
  t.pass(`listening at ${server.url}`);
});

test('the same bounded queue: a library call and an HTTP request are refused when it is full', async (t) => {
  gate.shut();
  const running = scorer.score({ query: [20, 21], items: [[30]], labelTokenIds: LABELS });
  await gate.whenHeld(1);
  const waiting = [22, 23].map((q) => scorer.score({ query: [q], items: [[31]], labelTokenIds: LABELS }));
  t.deepEqual(
    [scorer.inFlight, scorer.queueDepth],
    [1, 2],
    'one in the device turn, two waiting: the queue (size 2) is full',
  );

  const library = await scorer.score({ query: [24], items: [[32]], labelTokenIds: LABELS }).then(
    () => null,
    (error) => error,
  );
  t.ok(library instanceof QueueFullError, `the library caller: QueueFullError (${library && library.message})`);
  t.ok(library && library.retryAfterSeconds >= 1, 'with a retry hint');

  const http = await post({ query: [25], items: [[33]], label_token_ids: LABELS });
  t.equal(http.status, 429, 'the HTTP caller: 429');
  t.ok(Number(http.headers['retry-after']) >= 1, `Retry-After ${http.headers['retry-after']}`);
  t.equal(http.json && http.json.message, `${library.message}: retry later`, 'the same refusal, in the message');
  t.equal(scorer.queueDepth, 2, 'neither refusal queued anything');

  gate.open();
  await Promise.all([running, ...waiting]);
  await scorer.idle();
});

test('the same coalescing: a library call and an HTTP request that share a query run in one turn', async (t) => {
  const libraryRequest = { query: QUERY, items: [[40], [41, 42]], labelTokenIds: LABELS };
  const httpBody = { query: QUERY, items: [[43]], label_token_ids: LABELS };
  const alone = { library: await scorer.score(libraryRequest), http: await post(httpBody) };
  t.equal(alone.http.status, 200, 'alone: 200');

  gate.shut();
  const running = scorer.score({ query: [20, 21], items: [[30]], labelTokenIds: LABELS });
  await gate.whenHeld(1);
  const before = scorer.stats();
  let admission = null;
  const library = scorer.score(libraryRequest, { onAdmitted: (a) => (admission = a) });
  let answered = false;
  const http = post(httpBody).finally(() => (answered = true));
  // The HTTP request queues once the server has read and normalized it (or is answered, if it was refused).
  while (scorer.queueDepth < 2 && !answered) await new Promise((resolve) => setTimeout(resolve, 5));
  t.equal(scorer.queueDepth, 2, 'both wait behind the running call');
  gate.open();
  const [libraryResult, httpResult] = await Promise.all([library, http]);
  await running;
  const after = scorer.stats();
  t.equal(after.turns - before.turns, 2, 'two turns: the one running, then both waiting calls together');
  t.equal(after.turnRequests - before.turnRequests, 3, 'three requests served');
  t.equal(admission && admission.turnSize, 2, 'the library call was told it shared its turn with one other');
  t.equal(
    JSON.stringify(libraryResult.scores),
    JSON.stringify(alone.library.scores),
    'the library call: its scores alone, bit for bit',
  );
  t.equal(httpResult.status, 200, 'the HTTP request: 200');
  t.equal(
    JSON.stringify(httpResult.json.scores),
    JSON.stringify(alone.http.json.scores),
    'the HTTP request: its scores alone, bit for bit',
  );
});

test('teardown', async (t) => {
  await server.close(); // disposes the Scorer it was given
  fs.rmSync(work, { recursive: true, force: true });
  t.pass('closed');
});
