'use strict';
// POST /v1/rerank (and /rerank) over HTTP with the real default model: the
// common rerank JSON and text-embeddings-inference's shape, sorted results
// with indices into the request, top_n, return_documents, raw_scores, every
// invalid field answered 400 naming it, and concurrent requests (taken
// together when they share the query) each equal to its own answer alone.
const test = require('tape');
const { startInProcessServer } = require('./helpers/in-process-server');
const { postJson } = require('./helpers/service');

let server;
let scorer;

const post = (path, body) => postJson(`${server.url}${path}`, body);

test('setup', async (t) => {
  server = await startInProcessServer({
    onScorer: (s) => {
      scorer = s;
      return scorer;
    },
  });
  t.pass(server.url);
});

const QUERY = 'What is the capital of France?';
const DOCS = ['Paris is the capital of France.', 'Bananas are yellow.', 'Berlin is in Germany.', ''];

test('the common shape: sorted results with indices, usage, the library answer', async (t) => {
  const r = await post('/v1/rerank', { model: 'any', query: QUERY, documents: DOCS });
  t.equal(r.status, 200);
  const lib = await scorer.rerank({ query: QUERY, documents: DOCS });
  t.equal(r.body.object, 'rerank');
  t.equal(typeof r.body.id, 'string', 'an id');
  t.equal(r.body.model, scorer.modelName);
  t.deepEqual(
    r.body.results.map((x) => [x.index, x.relevance_score]),
    lib.results.map((x) => [x.index, x.relevanceScore]),
    'equals the library call',
  );
  t.ok(
    r.body.results.every((x, i) => i === 0 || r.body.results[i - 1].relevance_score >= x.relevance_score),
    'sorted',
  );
  t.deepEqual(r.body.usage, { prompt_tokens: lib.usage.promptTokens, total_tokens: lib.usage.promptTokens }, 'usage');
  const alias = await post('/rerank', { query: QUERY, documents: DOCS });
  t.deepEqual(alias.body.results, r.body.results, '/rerank is the same route');
});

test('top_n, return_documents, {text} documents', async (t) => {
  const r = await post('/v1/rerank', {
    query: QUERY,
    documents: DOCS.map((text) => ({ text })),
    top_n: 2,
    return_documents: true,
  });
  const all = await post('/v1/rerank', { query: QUERY, documents: DOCS });
  t.equal(r.status, 200);
  t.deepEqual(
    r.body.results.map((x) => x.index),
    all.body.results.slice(0, 2).map((x) => x.index),
    'the best 2',
  );
  t.ok(
    r.body.results.every((x) => x.document.text === DOCS[x.index]),
    'documents as {text}',
  );
});

test("SGLang's shape (rid or top_k, as the SGLang Model Gateway forwards it): SGLang's bare array out", async (t) => {
  const r = await post('/v1/rerank', {
    query: QUERY,
    documents: DOCS,
    model: 'unknown',
    return_documents: true,
    rid: null,
    user: null,
  });
  const common = await post('/v1/rerank', { query: QUERY, documents: DOCS });
  t.equal(r.status, 200);
  t.ok(Array.isArray(r.body), 'a bare array');
  t.deepEqual(
    r.body.map((x) => [x.index, x.score, x.document]),
    common.body.results.map((x) => [x.index, x.relevance_score, DOCS[x.index]]),
    'same order and scores, documents as strings',
  );
  t.ok(
    r.body.every(
      (x) => typeof x.meta_info.id === 'string' && x.meta_info.prompt_tokens === common.body.usage.prompt_tokens,
    ),
    'meta_info: the request id and its prompt tokens',
  );
  const top = await post('/v1/rerank', { query: QUERY, documents: DOCS, top_k: 2, return_documents: false });
  t.deepEqual(
    top.body.map((x) => x.index),
    common.body.results.slice(0, 2).map((x) => x.index),
    'top_k keeps the best k',
  );
  t.ok(
    top.body.every((x) => x.document === undefined),
    'return_documents: false leaves documents out',
  );
  const dflt = await post('/v1/rerank', { query: QUERY, documents: DOCS, rid: 'r-1' });
  t.ok(
    dflt.body.every((x) => x.document === DOCS[x.index]),
    "return_documents defaults to true (SGLang's default)",
  );
  const objects = await post('/v1/rerank', { query: QUERY, documents: [{ text: 'a' }], rid: null });
  t.equal(objects.status, 400, 'object documents are refused');
  t.equal(objects.body.param, 'documents', 'naming documents');
  const both = await post('/v1/rerank', { query: QUERY, documents: DOCS, top_k: 1, top_n: 1 });
  t.equal(both.status, 400, 'top_k with top_n is refused');
});

test("text-embeddings-inference's shape: texts in, a bare array of {index, score, text} out", async (t) => {
  const r = await post('/rerank', { query: QUERY, texts: DOCS, return_text: true });
  const common = await post('/v1/rerank', { query: QUERY, documents: DOCS });
  t.equal(r.status, 200);
  t.ok(Array.isArray(r.body), 'a bare array');
  t.deepEqual(
    r.body.map((x) => [x.index, x.score, x.text]),
    common.body.results.map((x) => [x.index, x.relevance_score, DOCS[x.index]]),
    'same order and scores, texts returned',
  );
  const raw = await post('/rerank', { query: QUERY, texts: DOCS, raw_scores: true });
  const byIndex = new Map(r.body.map((x) => [x.index, x.score]));
  t.ok(
    raw.body.every((x) => Math.abs(x.score - Math.log(byIndex.get(x.index) / (1 - byIndex.get(x.index)))) < 1e-6),
    'raw_scores: the log-odds of yes against no',
  );
});

test('each invalid field: 400 naming it', async (t) => {
  const cases = [
    [{ documents: ['a'] }, 'query'],
    [{ query: ['q'], documents: ['a'] }, 'query'],
    [{ query: 'q' }, 'documents'],
    [{ query: 'q', documents: [3] }, 'documents'],
    [{ query: 'q', documents: ['a'], top_n: 'two' }, 'top_n'],
    [{ query: 'q', documents: ['a'], return_documents: 1 }, 'return_documents'],
    [{ query: 'q', documents: ['a'], instruction: {} }, 'instruction'],
    [{ query: 'q', documents: ['a'], model: 7 }, 'model'],
    [{ query: 'q', texts: [null] }, 'texts'],
    [{ query: 'q', texts: ['a'], raw_scores: 'no' }, 'raw_scores'],
    [{ query: 'q', texts: ['a'], return_text: 'no' }, 'return_text'],
    [{ query: 'q', texts: ['a'], documents: ['a'] }, 'texts'],
    [[], 'body'],
  ];
  for (const [body, param] of cases) {
    const r = await post('/v1/rerank', body);
    t.ok(
      r.status === 400 && r.body.param === param && r.body.object === 'error',
      `${JSON.stringify(body).slice(0, 50)}: ${r.status} ${r.body.param} (${r.body.message})`,
    );
  }
  const bad = await post('/v1/rerank', '{"query":');
  t.equal(bad.status, 400, 'invalid JSON: 400');
});

test('concurrent requests: taken together when they share the query, each equal to its answer alone', async (t) => {
  const bodies = [
    { query: QUERY, documents: DOCS },
    { query: QUERY, documents: ['Lyon is a city in France.'] },
    { query: QUERY, documents: DOCS.slice(0, 2), top_n: 1 },
    { query: 'Which fruit is yellow?', documents: DOCS },
  ];
  const alone = [];
  for (const b of bodies) alone.push(await post('/v1/rerank', b));
  const before = scorer.stats();
  const together = await Promise.all([...bodies, ...bodies, ...bodies].map((b) => post('/v1/rerank', b)));
  t.ok(
    together.every((r) => r.status === 200),
    'all 200',
  );
  t.ok(
    together.every((r, i) => JSON.stringify(r.body.results) === JSON.stringify(alone[i % bodies.length].body.results)),
    'each equals its answer alone, bit for bit',
  );
  const after = scorer.stats();
  const turns = after.turns - before.turns;
  t.equal(after.turnRequests - before.turnRequests, together.length, 'every request reached the device once');
  t.ok(turns < together.length, `${together.length} requests in ${turns} turns of the device`);
});

test('teardown', async (t) => {
  await server.close();
  t.pass('closed');
});
