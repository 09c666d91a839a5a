'use strict';
// /v1/rerank bodies (the common shape and text-embeddings-inference's):
// strict UTF-8 and JSON, then normalization with the default model's rerank
// template and the service's default limits. Failures must be HttpError or
// ScoreInputError; an accepted request must respect the limits.
const path = require('node:path');
const { DIST, scriptsUnder } = require('./common');
const request = require('./request');

const { parseJsonBody } = require(path.join(DIST, 'server', 'http', 'body'));
const { normalizeRerankBody } = require(path.join(DIST, 'wire'));
const { chooseTemplate, resolveTemplate } = require(path.join(DIST, 'scoring', 'requests', 'rerank-template'));

let template = null;

function setup() {
  request.setup();
  const { info } = request.shared();
  template = resolveTemplate(
    chooseTemplate({ name: info.name, architecture: info.config.architecture }, info.tokenizer),
    info.tokenizer,
  );
}

function seeds() {
  const bodies = [
    { query: 'What is a fruit?', documents: ['apple', 'car', { text: 'pear' }], top_n: 2, return_documents: true },
    { query: 'q', texts: ['a', 'b'], raw_scores: false, return_text: true },
    { query: 'q', documents: ['a'], instruction: 'Judge relevance.', model: 'x' },
    { query: '', documents: [] },
  ];
  return bodies.map((b) => Buffer.from(JSON.stringify(b), 'utf8'));
}

function run(data) {
  const { ctx } = request.shared();
  const n = normalizeRerankBody(parseJsonBody(data), template, ctx);
  // Accepted: the scoring request inside must keep the limits (a plain check).
  const s = n.score;
  const isId = (t) => Number.isInteger(t) && t >= 0 && t < ctx.vocabSize;
  const fail = (what) => {
    throw new Error(`accepted a rerank request that breaks a promise: ${what}`);
  };
  if (!s.queryTokens.every(isId) || !s.labels.every(isId)) fail('a token id out of range');
  if (s.itemTokens.length > ctx.maxItems) fail(`${s.itemTokens.length} documents`);
  let total = s.queryTokens.length;
  for (const item of s.itemTokens) {
    if (!item.every(isId)) fail('a document token id out of range');
    if (s.queryTokens.length + item.length > ctx.contextLength) fail('a sequence longer than the context');
    total += item.length;
  }
  if (total > ctx.maxRequestTokens) fail(`${total} tokens`);
}

module.exports = {
  name: 'rerank',
  smokeExecs: 1500,
  maxLength: 1 << 14,
  scripts: scriptsUnder('dist/scoring/requests/rerank', 'dist/scoring/requests/request', 'dist/server/http/body'),
  setup,
  seeds,
  run,
  expected: request.expected,
  dictionary: [
    '"query"',
    '"documents"',
    '"texts"',
    '"top_n"',
    '"return_documents"',
    '"return_text"',
    '"raw_scores"',
    '"instruction"',
    '"text"',
    '"model"',
    'true',
    'false',
    'null',
    '[]',
    '{}',
    '-1',
    '0',
    '1e400',
    '""',
    '"\\ud800"',
  ],
};
