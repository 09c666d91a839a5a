'use strict';
// Bad requests over HTTP: each gets a 400 (413 for an oversized body) in the
// Score API error body, naming the field at fault; then 2,000 random and
// mutated bodies: never a 500, never a crash, and a valid request still gets
// the scores it got before.
const test = require('tape');
const { prng } = require('./helpers/prng');
const { startService } = require('./helpers/service');

const VOCAB = 49152; // SmolLM2
const CONTEXT = 8192;
const MAX_ITEMS = 64;
const MAX_TOKENS = 9000;
const MAX_BODY = 65536;
const VALID = { query: 'Is this a fruit? Answer yes or no:', items: [' apple', ' car'], label_token_ids: [9805, 787] };

let service;

function errorIs(t, res, status, param, what) {
  t.equal(
    res.status,
    status,
    `${what}: status ${status}${res.status !== status ? ` (got ${res.status}: ${res.text.slice(0, 300)})` : ''}`,
  );
  const body = res.json || {};
  t.equal(body.object, 'error', `${what}: object "error"`);
  t.equal(body.code, status, `${what}: code ${status}`);
  t.equal(body.param, param, `${what}: param ${JSON.stringify(param)}`);
  t.equal(typeof body.message, 'string', `${what}: a message`);
  t.ok(body.message && body.message.length > 0, `${what}: message says why: ${body.message}`);
  if (status === 400) t.equal(body.type, 'BadRequestError', `${what}: type BadRequestError`);
}

const without = (field) => {
  const body = { ...VALID };
  delete body[field];
  return body;
};

test('start the server', async (t) => {
  service = await startService([
    '--warmup',
    '16x8x2',
    '--max-items',
    String(MAX_ITEMS),
    '--max-request-tokens',
    String(MAX_TOKENS),
    '--max-body-bytes',
    String(MAX_BODY),
  ]);
  t.ok(service.port > 0, `listening on ${service.port}`);
});

let before;
test('a valid request, kept to compare after the fuzzing', async (t) => {
  before = await service.score(VALID);
  t.equal(before.status, 200, '200');
  t.equal(before.json.scores.length, 2, 'two rows');
});

const CASES = [
  ['missing query', without('query'), 'query'],
  ['query null', { ...VALID, query: null }, 'query'],
  ['query a number', { ...VALID, query: 42 }, 'query'],
  ['query an object', { ...VALID, query: { text: 'a' } }, 'query'],
  ['an empty query with an empty item (no token to score at)', { ...VALID, query: [], items: [[1], []] }, 'items'],
  ['query with a lone surrogate', { ...VALID, query: 'bad \ud800 text' }, 'query'],
  ['query longer than the context', { ...VALID, query: new Array(CONTEXT + 1).fill(28), items: [[1]] }, 'query'],
  ['missing items', without('items'), 'items'],
  ['items null', { ...VALID, items: null }, 'items'],
  ['items a number', { ...VALID, items: 3 }, 'items'],
  ['items an object', { ...VALID, items: { a: 1 } }, 'items'],
  ['items true', { ...VALID, items: true }, 'items'],
  ['an item a number', { ...VALID, items: ['a', 5] }, 'items'],
  ['an item null', { ...VALID, items: [null] }, 'items'],
  ['text query, token-id items', { ...VALID, items: [[1, 2]] }, 'items'],
  ['token-id query, text items', { ...VALID, query: [1, 2], items: ['a'] }, 'items'],
  ['text and token-id items mixed', { ...VALID, items: ['a', [1, 2]] }, 'items'],
  ['too many items', { ...VALID, items: new Array(MAX_ITEMS + 1).fill('x') }, 'items'],
  ['too many tokens', { ...VALID, query: [1], items: new Array(MAX_ITEMS).fill(new Array(150).fill(28)) }, 'items'],
  ['missing label_token_ids', without('label_token_ids'), 'label_token_ids'],
  ['empty label_token_ids', { ...VALID, label_token_ids: [] }, 'label_token_ids'],
  ['label_token_ids a number', { ...VALID, label_token_ids: 9805 }, 'label_token_ids'],
  ['non-integer label', { ...VALID, label_token_ids: [9805.5] }, 'label_token_ids'],
  ['string label', { ...VALID, label_token_ids: ['9805'] }, 'label_token_ids'],
  ['negative label', { ...VALID, label_token_ids: [-1] }, 'label_token_ids'],
  ['out-of-vocabulary label', { ...VALID, label_token_ids: [VOCAB] }, 'label_token_ids'],
  ['huge label', { ...VALID, label_token_ids: [1e300] }, 'label_token_ids'],
  ['out-of-vocabulary query token', { ...VALID, query: [1, VOCAB], items: [[2]] }, 'query'],
  ['negative query token', { ...VALID, query: [-5], items: [[2]] }, 'query'],
  ['out-of-vocabulary item token', { ...VALID, query: [1, 2], items: [[3], [VOCAB + 7]] }, 'items'],
  ['non-integer item token', { ...VALID, query: [1, 2], items: [[0.5]] }, 'items'],
  ['apply_softmax a string', { ...VALID, apply_softmax: 'true' }, 'apply_softmax'],
  ['apply_softmax 1', { ...VALID, apply_softmax: 1 }, 'apply_softmax'],
  ['apply_softmax null', { ...VALID, apply_softmax: null }, 'apply_softmax'],
  ['item_first a string', { ...VALID, item_first: 'false' }, 'item_first'],
  ['item_first 0', { ...VALID, item_first: 0 }, 'item_first'],
  ['model a number', { ...VALID, model: 7 }, 'model'],
  ['body an array', [VALID], 'body'],
  ['body a string', 'just text', 'body'],
  ['body null', null, 'body'],
];

test('invalid fields -> 400 naming the field', async (t) => {
  for (const [what, body, param] of CASES) {
    const res = await service.score(JSON.stringify(body));
    errorIs(t, res, 400, param, what);
  }
});

test('malformed JSON, invalid UTF-8, empty body -> 400 on body', async (t) => {
  errorIs(t, await service.score('{"query": "a", "items": ['), 400, 'body', 'truncated JSON');
  errorIs(t, await service.score("{'query': 'a'}"), 400, 'body', 'single quotes');
  errorIs(t, await service.score('{"query": "a",}'), 400, 'body', 'trailing comma');
  errorIs(t, await service.score('NaN'), 400, 'body', 'NaN');
  errorIs(t, await service.score(''), 400, 'body', 'empty body');
  const invalidUtf8 = Buffer.concat([
    Buffer.from('{"query": "caf'),
    Buffer.from([0xc3, 0x28]),
    Buffer.from('", "items": ["a"], "label_token_ids": [1]}'),
  ]);
  errorIs(t, await service.score(invalidUtf8), 400, 'body', 'invalid UTF-8 (bad continuation byte)');
  const overlong = Buffer.concat([
    Buffer.from('{"query": "'),
    Buffer.from([0xc0, 0xaf]),
    Buffer.from('", "items": ["a"], "label_token_ids": [1]}'),
  ]);
  errorIs(t, await service.score(overlong), 400, 'body', 'invalid UTF-8 (overlong encoding)');
  const surrogate = Buffer.concat([
    Buffer.from('{"query": "'),
    Buffer.from([0xed, 0xa0, 0x80]),
    Buffer.from('", "items": ["a"], "label_token_ids": [1]}'),
  ]);
  errorIs(t, await service.score(surrogate), 400, 'body', 'invalid UTF-8 (encoded surrogate)');
});

test('wrong content type -> 400 on content-type; a missing one is taken as JSON', async (t) => {
  const text = JSON.stringify(VALID);
  errorIs(
    t,
    await service.score(text, { headers: { 'content-type': 'text/plain' } }),
    400,
    'content-type',
    'text/plain',
  );
  errorIs(
    t,
    await service.score(text, { headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
    400,
    'content-type',
    'form',
  );
  errorIs(
    t,
    await service.score(text, { headers: { 'content-type': 'application/json; charset=latin1' } }),
    400,
    'content-type',
    'latin1 charset',
  );
  const ok = await service.score(text, { headers: { 'content-type': 'application/json; charset=utf-8' } });
  t.equal(ok.status, 200, 'application/json; charset=utf-8 is accepted');
  const none = await service.score(text, { headers: { 'content-type': undefined } });
  t.equal(none.status, 200, 'no Content-Type is accepted as JSON (as FastAPI does)');
});

test('oversized body -> 413, with or without Content-Length', async (t) => {
  const big = JSON.stringify({ ...VALID, items: new Array(MAX_BODY / 8).fill('abcdefgh') });
  t.ok(big.length > MAX_BODY, `body of ${big.length} bytes > limit ${MAX_BODY}`);
  errorIs(t, await service.score(big), 413, 'body', 'with Content-Length');
  errorIs(
    t,
    await service.score(big, { headers: { 'content-length': undefined, 'transfer-encoding': 'chunked' } }),
    413,
    'body',
    'chunked',
  );
  const again = await service.score(VALID);
  t.equal(again.status, 200, 'the server answers the next request');
});

test('unknown route -> 404, wrong method -> 405', async (t) => {
  const notFound = await service.request({ path: '/v1/nothing' });
  t.equal(notFound.status, 404, '404');
  t.equal(notFound.json.object, 'error', 'error body');
  const wrongMethod = await service.request({ path: '/v1/score' });
  t.equal(wrongMethod.status, 405, 'GET /v1/score -> 405');
  t.equal(wrongMethod.headers.allow, 'POST', 'Allow: POST');
});

// ---- fuzzing ----------------------------------------------------------------

const rng = prng(20261122);
const pick = (list) => list[Math.floor(rng.next() * list.length)];

function randomString() {
  const alphabets = ['abc xyz', 'é日本🍣\u0000\u001f"\\', '\ud800\udc00\ud83d', '{}[],:'];
  const alphabet = [...pick(alphabets)];
  return Array.from({ length: rng.int(0, 8) }, () => pick(alphabet)).join('');
}

function randomValue(depth = 0) {
  switch (rng.int(0, depth > 2 ? 5 : 8)) {
    case 0:
      return null;
    case 1:
      return rng.next() < 0.5;
    case 2:
      return rng.int(-3, VOCAB + 3);
    case 3:
      return pick([0.5, -0, 1e308, -1e-308, 2 ** 53, 49151, 49152, -1, 1.0000001]);
    case 4:
      return randomString();
    case 5:
      return rng.int(0, 5);
    case 6:
      return Array.from({ length: rng.int(0, 4) }, () => randomValue(depth + 1));
    case 7:
      return Array.from({ length: rng.int(0, 4) }, () =>
        Array.from({ length: rng.int(0, 4) }, () => rng.int(-1, VOCAB)),
      );
    default:
      return Object.fromEntries(
        Array.from({ length: rng.int(0, 3) }, () => [
          pick(['query', 'items', 'x', 'label_token_ids']),
          randomValue(depth + 1),
        ]),
      );
  }
}

function validBody() {
  const tokens = rng.next() < 0.3;
  // Few items: the fuzzing is about the HTTP and validation paths; each valid body still runs the model.
  const n = rng.int(0, 2);
  const body = tokens
    ? {
        query: Array.from({ length: rng.int(1, 6) }, () => rng.int(0, VOCAB - 1)),
        items: Array.from({ length: n }, () => Array.from({ length: rng.int(0, 4) }, () => rng.int(0, VOCAB - 1))),
      }
    : { query: `q ${randomString()}x`, items: Array.from({ length: n }, () => randomString().slice(0, 4)) };
  body.label_token_ids = Array.from({ length: rng.int(1, 3) }, () => rng.int(0, VOCAB - 1));
  if (rng.next() < 0.5) body.apply_softmax = rng.next() < 0.5;
  if (rng.next() < 0.2) body.item_first = false;
  return body;
}

/** A body as bytes: a valid one mutated at the field, value or byte level, or random JSON, or random bytes. */
function fuzzBody() {
  const kind = rng.int(0, 9);
  const body = validBody();
  const fields = ['query', 'items', 'label_token_ids', 'apply_softmax', 'item_first', 'model'];
  if (kind <= 2) {
    // Field level: drop, replace or add.
    for (let k = rng.int(1, 2); k > 0; k--) {
      const field = pick(fields);
      if (rng.next() < 0.3) delete body[field];
      else body[field] = randomValue();
    }
    if (rng.next() < 0.2) body[randomString() || 'extra'] = randomValue();
    return Buffer.from(JSON.stringify(body));
  }
  if (kind === 3) {
    // Element level inside the lists.
    const field = pick(['items', 'label_token_ids', 'query']);
    if (Array.isArray(body[field]) && body[field].length > 0)
      body[field][rng.int(0, body[field].length - 1)] = randomValue();
    return Buffer.from(JSON.stringify(body));
  }
  if (kind <= 6) {
    // Byte level: flip, delete, insert, truncate.
    const bytes = Buffer.from(JSON.stringify(body));
    const out = [...bytes];
    for (let k = rng.int(1, 3); k > 0 && out.length > 0; k--) {
      const at = rng.int(0, out.length - 1);
      switch (rng.int(0, 3)) {
        case 0:
          out[at] = rng.int(0, 255);
          break;
        case 1:
          out.splice(at, 1);
          break;
        case 2:
          out.splice(at, 0, rng.int(0, 255));
          break;
        default:
          out.length = at;
      }
    }
    return Buffer.from(out);
  }
  if (kind === 7) return Buffer.from(JSON.stringify(randomValue()));
  if (kind === 8) return Buffer.from(Array.from({ length: rng.int(0, 64) }, () => rng.int(0, 255)));
  if (rng.next() < 0.5) return Buffer.from(JSON.stringify(randomValue()));
  return Buffer.from(JSON.stringify(body)); // valid, to keep the device path in the mix
}

test('fuzz: 2,000 random or mutated bodies -> no 500, no crash', async (t) => {
  const counts = {};
  const unexpected = [];
  const started = Date.now();
  for (let i = 0; i < 2000; i++) {
    const body = fuzzBody();
    const headers =
      rng.next() < 0.05
        ? { 'content-type': pick(['text/plain', 'application/json; charset=utf-16', 'application/x+json', '']) }
        : {};
    let res;
    try {
      res = await service.score(body, { headers });
    } catch (error) {
      unexpected.push({ i, error: error.message, body: body.toString('latin1').slice(0, 200) });
      break;
    }
    counts[res.status] = (counts[res.status] || 0) + 1;
    const fine =
      (res.status === 200 && res.json && res.json.object === 'scoring' && Array.isArray(res.json.scores)) ||
      (res.status === 400 &&
        res.json &&
        res.json.object === 'error' &&
        typeof res.json.param === 'string' &&
        res.json.message.length > 0);
    if (!fine && unexpected.length < 10)
      unexpected.push({
        i,
        status: res.status,
        text: res.text.slice(0, 300),
        body: body.toString('latin1').slice(0, 200),
      });
  }
  t.comment(`statuses: ${JSON.stringify(counts)} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  t.deepEqual(unexpected, [], 'every answer is a 200 scoring body or a 400 error body naming a field');
  t.notOk(counts[500], 'no 500');
  t.ok(counts[200] > 40, 'valid bodies were scored along the way');
  t.ok(counts[400] > 1000, 'most bodies were refused');
  t.equal(service.exit, null, 'the server is still running');
  t.notOk(
    service.logs.some((e) => e.level === 'error'),
    'no error logged',
  );
});

test('after the fuzzing, a valid request gets the same scores', async (t) => {
  const after = await service.score(VALID);
  t.equal(after.status, 200, '200');
  const diff = Math.max(
    ...after.json.scores.flatMap((row, i) => row.map((v, j) => Math.abs(v - before.json.scores[i][j]))),
  );
  t.ok(diff <= 1e-4, `same scores as before (max abs diff ${diff.toExponential(2)})`);
  const health = await service.request({ path: '/health' });
  t.equal(health.status, 200, 'healthy');
});

test('stop the server', async (t) => {
  t.deepEqual(await service.stop(), { code: 0, signal: null }, 'exit 0');
});
