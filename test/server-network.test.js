'use strict';
// The service facing a network (docs/service.md, "Deploying on a network"),
// over real HTTP against the real default model: API keys (from the options
// and from a key file, re-read on reload), refusals (no key, a wrong key of
// the same length, one of another length, malformed headers, a revoked key)
// answered 401 with WWW-Authenticate and the common error body before the
// body is read, counted by reason, never logged; and CORS. Nothing refused
// reaches the Scorer: every Scorer entry point is counted, and its own
// itemsScored counter is compared with a plain sum of the accepted items.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Scorer } = require('../dist/scoring/scorer');
const { startServer } = require('../dist/server/hosts/standalone-server');
const { createLogger } = require('../dist/server/telemetry/log');

const KEY_A = 'pk-a-0123456789abcdef0123456789ab'; // 32 characters
const KEY_B = 'pk-b-fedcba9876543210fedcba98765x';
const SAME_LENGTH_WRONG = 'pk-a-0123456789abcdef0123456789ac';
const OTHER_LENGTH_WRONG = 'pk-a-0123456789';
const ORIGIN = 'https://app.example.com';
const ENTRY_POINTS = ['tokenize', 'normalizeWith', 'scoreNormalized'];

let server;
let scorer;
let calls = 0;
let acceptedItems = 0;
const logLines = [];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-net-'));
const keyFile = path.join(dir, 'keys');

const SCORE = { query: 'Is this a fruit?', items: [' apple', ' car'], label_token_ids: [9805, 787] };
const ROUTES = [
  ['/v1/score', SCORE],
  ['/v1/rerank', { query: 'capital of France', documents: ['Paris', 'Berlin'] }],
  ['/v2/rerank', { model: 'm', query: 'capital of France', documents: ['Paris', 'Berlin'] }],
  ['/rerank', { query: 'capital of France', texts: ['Paris', 'Berlin'] }],
];

async function request(urlPath, { method = 'GET', body, authorization, headers = {} } = {}) {
  const h = { ...headers };
  if (body !== undefined) h['content-type'] = 'application/json';
  if (authorization !== undefined) h.authorization = authorization;
  const res = await fetch(`${server.url}${urlPath}`, {
    method,
    headers: h,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  // Every accepted scoring request's items, counted by hand (the reference for itemsScored).
  if (res.status === 200 && method === 'POST' && typeof body === 'object')
    acceptedItems += (body.items ?? body.documents ?? body.texts).length;
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  return { status: res.status, headers: res.headers, text, body: json };
}

const bearer = (key) => `Bearer ${key}`;

async function metric(name, labels) {
  const r = await request('/metrics', { authorization: bearer(KEY_A) });
  const line = r.text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

test('setup: keys from the options and a key file, CORS for one origin', async (t) => {
  fs.writeFileSync(keyFile, `# rotated weekly\n${KEY_B}\n\n`);
  server = await startServer({
    port: 0,
    host: '127.0.0.1',
    warmup: [],
    timeoutMs: 600_000,
    warmupProgress: false,
    apiKey: [KEY_A],
    apiKeyFile: keyFile,
    corsAllowOrigin: [ORIGIN],
    logger: createLogger((line) => logLines.push(line)),
    loadBackend: async (options) => {
      scorer = await Scorer.load(options);
      for (const name of ENTRY_POINTS) {
        const original = scorer[name].bind(scorer);
        scorer[name] = (...args) => {
          calls++;
          return original(...args);
        };
      }
      return scorer;
    },
  });
  await server.ready;
  t.ok(server.url.startsWith('http://127.0.0.1:'), server.url);
});

test('no key, a wrong key (same length, other length), malformed headers: 401 on every route, nothing scored', async (t) => {
  const refusals = [
    [undefined, 'missing'],
    [bearer(SAME_LENGTH_WRONG), 'wrong'],
    [bearer(OTHER_LENGTH_WRONG), 'wrong'],
    [`bearer ${KEY_A.toUpperCase()}`, 'wrong'],
    [`Basic ${Buffer.from(`user:${KEY_A}`).toString('base64')}`, 'malformed'],
    ['Bearer', 'malformed'],
    [`Token ${KEY_A}`, 'malformed'],
    [`Bearer ${KEY_A} extra`, 'malformed'],
  ];
  const before = { calls, items: scorer.stats().itemsScored };
  const counted = { missing: 0, wrong: 0, malformed: 0 };
  for (const reason of Object.keys(counted))
    counted[reason] = await metric('pjrt_score_auth_refusals_total', `reason="${reason}"`);
  const sent = { missing: 0, wrong: 0, malformed: 0 };
  for (const [authorization, reason] of refusals) {
    for (const [route, body] of ROUTES) {
      const r = await request(route, { method: 'POST', body, authorization });
      sent[reason]++;
      t.equal(
        r.status,
        401,
        `${route} with ${authorization === undefined ? 'no key' : authorization.slice(0, 12)}: 401`,
      );
      t.equal(r.headers.get('www-authenticate'), 'Bearer', 'WWW-Authenticate: Bearer');
      const expected = {
        missing: 'an API key is required: send Authorization: Bearer <key>',
        malformed: 'the Authorization header must be Bearer <key>',
        wrong: 'the API key is not valid',
      }[reason];
      const error = { message: expected, type: 'AuthenticationError', param: 'authorization', code: 401 };
      t.deepEqual(r.body, { object: 'error', ...error, error }, 'the common error body');
    }
  }
  for (const route of ['/v1/models', '/v1/models/x', '/info', '/metrics', '/openapi.json', '/no/such/path']) {
    const r = await request(route);
    sent.missing++;
    t.equal(r.status, 401, `GET ${route} without a key: 401 (even where there is no route)`);
  }
  t.equal(calls, before.calls, 'no Scorer entry point was called');
  t.equal(scorer.stats().itemsScored, before.items, "the Scorer's itemsScored did not move");
  for (const reason of Object.keys(sent)) {
    t.equal(
      (await metric('pjrt_score_auth_refusals_total', `reason="${reason}"`)) - counted[reason],
      sent[reason],
      `pjrt_score_auth_refusals_total{reason="${reason}"} counted ${sent[reason]}`,
    );
  }
  const leaked = logLines.filter(
    (line) =>
      line.includes(KEY_A) ||
      line.includes(KEY_B) ||
      line.includes(SAME_LENGTH_WRONG) ||
      line.includes(OTHER_LENGTH_WRONG),
  );
  t.deepEqual(leaked, [], 'no log line holds a key, right or wrong');
  t.ok(
    logLines.some((line) => line.includes('"status":401')),
    'refusals are logged (without the key)',
  );
});

test('a refused body is not read: a large one gets 401 and the connection is closed', async (t) => {
  const before = calls;
  const big = JSON.stringify({ ...SCORE, items: Array.from({ length: 20000 }, () => ' apple pie') });
  const r = await request('/v1/score', { method: 'POST', body: big });
  t.equal(r.status, 401, '401');
  t.equal(r.headers.get('connection'), 'close', 'Connection: close (the body left unread)');
  t.equal(calls, before, 'the Scorer saw nothing');
});

test('/health answers without a key; the right keys (options and file) score', async (t) => {
  const health = await request('/health');
  t.equal(health.status, 200, '/health: 200 without a key (probes)');
  for (const key of [KEY_A, KEY_B]) {
    for (const [route, body] of ROUTES) {
      const before = scorer.stats().itemsScored;
      const r = await request(route, { method: 'POST', body, authorization: bearer(key) });
      t.equal(r.status, 200, `${route} with the ${key === KEY_A ? 'option' : 'file'} key: 200`);
      const items = (body.items ?? body.documents ?? body.texts).length;
      t.equal(scorer.stats().itemsScored - before, items, `the Scorer scored the ${items} items`);
    }
  }
  const scored = await request('/v1/score', { method: 'POST', body: SCORE, authorization: `bearer   ${KEY_A}` });
  t.equal(scored.status, 200, 'the scheme is case-insensitive, spaces around the key allowed');
  const models = await request('/v1/models', { authorization: bearer(KEY_A) });
  t.equal(models.status, 200, 'GET /v1/models with a key: 200');
  const missing = await request('/no/such/path', { authorization: bearer(KEY_A) });
  t.equal(missing.status, 404, 'an unknown path with a key: 404');
});

test('a key removed from the key file is refused after reload(); the others still work', async (t) => {
  fs.writeFileSync(keyFile, 'pk-c-new-key-after-rotation-000001\n');
  const result = server.reload();
  t.deepEqual(result, { keys: 2, tls: false }, 'reload: the option key and the one file key');
  const before = calls;
  const revoked = await request('/v1/score', { method: 'POST', body: SCORE, authorization: bearer(KEY_B) });
  t.equal(revoked.status, 401, 'the revoked key: 401');
  t.equal(calls, before, 'nothing scored for it');
  t.equal(
    (
      await request('/v1/score', {
        method: 'POST',
        body: SCORE,
        authorization: bearer('pk-c-new-key-after-rotation-000001'),
      })
    ).status,
    200,
    'the new file key: 200',
  );
  t.equal(
    (await request('/v1/score', { method: 'POST', body: SCORE, authorization: bearer(KEY_A) })).status,
    200,
    'the option key: 200',
  );
  fs.writeFileSync(keyFile, 'has a space\n');
  t.throws(
    () => server.reload(),
    /--api-key-file .*: line 1 is not a key/,
    'a bad file: reload throws, naming the line, not the text',
  );
  t.equal(
    (
      await request('/v1/score', {
        method: 'POST',
        body: SCORE,
        authorization: bearer('pk-c-new-key-after-rotation-000001'),
      })
    ).status,
    200,
    'and the keys in use stay',
  );
  fs.rmSync(keyFile);
  t.throws(() => server.reload(), /cannot read it \(ENOENT\)/, 'a missing file: reload throws');
  t.equal(
    (await request('/v1/score', { method: 'POST', body: SCORE, authorization: bearer(KEY_A) })).status,
    200,
    'still served',
  );
});

test('CORS: the allowed origin gets its headers and an answered preflight; another origin gets nothing', async (t) => {
  const preflight = await request('/v1/score', {
    method: 'OPTIONS',
    headers: {
      origin: ORIGIN,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type',
    },
  });
  t.equal(preflight.status, 204, 'preflight without a key: 204');
  t.equal(preflight.headers.get('access-control-allow-origin'), ORIGIN, 'Access-Control-Allow-Origin: the origin');
  t.equal(preflight.headers.get('access-control-allow-methods'), 'POST', "the route's methods");
  t.ok(
    /authorization/.test(preflight.headers.get('access-control-allow-headers')) &&
      /content-type/.test(preflight.headers.get('access-control-allow-headers')),
    'Authorization and Content-Type allowed',
  );
  t.equal(preflight.headers.get('vary'), 'Origin', 'Vary: Origin');
  const call = await request('/v1/score', {
    method: 'POST',
    body: SCORE,
    authorization: bearer(KEY_A),
    headers: { origin: ORIGIN },
  });
  t.equal(call.status, 200, 'the call: 200');
  t.equal(call.headers.get('access-control-allow-origin'), ORIGIN, 'the answer carries the origin');
  t.ok(/x-request-id/.test(call.headers.get('access-control-expose-headers')), 'x-request-id exposed');
  const refused = await request('/v1/score', { method: 'POST', body: SCORE, headers: { origin: ORIGIN } });
  t.equal(refused.status, 401, 'without a key, a CORS call is still 401');
  t.equal(refused.headers.get('access-control-allow-origin'), ORIGIN, 'and readable by the page');
  const other = await request('/v1/score', {
    method: 'OPTIONS',
    headers: { origin: 'https://evil.example.com', 'access-control-request-method': 'POST' },
  });
  t.notEqual(other.status, 204, `another origin's preflight is not answered (${other.status})`);
  t.equal(other.headers.get('access-control-allow-origin'), null, 'no Access-Control-Allow-Origin');
});

test('the Scorer scored exactly the accepted items', async (t) => {
  t.ok(acceptedItems > 0, `${acceptedItems} items accepted`);
  t.equal(
    scorer.stats().itemsScored,
    acceptedItems,
    "itemsScored equals the plain sum of the accepted requests' items",
  );
  t.end();
});

// The mounts: the host's authorize(req) hook decides, and the ecosystem's CORS packages apply.
async function mounted(kind) {
  const { createScoringService } = require('../dist/server');
  const { silentLogger } = require('../dist/server/telemetry/log');
  const service = createScoringService({
    warmup: [],
    logger: silentLogger(),
    warmupProgress: false,
    loadBackend: async () => scorer,
  });
  await service.ready;
  const authorize = (req) => {
    if (req.headers['x-hook-throws'] === '1') throw new Error('the hook failed');
    return req.headers['x-tenant'] === 'acme';
  };
  if (kind === 'fastify') {
    const app = require('fastify')();
    await app.register(require('@fastify/cors'), { origin: [ORIGIN] });
    await app.register(service.fastifyPlugin({ health: true, authorize }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    return { url: `http://127.0.0.1:${app.server.address().port}`, close: () => app.close() };
  }
  const app = require('express')();
  app.use(require('cors')({ origin: [ORIGIN] }));
  app.use(service.expressRouter({ health: true, authorize }));
  const listener = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => listener.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${listener.address().port}`,
    close: () => new Promise((resolve) => listener.close(resolve)),
  };
}

for (const kind of ['fastify', 'express']) {
  test(`${kind} mount: authorize(req) refuses with the same 401, lets through, and a throwing hook is a 500; ${kind === 'fastify' ? '@fastify/cors' : 'cors'} answers the preflight`, async (t) => {
    const host = await mounted(kind);
    const base = server.url;
    server.url = host.url; // request() talks to the mount
    try {
      const before = calls;
      const refused = await request('/v1/score', { method: 'POST', body: SCORE });
      t.equal(refused.status, 401, 'the hook said no: 401');
      t.equal(refused.headers.get('www-authenticate'), 'Bearer', 'WWW-Authenticate: Bearer');
      const error = { message: 'not authorized', type: 'AuthenticationError', param: 'authorization', code: 401 };
      t.deepEqual(refused.body, { object: 'error', ...error, error }, 'the common error body');
      t.equal(calls, before, 'nothing reached the Scorer');
      t.equal((await request('/health')).status, 200, '/health is open');
      const allowed = await request('/v1/score', { method: 'POST', body: SCORE, headers: { 'x-tenant': 'acme' } });
      t.equal(allowed.status, 200, 'the hook said yes: 200');
      t.equal(allowed.body.scores.length, 2, 'scored');
      const thrown = await request('/v1/score', {
        method: 'POST',
        body: SCORE,
        headers: { 'x-tenant': 'acme', 'x-hook-throws': '1' },
      });
      t.equal(thrown.status, 500, 'a hook that throws: 500, the process lives');
      const preflight = await request('/v1/score', {
        method: 'OPTIONS',
        headers: { origin: ORIGIN, 'access-control-request-method': 'POST' },
      });
      t.equal(preflight.status, 204, 'the preflight answered by the CORS package');
      t.equal(preflight.headers.get('access-control-allow-origin'), ORIGIN, 'for the allowed origin');
      const other = await request('/v1/score', {
        method: 'POST',
        body: SCORE,
        headers: { 'x-tenant': 'acme', origin: 'https://evil.example.com' },
      });
      t.equal(other.headers.get('access-control-allow-origin'), null, 'another origin: no Access-Control-Allow-Origin');
    } finally {
      server.url = base;
      await host.close();
    }
  });
}

test('teardown', async (t) => {
  await server.close();
  fs.rmSync(dir, { recursive: true, force: true });
  t.pass('closed');
});
