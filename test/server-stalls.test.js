'use strict';
// The service never stalls and never misreports (docs/service.md, "Queue and
// cross-request batching", "Errors", "Shutdown"): a text that cannot fit is a
// 400 before the tokenizer sees it; a long legitimate text is tokenized on a
// worker thread while probes and small requests are answered; a client that
// stalls mid-upload gets 408 and a closed connection, a deadline passed on
// the server's side stays a 504; with the default settings the drain keeps
// the listener open (the probes answer) until the accepted work is done.
// Every verdict is an order of events or a count, never a time.
const test = require('tape');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const { startInProcessServer } = require('./helpers/in-process-server');
const { startServer } = require('../dist/server/hosts/standalone-server');
const { silentLogger } = require('../dist/server/telemetry/log');
const { readRerankBody, readScoreBody } = require('../dist/wire');
const { Tokenizer } = require('../dist/model/tokenizer');
const { OPEN_PATHS } = require('../dist/server/network/access');
const { INLINE_TOKENIZE_CHARS } = require('../dist/scoring');

const YES = 9805;
const NO = 787;
/** The issue's item: 1.5M tokens, 7.5 MB. */
const HUGE = 'word '.repeat(1_500_000);

let server;
let scorer;
/** Every text the main thread's tokenizer was handed (its length). */
const encoded = [];
const realEncode = Tokenizer.prototype.encode;
Tokenizer.prototype.encode = function encode(text) {
  encoded.push(typeof text === 'string' ? text.length : -1);
  return realEncode.call(this, text);
};

/** One request on a fresh connection; resolves { status, headers, body (parsed when JSON) }. */
function send(url, method, route, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const payload =
      body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const req = http.request(
      `${url}${route}`,
      {
        method,
        agent: false,
        headers: {
          ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
          ...headers,
        },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // /metrics is text
          }
          resolve({ status: res.statusCode, headers: res.headers, body: parsed });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * A request whose body is sent in two parts: `first` bytes now, the rest on
 * `finish()`. `answer` resolves with the response.
 */
function splitUpload(url, route, body, first) {
  const payload = Buffer.from(JSON.stringify(body));
  let req;
  const answer = new Promise((resolve, reject) => {
    req = http.request(
      `${url}${route}`,
      {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': payload.length },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode,
            headers: res.headers,
            body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
          }),
        );
      },
    );
    req.on('error', reject);
  });
  req.write(payload.subarray(0, first));
  return { answer, finish: () => req.end(payload.subarray(first)) };
}

/** A backend over the shared Scorer that a server may close without disposing it; `overrides` replace members. */
function sharedBackend(target, overrides = {}) {
  return new Proxy(target, {
    get(t, p) {
      if (p in overrides) return overrides[p];
      if (p === 'dispose') return () => undefined;
      const v = t[p];
      return typeof v === 'function' ? v.bind(t) : v;
    },
  });
}

test('setup: the service on the default model', async (t) => {
  server = await startInProcessServer({ onScorer: (s) => (scorer = s) });
  t.ok(server.url, server.url);
});

test('a 7.5 MB item to /v1/score and /v1/rerank: a 400 naming the limit, the tokenizer never sees it; probes, /metrics and a small score answer while it is read', async (t) => {
  const context = scorer.config.contextLength;
  const perToken = scorer.tokenizer.maxCharsPerToken;
  const cases = [
    {
      route: '/v1/score',
      body: { query: 'Is this a fruit?', items: [HUGE], label_token_ids: [YES, NO] },
      param: 'items',
    },
    { route: '/v1/rerank', body: { query: 'Which is a fruit?', documents: [HUGE] }, param: 'documents' },
  ];
  for (const { route, body, param } of cases) {
    encoded.length = 0;
    const sentBefore = scorer.offLoop.textsSent;
    const events = [];
    const big = splitUpload(server.url, route, body, 4 << 20);
    big.answer.then((r) => events.push(`big ${r.status}`));
    // Half the body is in: the big request is open while these are asked and answered.
    const livez = await send(server.url, 'GET', '/livez');
    events.push(`livez ${livez.status}`);
    const metrics = await send(server.url, 'GET', '/metrics');
    events.push(`metrics ${metrics.status}`);
    const small = await send(server.url, 'POST', '/v1/score', {
      query: 'Is this a fruit?',
      items: [' apple'],
      label_token_ids: [YES, NO],
    });
    events.push(`small ${small.status}`);
    big.finish();
    const answer = await big.answer;
    t.deepEqual(
      events,
      ['livez 200', 'metrics 200', 'small 200', 'big 400'],
      `${route}: answered in this order: ${events.join(', ')}`,
    );
    t.equal(answer.body.param, param, `${route}: param ${param}`);
    t.match(
      answer.body.message,
      new RegExp(
        `is ${HUGE.length} characters: more than the model's context of ${context} tokens can hold \\(at most ${context * perToken} characters`,
      ),
      `${route}: ${answer.body.message}`,
    );
    t.equal(
      Math.max(0, ...encoded.filter((n) => n > INLINE_TOKENIZE_CHARS)),
      0,
      `${route}: the main thread's tokenizer saw no long text (${encoded.length} short ones: the small request and the template)`,
    );
    t.equal(scorer.offLoop.textsSent, sentBefore, `${route}: nothing was sent to the tokenizer worker`);
  }
});

test('a long text that may fit is tokenized on the worker thread: probes and a small score answer while it waits; its answer is the in-place one', async (t) => {
  // Passes the character bound, fails the exact check: no device time, all of it tokenizing.
  const long = 'word '.repeat(10_000);
  const body = { query: 'Is this a fruit?', items: [long, ' apple'], label_token_ids: [YES, NO] };
  let inPlace = null;
  try {
    scorer.normalizeWith(readScoreBody(body));
  } catch (error) {
    inPlace = error;
  }
  t.ok(
    inPlace && /longer than the model's context/.test(inPlace.message),
    `the in-place normalizer refuses it after tokenizing: ${inPlace && inPlace.message}`,
  );
  const events = [];
  let release;
  const gate = new Promise((resolve) => (release = resolve));
  let entered;
  const tokenizing = new Promise((resolve) => (entered = resolve));
  const offLoop = scorer.offLoop;
  const realEncodeMany = offLoop.encodeMany;
  // The worker starts at once; its answer is held until the others are answered.
  offLoop.encodeMany = async function held(texts) {
    const ids = realEncodeMany.call(this, texts);
    events.push('worker started');
    entered();
    await gate;
    return ids;
  };
  encoded.length = 0;
  const sentBefore = offLoop.textsSent;
  try {
    const big = send(server.url, 'POST', '/v1/score', body).then((r) => {
      events.push(`big ${r.status}`);
      return r;
    });
    await tokenizing;
    for (const [method, route, probeBody] of [
      ['GET', '/livez'],
      ['GET', '/readyz'],
      ['GET', '/metrics'],
      ['POST', '/v1/score', { query: 'Is this a fruit?', items: [' pear'], label_token_ids: [YES, NO] }],
    ]) {
      const r = await send(server.url, method, route, probeBody);
      events.push(`${route} ${r.status}`);
    }
    release();
    const answer = await big;
    t.deepEqual(
      events,
      ['worker started', '/livez 200', '/readyz 200', '/metrics 200', '/v1/score 200', 'big 400'],
      `answered in this order: ${events.join(', ')}`,
    );
    t.equal(answer.body.message, inPlace.message, 'the same 400 as the in-place normalizer');
    t.equal(offLoop.textsSent - sentBefore, 1, 'one text went to the worker');
    t.equal(
      Math.max(0, ...encoded.filter((n) => n > INLINE_TOKENIZE_CHARS)),
      0,
      'the main thread tokenized no long text',
    );
  } finally {
    offLoop.encodeMany = realEncodeMany;
    release();
  }
});

test('off the loop, a long request normalizes to exactly the in-place tokens (score and rerank)', async (t) => {
  const text = (i) => `Document ${i}: ${'the quick brown fox jumps over the lazy dog, '.repeat(150)}`;
  const body = { query: 'Is this about a fox?', items: [text(1), ' short', text(2)], label_token_ids: [YES, NO] };
  const sent = scorer.offLoop.textsSent;
  t.deepEqual(
    await scorer.offLoop.normalizeWith(readScoreBody(body)),
    scorer.normalizeWith(readScoreBody(body)),
    'score: the same NormalizedRequest',
  );
  t.equal(scorer.offLoop.textsSent - sent, 2, 'the two long items went to the worker');
  const rerank = { query: 'Which is about a fox?', documents: [text(3), 'a cat', text(4)] };
  const off = await scorer.offLoop.normalizeWith(readRerankBody(rerank, 'v1'));
  t.deepEqual(off.score, scorer.normalizeWith(readRerankBody(rerank, 'v1')).score, 'rerank: the same token request');
  let offError = null;
  let inError = null;
  const bad = { query: 'q', documents: [text(5), 42] };
  await scorer.offLoop.normalizeWith(readRerankBody(bad, 'v1')).catch((e) => (offError = e));
  try {
    scorer.normalizeWith(readRerankBody(bad, 'v1'));
  } catch (e) {
    inError = e;
  }
  t.ok(offError && inError && offError.message === inError.message, `the same error: ${offError && offError.message}`);
});

test('a stalled upload is a 408 with the connection closed; a deadline on the server side stays a 504; /metrics counts them apart', async (t) => {
  let held = false;
  const backend = sharedBackend(scorer, {
    // The "model" takes past the deadline: the call waits for the request's signal.
    scoreNormalized: (request, options) =>
      new Promise((resolve, reject) => {
        held = true;
        options.signal.addEventListener('abort', () => reject(options.signal.reason), { once: true });
      }),
  });
  const stallServer = await startServer({
    port: 0,
    host: '127.0.0.1',
    warmup: [],
    timeoutMs: 1000,
    logger: silentLogger(),
    warmupProgress: false,
    loadBackend: async () => backend,
  });
  try {
    await stallServer.ready;
    const { port } = new URL(stallServer.url);
    const stalled = await new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1');
      let raw = '';
      socket.on('data', (c) => (raw += c.toString('latin1')));
      socket.on('error', reject);
      socket.on('close', () => resolve(raw));
      socket.write(
        'POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\nConnection: keep-alive\r\n\r\n{"query": "q"',
      );
    });
    const [head, payload] = stalled.split('\r\n\r\n');
    t.match(head, /^HTTP\/1\.1 408 /, `the answer: ${head.split('\r\n')[0]}`);
    t.match(head, /\r\nconnection: close/i, 'Connection: close');
    t.equal(JSON.parse(payload).param, 'body', `param body: ${JSON.parse(payload).message}`);
    t.pass('the server closed the connection (the socket ended)');
    const slow = await send(stallServer.url, 'POST', '/v1/score', {
      query: 'q',
      items: [' a'],
      label_token_ids: [YES],
    });
    t.ok(held, 'the second request reached the model');
    t.equal(slow.status, 504, `a deadline passed in the model: 504 (${slow.body.message})`);
    const metrics = (await send(stallServer.url, 'GET', '/metrics')).body;
    const count = (status) =>
      metrics
        .split('\n')
        .filter((l) => l.startsWith('pjrt_score_requests_total{') && l.includes(`status="${status}"`))
        .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
    t.equal(count(408), 1, 'pjrt_score_requests_total: one 408');
    t.equal(count(504), 1, 'pjrt_score_requests_total: one 504');
  } finally {
    await stallServer.close();
  }
});

test("the drain with the default settings, as docs/service.md's Shutdown says: probes answer, new work 503, the accepted request answered with Connection: close, then the listener closes", async (t) => {
  let release;
  const gate = new Promise((resolve) => (release = resolve));
  let entered;
  const accepted = new Promise((resolve) => (entered = resolve));
  const backend = sharedBackend(scorer, {
    scoreNormalized: async (request, options) => {
      entered();
      await gate;
      return scorer.scoreNormalized(request, options);
    },
  });
  const drainServer = await startServer({
    port: 0,
    host: '127.0.0.1',
    warmup: [],
    timeoutMs: 600_000,
    logger: silentLogger(),
    warmupProgress: false,
    loadBackend: async () => backend,
  });
  await drainServer.ready;
  t.equal(drainServer.server.listening, true, 'listening');
  const events = [];
  const first = send(
    drainServer.url,
    'POST',
    '/v1/score',
    { query: 'Is this a fruit?', items: [' apple'], label_token_ids: [YES, NO] },
    { connection: 'keep-alive' },
  ).then((r) => {
    events.push(`accepted ${r.status} connection: ${r.headers.connection}`);
    return r;
  });
  await accepted;
  const closed = drainServer.close();
  t.equal(drainServer.phase, 'draining', 'SIGTERM (close) with --drain-delay-ms 0: draining at once');
  for (const [method, route, body] of [
    ['GET', '/livez'],
    ['GET', '/readyz'],
    ['POST', '/v1/score', { query: 'q', items: [' a'], label_token_ids: [YES] }],
  ]) {
    const r = await send(drainServer.url, method, route, body);
    events.push(`${route} ${r.status}${r.status === 503 ? ` connection: ${r.headers.connection}` : ''}`);
  }
  events.push(`listening: ${drainServer.server.listening}`);
  release();
  const answer = await first;
  await closed;
  events.push('closed');
  const refused = await send(drainServer.url, 'GET', '/livez').then(
    () => 'answered',
    (error) => error.code,
  );
  events.push(`after: ${refused}`);
  t.deepEqual(
    events,
    [
      '/livez 200',
      '/readyz 503 connection: close',
      '/v1/score 503 connection: close',
      'listening: true',
      'accepted 200 connection: close',
      'closed',
      'after: ECONNREFUSED',
    ],
    `in this order: ${events.join('; ')}`,
  );
  t.equal(answer.body.scores.length, 1, 'the accepted request got its scores');
});

test('rerank: an empty query is a 400; /v2/rerank reports prompt_tokens_before_truncation only when a document was cut', async (t) => {
  for (const query of ['', '   ']) {
    const r = await send(server.url, 'POST', '/v1/rerank', { query, documents: ['a', 'b'] });
    t.equal(r.status, 400, `query ${JSON.stringify(query)}: 400`);
    t.equal(r.body.param, 'query', r.body.message);
  }
  const documents = ['Paris is the capital of France.', 'Bananas are yellow.'];
  const whole = await send(server.url, 'POST', '/v2/rerank', {
    model: 'm',
    query: 'What is the capital of France?',
    documents,
  });
  t.equal(whole.status, 200, '200');
  t.notOk(
    'prompt_tokens_before_truncation' in whole.body.usage,
    `nothing cut: no prompt_tokens_before_truncation (${JSON.stringify(whole.body.usage)})`,
  );
  const cut = await send(server.url, 'POST', '/v2/rerank', {
    model: 'm',
    query: 'What is the capital of France?',
    documents,
    max_tokens_per_doc: 2,
  });
  t.equal(cut.status, 200, '200');
  t.ok(
    cut.body.usage.prompt_tokens_before_truncation > cut.body.usage.prompt_tokens,
    `cut: ${JSON.stringify(cut.body.usage)}`,
  );
});

test('the service says once, at load, that the default model is not a reranker, naming the one docs/models.md gives', async (t) => {
  const events = [];
  const logger = {
    info: (o) => events.push({ level: 'info', ...o }),
    warn: (o) => events.push({ level: 'warn', ...o }),
    error: (o) => events.push({ level: 'error', ...o }),
    child() {
      return logger;
    },
  };
  const other = await startServer({
    port: 0,
    host: '127.0.0.1',
    warmup: [],
    logger,
    warmupProgress: false,
    loadBackend: async () => sharedBackend(scorer),
  });
  await other.ready;
  await other.close();
  const advice = events.filter((e) => e.event === 'not_a_reranker');
  t.equal(advice.length, 1, 'one not_a_reranker event');
  t.equal(advice[0] && advice[0].level, 'warn', 'at warn');
  const named = advice[0] && /--model (\S+)/.exec(advice[0].message);
  const models = fs.readFileSync(path.join(__dirname, '..', 'docs', 'models.md'), 'utf8');
  t.ok(named && models.includes(`--model ${named[1]}`), `names ${named && named[1]}, docs/models.md's reranker`);
});

test("docs/service.md's API key paragraph names every route open without a key", (t) => {
  const doc = fs.readFileSync(path.join(__dirname, '..', 'docs', 'service.md'), 'utf8');
  const paragraph = doc.slice(doc.indexOf('**API keys.**'), doc.indexOf('**API keys.**') + 300);
  for (const route of OPEN_PATHS)
    t.ok(paragraph.includes(`\`${route}\``) || paragraph.includes(`GET ${route}\``), `names ${route}`);
  t.end();
});

test('teardown: the server closes and the tokenizer worker ends with the Scorer', async (t) => {
  await server.close();
  t.equal(server.phase, 'closed', 'closed');
  t.end();
});
