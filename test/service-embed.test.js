'use strict';
// One table of service cases (SGLang's Score API cases, rerank, bad input,
// limits, the queue bound, deadlines, drain) run against three servers: the
// standalone service, a fastify app and an express app that mount our routes
// beside a route of their own (examples/fastify.js, examples/express.js).
// All three must give the same statuses and bodies. Also: the host's
// prom-client registry shows its own metric and ours in one scrape, and the
// host's pino logger receives our events.
const test = require('tape');
const http = require('node:http');
const client = require('prom-client');
const { Scorer } = require('../dist/scoring/scorer');
const { readRerankBody, readScoreBody } = require('../dist/wire');
const { request } = require('./helpers/service');
const { startThree } = require('./helpers/embedded');

const YES = 9805; // ' yes'
const NO = 787; // ' no'
const SETTINGS = {
  warmup: [],
  warmupProgress: false,
  queueSize: 2,
  timeoutMs: 5000,
  maxItems: 16,
  maxRequestTokens: 256,
  maxBodyBytes: 4096,
};
const FRUIT = {
  query: 'Is the following a kind of fruit? Answer yes or no:',
  items: [' apple', ' a red car', ' banana'],
  label_token_ids: [YES, NO],
};

let scorer;
let servers;
const hostRegistry = new client.Registry();
const hostCounter = new client.Counter({
  name: 'host_own_widgets_total',
  help: 'A metric of the host, not of pjrt-score.',
  registers: [hostRegistry],
});

/** One request: status, the body as JSON (text when it is not JSON), and the headers the table compares. */
async function send(server, { method = 'POST', path = '/v1/score', body, headers = {}, id }) {
  const payload =
    body === undefined ? undefined : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const res = await request({
    port: server.port,
    agent: false,
    method,
    path,
    headers: {
      ...(payload !== undefined ? { 'content-type': 'application/json' } : {}),
      'x-request-id': id,
      ...headers,
    },
    body: payload,
  });
  const out = { status: res.status, body: res.json ?? res.text };
  if (res.headers.allow !== undefined) out.allow = res.headers.allow;
  if (res.headers['retry-after'] !== undefined) out.retryAfter = 'present';
  if (out.body && typeof out.body === 'object' && 'uptime_seconds' in out.body)
    out.body = { ...out.body, uptime_seconds: 'varies' };
  return out;
}

/** Requests with a request id of their own (the rerank body carries it). */
const simple = (name, spec) => ({
  name,
  run: (server) => send(server, { id: name.replace(/[^A-Za-z0-9]+/g, '-').slice(0, 60), ...spec }),
});

const CASES = [
  // SGLang's Score API (test_score_api.py's shapes): strings, softmax on and off, item_first, token ids.
  simple('sglang: strings, apply_softmax', { body: { ...FRUIT, apply_softmax: true } }),
  simple('sglang: raw probabilities', {
    body: {
      query: 'The capital of France is',
      items: [' Paris', ' London', ' Berlin'],
      label_token_ids: [YES, NO, 12],
    },
  }),
  simple('sglang: item_first', { body: { ...FRUIT, item_first: true, apply_softmax: true } }),
  simple('sglang: token ids', {
    body: { query: [504, 3575, 282], items: [[7918], [253, 1485, 1024]], label_token_ids: [YES, NO] },
  }),
  simple('sglang: items [] ', { body: { ...FRUIT, items: [] } }),
  simple('sglang: model field', { body: { ...FRUIT, model: 'SmolLM2-135M-Instruct' } }),
  simple('rerank: common shape', {
    path: '/v1/rerank',
    body: {
      query: 'What is the capital of France?',
      documents: ['Paris is the capital of France.', 'Bananas are yellow.'],
      return_documents: true,
    },
  }),
  simple('rerank: TEI shape on /rerank', {
    path: '/rerank',
    body: {
      query: 'What is the capital of France?',
      texts: ['Berlin is in Germany.', 'Paris is the capital of France.'],
      raw_scores: true,
    },
  }),
  simple('health', { method: 'GET', path: '/health' }),
  // Bad input.
  simple('bad: no label_token_ids', { body: { query: 'q', items: ['a'] } }),
  simple('bad: query a number', { body: { ...FRUIT, query: 42 } }),
  simple('bad: label out of vocabulary', { body: { ...FRUIT, label_token_ids: [49152] } }),
  simple('bad: model not a string', { body: { ...FRUIT, model: 5 } }),
  simple('bad: rerank without documents', { path: '/v1/rerank', body: { query: 'q' } }),
  simple('bad: malformed JSON', { body: '{"query": "a", "items": [' }),
  simple('bad: invalid UTF-8', {
    body: Buffer.concat([Buffer.from('{"query": "caf'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]),
  }),
  simple('bad: empty body', { body: '' }),
  simple('bad: text/plain', { body: JSON.stringify(FRUIT), headers: { 'content-type': 'text/plain' } }),
  simple('no content-type is JSON', { body: JSON.stringify(FRUIT), headers: { 'content-type': undefined } }),
  simple('bad: GET /v1/score', { method: 'GET', path: '/v1/score' }),
  simple('bad: PUT /v1/rerank', { method: 'PUT', path: '/v1/rerank', body: '{}' }),
  // Limits.
  simple('limit: 17 items', { body: { ...FRUIT, items: Array.from({ length: 17 }, (_, i) => ` item ${i}`) } }),
  simple('limit: tokens', { body: { ...FRUIT, items: Array.from({ length: 16 }, () => ' word'.repeat(20)) } }),
  simple('limit: body over 4096 bytes', { body: JSON.stringify({ ...FRUIT, query: 'x'.repeat(5000) }) }),
  simple('limit: chunked body over 4096 bytes', {
    body: JSON.stringify({ ...FRUIT, query: 'x'.repeat(5000) }),
    headers: { 'content-length': undefined, 'transfer-encoding': 'chunked' },
  }),
  {
    name: 'queue full: one running, two waiting, the fourth refused; the three answered',
    async run(server) {
      server.gate.shut();
      const body = (i) => ({ ...FRUIT, query: `Question ${i}: is the following a kind of fruit?` });
      const running = send(server, { body: body(1), id: 'q1' });
      await server.gate.whenHeld(1);
      const waiting = [send(server, { body: body(2), id: 'q2' }), send(server, { body: body(3), id: 'q3' })];
      await until(async () => (await send(server, { method: 'GET', path: '/health', id: 'h' })).body.queue_depth === 2);
      const refused = await send(server, { body: body(4), id: 'q4' });
      server.gate.open();
      return { refused, answered: await Promise.all([running, ...waiting]) };
    },
  },
  {
    // One server at a time, like every case: the three share one Scorer, so one admission queue and one gate.
    name: 'deadline: a request held past timeoutMs is 504, the one behind it too',
    async run(server) {
      server.gate.shut();
      const held = send(server, { body: { ...FRUIT, query: 'Deadline: is this a fruit?' }, id: 'd1' });
      await server.gate.whenHeld(1);
      const behind = send(server, { body: { ...FRUIT, query: 'Behind: is this a fruit?' }, id: 'd2' });
      const results = await Promise.all([held, behind]);
      server.gate.open();
      return results;
    },
  },
  simple('after the deadline the server goes on', { body: { ...FRUIT, apply_softmax: true } }),
];

async function until(predicate, ms = 10_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await predicate()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('condition not met in time');
}

test('setup: one Scorer (default model), warmed on the table shapes; three servers over it', async (t) => {
  // The limits and the queue are the Scorer's (it validates and queues every request), so it gets the service's.
  scorer = await Scorer.load({
    maxItems: SETTINGS.maxItems,
    maxRequestTokens: SETTINGS.maxRequestTokens,
    queueSize: SETTINGS.queueSize,
  });
  // Compile the programs the 200 cases use now, so no case runs into its deadline compiling.
  for (const body of [
    FRUIT,
    { ...FRUIT, item_first: true },
    { query: [504, 3575, 282], items: [[7918], [253, 1485, 1024]], label_token_ids: [YES, NO] },
  ]) {
    await scorer.scoreBatch([{ request: scorer.normalizeWith(readScoreBody(body)) }]);
  }
  await scorer.scoreBatch([
    {
      request: scorer.normalizeWith(
        readRerankBody({
          query: 'What is the capital of France?',
          documents: ['Paris is the capital of France.', 'Bananas are yellow.'],
        }),
      ).score,
    },
  ]);
  servers = await startThree(scorer, SETTINGS, { registry: hostRegistry });
  t.deepEqual(
    servers.map((s) => s.kind),
    ['standalone', 'fastify', 'express'],
    'three servers ready',
  );
});

const results = new Map();

for (const c of CASES) {
  test(`table: ${c.name}`, async (t) => {
    const answers = [];
    for (const s of servers) answers.push(await c.run(s));
    results.set(c.name, answers[0]);
    t.deepEqual(answers[1], answers[0], `fastify = standalone: ${JSON.stringify(answers[0]).slice(0, 160)}`);
    t.deepEqual(answers[2], answers[0], 'express = standalone');
  });
}

test('the table answers what the Score API says (checked on the shared answers)', (t) => {
  const status = (name) => results.get(name).status;
  for (const name of [
    'sglang: strings, apply_softmax',
    'sglang: raw probabilities',
    'sglang: item_first',
    'sglang: token ids',
    'rerank: common shape',
    'health',
    'no content-type is JSON',
  ]) {
    t.equal(status(name), 200, `${name}: 200`);
  }
  t.deepEqual(results.get('sglang: items [] ').body.scores, [], 'items [] -> scores []');
  for (const name of CASES.map((c) => c.name).filter((n) => n.startsWith('bad: ') && !/GET|PUT/.test(n))) {
    t.equal(status(name), 400, `${name}: 400 ${JSON.stringify(results.get(name).body.param)}`);
  }
  t.deepEqual([status('bad: GET /v1/score'), results.get('bad: GET /v1/score').allow], [405, 'POST'], '405 with Allow');
  t.deepEqual(
    [status('limit: 17 items'), results.get('limit: 17 items').body.param],
    [400, 'items'],
    '17 items over the limit of 16: 400 on items',
  );
  t.equal(status('limit: tokens'), 400, 'over max-request-tokens: 400');
  t.equal(status('limit: body over 4096 bytes'), 413, '413');
  t.equal(status('limit: chunked body over 4096 bytes'), 413, '413 without Content-Length');
  const queue = results.get('queue full: one running, two waiting, the fourth refused; the three answered');
  t.deepEqual([queue.refused.status, queue.refused.retryAfter], [429, 'present'], '429 with Retry-After');
  t.deepEqual(
    queue.answered.map((a) => a.status),
    [200, 200, 200],
    'the running and waiting requests answered',
  );
  const deadline = results.get('deadline: a request held past timeoutMs is 504, the one behind it too');
  t.deepEqual(
    deadline.map((a) => [a.status, a.body.message]),
    [
      [504, 'the request did not finish within 5000 ms'],
      [504, 'the request did not finish within 5000 ms'],
    ],
  );
  t.equal(status('after the deadline the server goes on'), 200, 'served after the deadline');
  // The service's scores against the library's own call on the same Scorer.
  const direct = scorer.scoreBatch([
    { request: scorer.normalizeWith(readScoreBody({ ...FRUIT, apply_softmax: true })) },
  ]);
  direct.then(([outcome]) => {
    t.deepEqual(
      results.get('sglang: strings, apply_softmax').body.scores,
      outcome.result.scores,
      'the HTTP answer equals the library call',
    );
    t.end();
  });
});

test("the host's registry: its own metric and ours in one scrape", async (t) => {
  const express = servers.find((s) => s.kind === 'express');
  t.equal(express.registry, hostRegistry, 'the express app uses the registry the test passed');
  hostCounter.inc(3);
  const text = (await request({ port: express.port, path: '/metrics' })).text;
  t.match(text, /^host_own_widgets_total 3$/m, "the host's metric");
  t.match(text, /^app_hello_total 0$/m, "the app's route metric");
  t.match(text, /^pjrt_score_requests_total\{status="200",algorithm="[a-z]+"\} \d+$/m, 'our request counter');
  t.match(text, /^pjrt_score_requests_total\{status="429",algorithm="none"\} 1$/m, 'the one 429 of the table');
  t.match(text, /^pjrt_score_backend_calls_total \d+$/m, 'our backend call counter');
  t.match(text, /^pjrt_score_jit_cache_entries \d+$/m, "the Scorer's stats at scrape time");
  t.notOk(/^process_cpu_user_seconds_total/m.test(text), 'no process metrics added to a host registry');
  const standalone = (await request({ port: servers[0].port, path: '/metrics' })).text;
  t.match(standalone, /^process_resident_memory_bytes \d+/m, 'the standalone service: process metrics');
  t.match(standalone, /^nodejs_eventloop_lag_seconds /m, 'the standalone service: event-loop lag');
  t.match(standalone, /^nodejs_gc_duration_seconds_bucket/m, 'the standalone service: GC');
});

test("each host's pino logger receives our events", (t) => {
  for (const server of servers) {
    const ours = server.logs.filter((e) => e.event === 'request' && e.path === '/v1/score');
    t.ok(ours.length >= CASES.length - 8, `${server.kind}: ${ours.length} request events for /v1/score`);
    const line = server.logs.find((e) => e.event === 'request' && e.id === 'sglang-strings-apply-softmax');
    t.ok(line, `${server.kind}: the request line of a case, by its id`);
    if (line) {
      t.deepEqual(
        [line.status, line.items, typeof line.tokens, typeof line.latency_ms, line.algorithm !== 'none', line.batch],
        [200, 3, 'number', 'number', true, 1],
        `${server.kind}: status, items, tokens, latency_ms, algorithm, batch`,
      );
    }
    const bad = server.logs.find((e) => e.event === 'request' && e.id === 'bad-no-label-token-ids');
    t.deepEqual(
      bad && [bad.status, bad.param],
      [400, 'label_token_ids'],
      `${server.kind}: an error line with its param`,
    );
    t.ok(
      server.logs.some((e) => e.event === 'ready'),
      `${server.kind}: ready`,
    );
    t.ok(
      server.logs.some((e) => e.event === 'model_loaded'),
      `${server.kind}: model_loaded`,
    );
    t.ok(
      server.logs.every((e) => typeof e.level === 'number' || typeof e.level === 'string'),
      `${server.kind}: pino lines`,
    );
  }
  t.end();
});

test('table: drain (last): in-flight requests finish, then new connections are refused, the Scorer is released', async (t) => {
  const answers = [];
  let standaloneDuring = null;
  for (const server of servers) {
    server.gate.shut();
    const running = send(server, { body: { ...FRUIT, query: 'Drain 1: is this a fruit?' }, id: 'drain1' });
    await server.gate.whenHeld(1);
    const waiting = send(server, { body: { ...FRUIT, query: 'Drain 2: is this a fruit?' }, id: 'drain2' });
    await until(async () => (await send(server, { method: 'GET', path: '/health', id: 'h' })).body.queue_depth === 1);
    const closed = server.close();
    if (server.kind === 'standalone') {
      // Its listener stays open through the drain (docs/service.md, "Shutdown"): a new connection is answered.
      standaloneDuring = await connectError(server.port);
    } else {
      // A mount's host closes its own listener first (the examples do).
      await until(async () => (await connectError(server.port)) !== null);
    }
    server.gate.open();
    const done = await Promise.all([running, waiting]);
    await closed;
    const refused = await connectError(server.port);
    answers.push({ done, refused, phase: server.phase(), disposed: server.gate.disposed });
  }
  t.equal(standaloneDuring, null, 'standalone: a new connection during the drain is answered (the probes answer)');
  t.deepEqual(
    answers[0].done.map((a) => a.status),
    [200, 200],
    'the running and the waiting request: 200',
  );
  t.deepEqual(
    [answers[0].refused, answers[0].phase, answers[0].disposed],
    ['ECONNREFUSED', 'closed', 1],
    'refused, closed, disposed once',
  );
  t.deepEqual(answers[1], answers[0], 'fastify = standalone');
  t.deepEqual(answers[2], answers[0], 'express = standalone');
  t.ok(
    servers.every((s) => s.logs.some((e) => e.event === 'closed')),
    'each logged closed',
  );
  scorer.dispose();
});

/** The error code of a new connection (null if it connects). */
function connectError(port) {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/health', agent: false }, (res) => {
      res.resume();
      resolve(null);
    });
    req.on('error', (error) => resolve(error.code || error.message));
    req.end();
  });
}
