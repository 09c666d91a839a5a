'use strict';
// What the clients of the imitated servers read, over HTTP with the real
// default model: the error body (SGLang's flat fields and OpenAI's nested
// `error` at once; TEI's `{error, error_type}` on TEI's shape), scores that
// are JSON floats even when exactly 1 or 0, SGLang's empty query, OpenAI's
// GET /v1/models/{id}, TEI's GET /info and its 400 for `texts: []`.
const test = require('tape');
const { Scorer } = require('../dist/scoring/scorer');
const { startServer } = require('../dist/server/server');
const { silentLogger } = require('../dist/server/log');

let server;
let scorer;

async function call(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
  }
  const res = await fetch(`${server.url}${path}`, init);
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) };
}
const post = (path, body) => call('POST', path, body);
const get = (path) => call('GET', path);

test('setup', async (t) => {
  server = await startServer({
    port: 0,
    host: '127.0.0.1',
    warmup: [],
    timeoutMs: 600_000,
    logger: silentLogger(),
    warmupProgress: false,
    loadBackend: async (options) => (scorer = await Scorer.load(options)),
  });
  await server.ready;
  t.pass(server.url);
});

test('one error body: the flat SGLang fields and the nested OpenAI error object', async (t) => {
  const r = await post('/v1/score', { query: 'a', items: ['b'], label_token_ids: 'x' });
  t.equal(r.status, 400);
  const { object, message, type, param, code, error } = r.body;
  t.deepEqual({ object, type, param, code }, { object: 'error', type: 'BadRequestError', param: 'label_token_ids', code: 400 }, 'flat fields');
  t.ok(typeof message === 'string' && message.startsWith('label_token_ids'), message);
  t.deepEqual(error, { message, type, param, code }, 'nested error: the same message, type, param and code');
  const missing = await get('/no/such/path');
  t.equal(missing.status, 404);
  t.equal(missing.body.error.message, missing.body.message, '404: nested too');
});

test("TEI's shape: texts [] is 400 `texts` cannot be empty; errors carry {error, error_type}", async (t) => {
  const empty = await post('/rerank', { query: 'q', texts: [] });
  t.equal(empty.status, 400);
  t.equal(empty.body.error, '`texts` cannot be empty', 'the message in error (a string)');
  t.equal(empty.body.error_type, 'empty', "TEI's error_type");
  t.equal(empty.body.param, 'texts', 'and the flat fields');
  const bad = await post('/rerank', { query: 'q', texts: ['a'], raw_scores: 'no' });
  t.equal(bad.status, 400);
  t.deepEqual([typeof bad.body.error, bad.body.error_type, bad.body.param], ['string', 'validation', 'raw_scores']);
  const common = await post('/rerank', { query: 'q', documents: [] });
  t.equal(common.status, 200, 'the common shape with no documents: 200');
  t.deepEqual(common.body.results, [], 'no results');
});

/** The numbers inside the first JSON array value of `key` in `text`, as written. */
function writtenNumbers(text, key) {
  const start = text.indexOf(`"${key}":`);
  let depth = 0;
  let end = start + key.length + 3;
  for (; end < text.length; end++) {
    if (text[end] === '[') depth++;
    else if (text[end] === ']' && --depth === 0) break;
  }
  return text.slice(start + key.length + 3, end + 1).match(/-?[0-9][0-9.eE+-]*/g) ?? [];
}

test('scores are JSON floats: a softmax over one label is exactly 1, written 1.0', async (t) => {
  const label = scorer.tokenize(' yes')[0];
  const r = await post('/v1/score', { query: 'Is the sky blue?', items: [' yes', ' no'], label_token_ids: [label], apply_softmax: true });
  t.equal(r.status, 200);
  t.deepEqual(r.body.scores, [[1], [1]], 'the softmax of one value is 1');
  t.deepEqual(writtenNumbers(r.text, 'scores'), ['1.0', '1.0'], 'written with a fraction part');
  t.ok(/"prompt_tokens":\d+,/.test(r.text), 'token counts stay integers');
  const rr = await post('/v1/rerank', { query: 'q', documents: ['a', 'b'] });
  t.ok(rr.body.results.length === 2 && /"relevance_score":-?[0-9]/.test(rr.text), 'relevance_score is a number');
});

test("an empty query (SGLang's): each item is its own sequence", async (t) => {
  const items = ['Yes it is', 'No'];
  const labels = [1, 2];
  const r = await post('/v1/score', { query: '', items, label_token_ids: labels });
  t.equal(r.status, 200, r.text.slice(0, 200));
  // The same sequences split differently: the first token as the query, the rest as the item.
  for (let i = 0; i < items.length; i++) {
    const ids = scorer.tokenize(items[i]);
    const expected = ids.length > 1
      ? (await scorer.score({ query: ids.slice(0, 1), items: [ids.slice(1)], labelTokenIds: labels, algorithm: 'serial' })).scores[0]
      : (await scorer.score({ query: ids, items: [[]], labelTokenIds: labels, algorithm: 'serial' })).scores[0];
    t.ok(r.body.scores[i].every((v, j) => Math.abs(v - expected[j]) < 1e-4), `item ${i}: ${r.body.scores[i]} against ${expected}`);
  }
  const softmax = await post('/v1/score', { query: '', items, label_token_ids: labels, apply_softmax: true });
  t.ok(softmax.body.scores.every((row) => Math.abs(row[0] + row[1] - 1) < 1e-6), 'softmax rows sum to 1');
  const nothing = await post('/v1/score', { query: '', items: ['a', ''], label_token_ids: labels });
  t.deepEqual([nothing.status, nothing.body.param], [400, 'items'], 'an empty item beside an empty query: 400');
});

test('GET /v1/models/{id}: the model, or a 404 in both error shapes', async (t) => {
  const list = await get('/v1/models');
  const id = list.body.data[0].id;
  const one = await get(`/v1/models/${encodeURIComponent(id)}`);
  t.equal(one.status, 200);
  t.deepEqual(one.body, list.body.data[0], 'the same object as in the list');
  const other = await get('/v1/models/gpt-4o');
  t.equal(other.status, 404);
  t.equal(other.body.error.type, 'NotFoundError');
  t.ok(other.body.message.includes('gpt-4o'), other.body.message);
});

test("GET /info: TEI's fields", async (t) => {
  const info = await get('/info');
  t.equal(info.status, 200);
  t.equal(info.body.model_id, scorer.modelName);
  t.equal(info.body.max_input_length, scorer.config.contextLength);
  t.ok('reranker' in info.body.model_type, 'a reranker');
  for (const key of ['max_concurrent_requests', 'max_batch_tokens', 'max_client_batch_size', 'version']) t.ok(info.body[key] !== undefined, key);
});

test('teardown', async (t) => {
  await server.close();
  t.pass('closed');
});
