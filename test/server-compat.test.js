'use strict';
// What the clients of the imitated servers read, over HTTP with the real
// default model: the error body (SGLang's flat fields and OpenAI's nested
// `error` at once; TEI's `{error, error_type}` on TEI's shape), scores that
// are JSON floats even when exactly 1 or 0, SGLang's empty query, OpenAI's
// GET /v1/models/{id}, TEI's GET /info and its 400 for `texts: []`.
const test = require('tape');
const { startInProcessServer } = require('./helpers/in-process-server');
const { readRerankBody } = require('../dist/wire');

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
  const answer = { status: res.status, text, body: JSON.parse(text) };
  received.push({ method, path: path.split('?')[0], status: res.status, body: answer.body });
  return answer;
}
/** Every answer the suite receives, validated against /openapi.json at the end. */
const received = [];
const post = (path, body) => call('POST', path, body);
const get = (path) => call('GET', path);

test('setup', async (t) => {
  server = await startInProcessServer({ onScorer: (s) => (scorer = s) });
  t.pass(server.url);
});

test('one error body: the flat SGLang fields and the nested OpenAI error object', async (t) => {
  const r = await post('/v1/score', { query: 'a', items: ['b'], label_token_ids: 'x' });
  t.equal(r.status, 400);
  const { object, message, type, param, code, error } = r.body;
  t.deepEqual(
    { object, type, param, code },
    { object: 'error', type: 'BadRequestError', param: 'label_token_ids', code: 400 },
    'flat fields',
  );
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
  const r = await post('/v1/score', {
    query: 'Is the sky blue?',
    items: [' yes', ' no'],
    label_token_ids: [label],
    apply_softmax: true,
  });
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
    const expected =
      ids.length > 1
        ? (
            await scorer.score({
              query: ids.slice(0, 1),
              items: [ids.slice(1)],
              labelTokenIds: labels,
              algorithm: 'serial',
            })
          ).scores[0]
        : (await scorer.score({ query: ids, items: [[]], labelTokenIds: labels, algorithm: 'serial' })).scores[0];
    t.ok(
      r.body.scores[i].every((v, j) => Math.abs(v - expected[j]) < 1e-4),
      `item ${i}: ${r.body.scores[i]} against ${expected}`,
    );
  }
  const softmax = await post('/v1/score', { query: '', items, label_token_ids: labels, apply_softmax: true });
  t.ok(
    softmax.body.scores.every((row) => Math.abs(row[0] + row[1] - 1) < 1e-6),
    'softmax rows sum to 1',
  );
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
  for (const key of ['max_concurrent_requests', 'max_batch_tokens', 'max_client_batch_size', 'version'])
    t.ok(info.body[key] !== undefined, key);
});

const QUERY = 'What is the capital of France?';
const DOCS = ['Paris is the capital of France.', 'Bananas are yellow.', 'Berlin is in Germany.'];

test("POST /v2/rerank: Cohere v2's shape, the same relevances as /v1/rerank", async (t) => {
  const v1 = await post('/v1/rerank', { query: QUERY, documents: DOCS, return_documents: true });
  const v2 = await post('/v2/rerank', {
    model: 'rerank-v3.5',
    query: QUERY,
    documents: DOCS,
    top_n: 2,
    return_documents: true,
  });
  t.equal(v2.status, 200, v2.text.slice(0, 200));
  t.deepEqual(v2.body.results, v1.body.results.slice(0, 2), 'the best two, as v1 ranks them');
  t.equal(v2.body.meta.api_version.version, '2', 'meta.api_version');
  t.equal(v2.body.meta.tokens.input_tokens, v2.body.usage.prompt_tokens, 'meta.tokens.input_tokens');
  const objects = await post('/v2/rerank', { query: QUERY, documents: [{ text: 'a' }] });
  t.deepEqual([objects.status, objects.body.param], [400, 'documents'], 'v2 documents are strings');
  const fields = await post('/v2/rerank', { query: QUERY, documents: ['a'], rank_fields: ['text'] });
  t.deepEqual([fields.status, fields.body.param], [400, 'rank_fields'], 'rank_fields is v1');
});

test("rank_fields on v1: the named fields' values in order; the caller's whole object returned", async (t) => {
  const docs = [
    { id: 'a1', title: 'France', text: 'Paris is its capital.', year: 2020 },
    { id: 'b2', title: 'Fruit', text: 'Bananas are yellow.' },
  ];
  const ranked = await post('/v1/rerank', {
    query: QUERY,
    documents: docs,
    rank_fields: ['title', 'text'],
    return_documents: true,
  });
  t.equal(ranked.status, 200, ranked.text.slice(0, 200));
  const joined = await post('/v1/rerank', { query: QUERY, documents: docs.map((d) => `${d.title}\n${d.text}`) });
  t.deepEqual(
    ranked.body.results.map((r) => [r.index, r.relevance_score]),
    joined.body.results.map((r) => [r.index, r.relevance_score]),
    'equals the values joined by newlines, as strings',
  );
  t.ok(
    ranked.body.results.every((r) => JSON.stringify(r.document) === JSON.stringify(docs[r.index])),
    'document: the whole object, extra fields kept',
  );
  const none = await post('/v1/rerank', { query: QUERY, documents: [{ body: 'x' }] });
  t.deepEqual([none.status, none.body.param], [400, 'documents'], 'an object with none of the ranked fields: 400');
  t.ok(none.body.message.includes('rank_fields'), none.body.message);
});

// Long documents: 20,000 words, each one token behind a space, so a cut by tokens is a cut by words.
const WORDS = [
  'apple',
  'river',
  'blue',
  'stone',
  'music',
  'garden',
  'paper',
  'winter',
  'horse',
  'silver',
  'cloud',
  'table',
  'bread',
  'light',
  'ocean',
  'forest',
];
const LONG = Array.from({ length: 20_000 }, (_, i) => WORDS[(i * 7 + ((i >> 4) % 5)) % WORDS.length]);
const text = (words) => words.join(' ');
const first = (n) => text(LONG.slice(0, n));
const last = (n) => text(LONG.slice(LONG.length - n));
const CUT = 64;

test('a 20,000-token document: the tokens are the words', async (t) => {
  t.equal(scorer.tokenize(` ${text(LONG)}`).length, 20_000, "20,000 tokens behind the template's space");
  t.deepEqual(
    scorer.tokenize(` ${last(CUT)}`),
    scorer.tokenize(` ${text(LONG)}`).slice(-CUT),
    'the last words are the last tokens',
  );
});

test('past the context with no truncation asked for: 400 naming the field to set, in each shape', async (t) => {
  const cases = [
    ['/v1/rerank', { query: QUERY, documents: [text(LONG)] }, 'max_chunks_per_doc or truncate_prompt_tokens'],
    ['/rerank', { query: QUERY, texts: [text(LONG)] }, 'truncate'],
    ['/v2/rerank', { query: QUERY, documents: [text(LONG)], max_tokens_per_doc: 20_000 }, 'max_tokens_per_doc'],
    [
      '/v1/score',
      { query: QUERY, items: [text(LONG)], label_token_ids: [1, 2] },
      'truncate (or truncate_prompt_tokens)',
    ],
  ];
  for (const [path, body, field] of cases) {
    const r = await post(path, body);
    t.ok(
      r.status === 400 && r.body.message.endsWith(`set ${field} to cut it`),
      `${path}: ${r.status} ${r.body.message}`,
    );
  }
  try {
    await scorer.score({ query: QUERY, items: [text(LONG)], labelTokenIds: [1, 2] });
    t.fail('the library accepted it');
  } catch (error) {
    t.ok(error.message.endsWith('set truncate to cut it'), `library: ${error.message}`);
  }
});

/** Relevance of each document by index. */
const byIndex = (results) => Object.fromEntries(results.map((r) => [r.index, r.relevance_score]));

test('truncated scores equal the hand-cut document: Cohere v2 max_tokens_per_doc (keeps the start), vLLM truncate_prompt_tokens (keeps the end)', async (t) => {
  const v2 = await post('/v2/rerank', { query: QUERY, documents: [text(LONG), DOCS[0]], max_tokens_per_doc: CUT });
  const byHand = await post('/v1/rerank', { query: QUERY, documents: [first(CUT), DOCS[0]] });
  t.equal(v2.status, 200, v2.text.slice(0, 200));
  t.deepEqual(byIndex(v2.body.results), byIndex(byHand.body.results), 'v2: the first 64 tokens');
  t.equal(v2.body.usage.prompt_tokens, byHand.body.usage.prompt_tokens, 'usage after: the hand-cut count');
  t.equal(
    v2.body.usage.prompt_tokens_before_truncation,
    byHand.body.usage.prompt_tokens - CUT + 20_000,
    'usage before: 20,000 document tokens',
  );
  t.ok(v2.body.meta.warnings[0].startsWith('truncated to fit: documents 0 '), v2.body.meta.warnings[0]);
  const one = await post('/v1/rerank', { query: QUERY, documents: ['apple'] });
  const overhead = one.body.usage.prompt_tokens - 1; // the prompt around one document of one token
  const vllm = await post('/v1/rerank', {
    query: QUERY,
    documents: [text(LONG)],
    truncate_prompt_tokens: overhead + CUT,
  });
  const endByHand = await post('/v1/rerank', { query: QUERY, documents: [last(CUT)] });
  t.equal(vllm.status, 200, vllm.text.slice(0, 200));
  t.deepEqual(
    byIndex(vllm.body.results),
    byIndex(endByHand.body.results),
    'truncate_prompt_tokens: the last 64 tokens',
  );
});

test("TEI truncate and v1 max_chunks_per_doc: the model's context, cut as by hand (compared in tokens)", async (t) => {
  const ctx = scorer.config.contextLength;
  const one = scorer.normalizeWith(readRerankBody({ query: QUERY, documents: ['apple'] }));
  const room = ctx - (one.score.promptTokens - 1); // document tokens that fit beside the prompt
  const item = (body, shape) => scorer.normalizeWith(readRerankBody(body, shape)).score.itemTokens;
  const right = item({ query: QUERY, texts: [text(LONG)], truncate: true });
  t.deepEqual(right, item({ query: QUERY, texts: [first(room)] }), `truncate: the first ${room} tokens`);
  t.equal(one.score.queryTokens.length + right[0].length, ctx, 'the sequence fills the context');
  const left = item({ query: QUERY, texts: [text(LONG)], truncate: true, truncation_direction: 'Left' });
  t.deepEqual(left, item({ query: QUERY, texts: [last(room)] }), 'truncation_direction left: the last tokens');
  t.deepEqual(
    item({ query: QUERY, documents: [text(LONG)], max_chunks_per_doc: 1 }),
    right,
    'max_chunks_per_doc 1: the first chunk',
  );
  const three = scorer.normalizeWith(
    readRerankBody({ query: QUERY, documents: [text(LONG), 'apple'], max_chunks_per_doc: 3 }),
  );
  t.deepEqual(three.itemDocument, [0, 0, 0, 1], 'three chunks of document 0, then document 1 whole');
  t.deepEqual(
    three.score.itemTokens[1],
    item({ query: QUERY, documents: [text(LONG.slice(room, 2 * room))] })[0].map((id, i) =>
      i === 0 ? three.score.itemTokens[1][0] : id,
    ),
    'the second chunk: the next tokens',
  );
  const v2 = item({ query: QUERY, documents: [text(LONG)] }, 'v2');
  t.deepEqual(
    v2,
    item({ query: QUERY, documents: [first(4096)] }),
    "v2's default max_tokens_per_doc: the first 4,096 tokens",
  );
});

test('/v1/score truncate and truncate_prompt_tokens, and the library option: scores equal the hand-cut item', async (t) => {
  const labels = [scorer.tokenize(' yes')[0], scorer.tokenize(' no')[0]];
  const q = 'Is this about fruit?';
  const qLen = scorer.tokenize(q).length;
  const start = await post('/v1/score', {
    query: q,
    items: [text(LONG)],
    label_token_ids: labels,
    truncate: { keep: 'start', max_item_tokens: CUT },
  });
  const startByHand = await post('/v1/score', { query: q, items: [first(CUT)], label_token_ids: labels });
  t.equal(start.status, 200, start.text.slice(0, 200));
  t.deepEqual(start.body.scores, startByHand.body.scores, 'keep start: the first 64 tokens');
  t.equal(start.body.usage.prompt_tokens_before_truncation, qLen + 20_000, 'usage before');
  t.equal(start.body.usage.prompt_tokens, qLen + CUT, 'usage after');
  const end = await post('/v1/score', {
    query: q,
    items: [text(LONG)],
    label_token_ids: labels,
    truncate_prompt_tokens: qLen + CUT,
  });
  const endByHand = await post('/v1/score', { query: q, items: [` ${last(CUT)}`], label_token_ids: labels });
  t.deepEqual(end.body.scores, endByHand.body.scores, 'truncate_prompt_tokens: the last 64 tokens');
  const lib = await scorer.score({
    query: q,
    items: [text(LONG)],
    labelTokenIds: labels,
    truncate: { keep: 'end', maxItemTokens: CUT },
  });
  t.deepEqual(lib.scores, endByHand.body.scores, 'library truncate { keep: end }');
  t.deepEqual(
    lib.truncation,
    { tokensBefore: qLen + 20_000, tokensAfter: qLen + CUT, truncatedItems: [0] },
    'library: the counts',
  );
  const rr = await scorer.rerank({ query: QUERY, documents: [text(LONG)], truncate: { maxItemTokens: CUT } });
  const rrByHand = await scorer.rerank({ query: QUERY, documents: [first(CUT)] });
  t.equal(rr.results[0].relevanceScore, rrByHand.results[0].relevanceScore, 'library rerank truncate');
});

test('GET /openapi.json: a valid OpenAPI 3.1 document, and every answer above validates against it', async (t) => {
  const r = await get('/openapi.json');
  t.equal(r.status, 200);
  const doc = r.body;
  t.equal(doc.openapi, '3.1.0');
  const { Validator } = await import('@seriousme/openapi-schema-validator');
  const verdict = await new Validator().validate(doc);
  t.ok(verdict.valid, `the OpenAPI validator: ${JSON.stringify(verdict.errors ?? []).slice(0, 500)}`);
  for (const path of [
    '/v1/score',
    '/v1/rerank',
    '/v2/rerank',
    '/rerank',
    '/v1/models/{id}',
    '/info',
    '/health',
    '/metrics',
    '/openapi.json',
  ])
    t.ok(doc.paths[path], `documents ${path}`);
  const Ajv2020 = require('ajv/dist/2020').default;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const templates = Object.keys(doc.paths).map((p) => ({ p, re: new RegExp(`^${p.replace(/\{[^}]+\}/g, '[^/]+')}$`) }));
  let checked = 0;
  const unmatched = new Set();
  for (const answer of received) {
    const template = templates.find(({ re }) => re.test(answer.path));
    if (!template) {
      unmatched.add(answer.path);
      continue;
    }
    const response = doc.paths[template.p][answer.method.toLowerCase()].responses[String(answer.status)];
    if (!response) {
      t.fail(`${answer.method} ${answer.path} ${answer.status}: no such response documented`);
      continue;
    }
    const validate = ajv.compile({ ...response.content['application/json'].schema, components: doc.components });
    if (!validate(answer.body))
      t.fail(`${answer.method} ${answer.path} ${answer.status}: ${ajv.errorsText(validate.errors)}`);
    checked++;
  }
  t.deepEqual([...unmatched], ['/no/such/path'], 'only the deliberate 404 has no route');
  t.equal(
    checked,
    received.length - 1,
    `all ${checked} answers but the deliberate 404 validated against their documented schema`,
  );
});

test('teardown', async (t) => {
  await server.close();
  t.pass('closed');
});
