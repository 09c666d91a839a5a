'use strict';
// The rerank spellings on a character tokenizer and a tiny context (no
// model): Cohere v1's max_chunks_per_doc (consecutive chunks that fit, at
// most N, the best chunk's relevance), v2's max_tokens_per_doc, TEI's
// truncate and direction, rank_fields, each with the template's suffix kept
// whole; checked against the prompt built by hand.
const test = require('tape');
const { rerankResults } = require('../dist/scoring');
const { normalizeRerankBody } = require('../dist/wire');
const { ScoreInputError } = require('../dist/scoring/requests/errors');

const VOCAB = 256;
const ids = (text) => Array.from(text, (c) => c.codePointAt(0) % VOCAB);
const SUFFIX = [250, 251];
const PREFIX = (query, instruction) => [...ids(`<${instruction}|${query}>`)];
const template = {
  template: { defaultInstruction: 'I', name: 'test' },
  yesId: 1,
  noId: 2,
  prefixTokens: PREFIX,
  documentTokens: (d) => [...ids(` ${d}`), ...SUFFIX],
  suffixLength: () => SUFFIX.length,
};
const ctx = { vocabSize: VOCAB, contextLength: 24, maxItems: 16, maxRequestTokens: 1000, tokenize: ids, addBos: false };
const Q = 'q'; // the prompt before the document: "<I|q>", 5 tokens; room for 24 - 5 - 2 = 17 document tokens
const ROOM = 17;
const DOC = 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ'; // " " + 46 = 47 document tokens

test('max_chunks_per_doc: consecutive chunks that fit, at most N, each with the suffix', (t) => {
  const body = ids(` ${DOC}`);
  const r = normalizeRerankBody({ query: Q, documents: [DOC, 'x'], max_chunks_per_doc: 2 }, template, ctx);
  t.deepEqual(r.itemDocument, [0, 0, 1], 'two chunks of document 0, document 1 whole');
  t.deepEqual(r.score.itemTokens[0], [...body.slice(0, ROOM), ...SUFFIX], 'chunk 1');
  t.deepEqual(
    r.score.itemTokens[1],
    [...body.slice(ROOM, 2 * ROOM), ...SUFFIX],
    'chunk 2: the next tokens (the rest dropped)',
  );
  t.deepEqual(r.chunkedDocuments, [0], 'reported');
  const all = normalizeRerankBody({ query: Q, documents: [DOC], max_chunks_per_doc: 10 }, template, ctx);
  t.deepEqual(
    all.score.itemTokens.map((i) => i.slice(0, -2)).flat(),
    body,
    'with room for all: the chunks are the document',
  );
  // Scores per item are [no, yes]; the document takes its best chunk.
  const results = rerankResults(r, [
    [0.7, 0.3],
    [0.1, 0.9],
    [0.5, 0.5],
  ]);
  t.deepEqual(
    results.map((x) => [x.index, x.relevanceScore]),
    [
      [0, 0.9],
      [1, 0.5],
    ],
    "the best chunk's relevance",
  );
  t.end();
});

test("a 'yes-logit' template: the log-normalizer label asked for, the raw logit of yes (rawScores) and its sigmoid, the best chunk's", (t) => {
  const yesLogit = { ...template, template: { ...template.template, relevance: 'yes-logit' } };
  const r = normalizeRerankBody({ query: Q, documents: [DOC, 'x'], max_chunks_per_doc: 2 }, yesLogit, ctx);
  t.deepEqual(r.score.labels, [2, 1, -1], 'labels no, yes and the log-normalizer (-1)');
  t.equal(r.score.applySoftmax, false, 'probabilities over the vocabulary, not over the labels');
  // Rows [P(no), P(yes), exp(-logsumexp)]: logit(yes) = log P(yes) + logsumexp.
  const lse = [3, 2.5, 4];
  const logits = [1.25, -0.5, 2];
  const rows = logits.map((z, i) => [0.01, Math.exp(z - lse[i]), Math.exp(-lse[i])]);
  const raw = rerankResults({ ...r, rawScores: true }, rows);
  t.deepEqual(
    raw.map((x) => x.index),
    [1, 0],
    'rawScores: document 1 (logit 2) before document 0 (best chunk logit 1.25)',
  );
  t.ok(
    Math.abs(raw[0].relevanceScore - 2) < 1e-12 && Math.abs(raw[1].relevanceScore - 1.25) < 1e-12,
    'rawScores: the logit of yes',
  );
  const sig = (z) => 1 / (1 + Math.exp(-z));
  const results = rerankResults(r, rows);
  t.deepEqual(
    results.map((x) => x.index),
    [1, 0],
    'document 1 (logit 2) before document 0 (best chunk logit 1.25)',
  );
  t.ok(
    Math.abs(results[0].relevanceScore - sig(2)) < 1e-12 && Math.abs(results[1].relevanceScore - sig(1.25)) < 1e-12,
    'relevance sigmoid(logit of yes)',
  );
  t.end();
});

test("v2's max_tokens_per_doc, TEI's truncate and direction, vLLM's truncate_prompt_tokens: the document cut, the suffix whole", (t) => {
  const body = ids(` ${DOC}`);
  const v2 = normalizeRerankBody({ query: Q, documents: [DOC], max_tokens_per_doc: 4 }, template, ctx, 'v2');
  t.deepEqual(v2.score.itemTokens[0], [...body.slice(0, 4), ...SUFFIX], 'v2: the first 4 tokens');
  t.deepEqual(
    v2.score.truncation,
    { tokensBefore: 5 + 47 + 2, tokensAfter: 5 + 4 + 2, truncatedItems: [0] },
    'v2: counts',
  );
  const right = normalizeRerankBody({ query: Q, texts: [DOC], truncate: true }, template, ctx);
  t.deepEqual(
    right.score.itemTokens[0],
    [...body.slice(0, ROOM), ...SUFFIX],
    'TEI truncate: the start, filling the context',
  );
  const left = normalizeRerankBody(
    { query: Q, texts: [DOC], truncate: true, truncation_direction: 'left' },
    template,
    ctx,
  );
  t.deepEqual(left.score.itemTokens[0], [...body.slice(-ROOM), ...SUFFIX], 'TEI left: the end');
  const vllm = normalizeRerankBody({ query: Q, documents: [DOC], truncate_prompt_tokens: 10 }, template, ctx);
  t.deepEqual(vllm.score.itemTokens[0], [...body.slice(-3), ...SUFFIX], 'vLLM k=10: 5 + 3 + 2, the end kept');
  const fits = normalizeRerankBody({ query: Q, documents: ['x'] }, template, ctx, 'v2');
  t.deepEqual(fits.score.truncation.truncatedItems, [], 'v2 default 4096: a short document is not cut');
  t.end();
});

test('rank_fields, and each field naming itself in a 400', (t) => {
  const r = normalizeRerankBody(
    { query: Q, documents: [{ a: 'one', b: 2, c: 'x' }, { b: true }], rank_fields: ['a', 'b'] },
    template,
    ctx,
  );
  t.deepEqual(r.documents, ['one\n2', 'true'], 'values of the named fields in order, joined by newlines');
  const cases = [
    [{ query: Q, documents: [DOC] }, 'v1', 'documents', /set max_chunks_per_doc or truncate_prompt_tokens to cut it$/],
    [{ query: Q, texts: [DOC] }, 'v1', 'texts', /set truncate to cut it$/],
    [{ query: Q, documents: [DOC], max_tokens_per_doc: 40 }, 'v2', 'documents', /set max_tokens_per_doc to cut it$/],
    [
      { query: Q, documents: ['a'], max_chunks_per_doc: 2, truncate_prompt_tokens: 9 },
      'v1',
      'truncate_prompt_tokens',
      /not both/,
    ],
    [{ query: Q, texts: ['a'], truncation_direction: 'up' }, 'v1', 'truncation_direction', /"left" or "right"/],
    [{ query: Q, texts: ['a'], truncate: 'yes' }, 'v1', 'truncate', /boolean/],
    [{ query: Q, documents: ['a'], max_tokens_per_doc: 0 }, 'v2', 'max_tokens_per_doc', /positive integer/],
    [{ query: Q, documents: [{ text: 'a' }] }, 'v2', 'documents', /must be a string/],
    [
      { query: Q, documents: [{ a: {} }], rank_fields: ['a'] },
      'v1',
      'documents',
      /must be a string, number or boolean/,
    ],
    [{ query: Q, documents: ['a'], rank_fields: [] }, 'v1', 'rank_fields', /non-empty array/],
    [{ query: Q, texts: ['a'], rank_fields: ['a'] }, 'v1', 'rank_fields', /Cohere v1/],
  ];
  for (const [body, shape, param, message] of cases) {
    try {
      normalizeRerankBody(body, template, ctx, shape);
      t.fail(`${JSON.stringify(body).slice(0, 60)}: accepted`);
    } catch (error) {
      t.ok(
        error instanceof ScoreInputError && error.param === param && message.test(error.message),
        `${param}: ${error.message}`,
      );
    }
  }
  t.end();
});
