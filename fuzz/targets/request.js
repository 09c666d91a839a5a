'use strict';
// /v1/score request bodies: strict UTF-8 and JSON (the service's body
// parser), then normalization against the real default model's tokenizer
// and the service's default limits (DEFAULT_SERVE_OPTIONS). Failures must be HttpError (400s) or
// ScoreInputError; an accepted request must respect the limits.
const path = require('node:path');
const { DIST, scriptsUnder } = require('./common');

const { parseJsonBody } = require(path.join(DIST, 'server', 'http', 'body'));
const { HttpError } = require(path.join(DIST, 'server', 'http', 'http-errors'));
const { ScoreInputError } = require(path.join(DIST, 'scoring'));
const { normalizeScoreBody } = require(path.join(DIST, 'wire'));
const { loadModelInfo } = require(path.join(DIST, 'model'));
const { DEFAULT_SERVE_OPTIONS } = require(path.join(DIST, 'server', 'settings', 'serve-settings'));

const expected = (e) => e instanceof HttpError || e instanceof ScoreInputError;
let ctx = null;
let info = null;

function setup() {
  info = loadModelInfo();
  const { config, tokenizer } = info;
  ctx = {
    vocabSize: config.vocabSize,
    contextLength: config.contextLength,
    maxItems: DEFAULT_SERVE_OPTIONS.maxItems,
    maxRequestTokens: DEFAULT_SERVE_OPTIONS.maxRequestTokens,
    tokenize: (text) => tokenizer.encode(text),
    addBos: config.addBos,
    ...(config.bosTokenId !== undefined ? { bosTokenId: config.bosTokenId } : {}),
  };
}

function seeds() {
  const bodies = [
    { query: 'Is this relevant?', items: ['yes it is', 'no'], label_token_ids: [9891, 2152] },
    { query: [1, 2, 3], items: [[4, 5], [6]], label_token_ids: [7], apply_softmax: true, item_first: false },
    { query: 'q', items: ['a'], label_token_ids: [0], apply_softmax: false, item_first: true, model: 'x' },
    { query: '', items: [], label_token_ids: [] },
  ];
  return bodies.map((b) => Buffer.from(JSON.stringify(b), 'utf8'));
}

function run(data) {
  const body = parseJsonBody(data);
  const n = normalizeScoreBody(body, ctx);
  // Accepted: the promises the service relies on must hold (a plain check, independent of the normalizer).
  const fail = (what) => {
    throw new Error(`accepted a request that breaks a promise: ${what}`);
  };
  const isId = (t) => Number.isInteger(t) && t >= 0 && t < ctx.vocabSize;
  if (!n.queryTokens.every(isId)) fail('a query token id out of range');
  if (!n.labels.every(isId)) fail('a label id out of range');
  if (n.itemTokens.length > ctx.maxItems) fail(`${n.itemTokens.length} items`);
  let total = n.queryTokens.length;
  for (const item of n.itemTokens) {
    if (!item.every(isId)) fail('an item token id out of range');
    if (n.queryTokens.length + item.length > ctx.contextLength) fail('a sequence longer than the context');
    total += item.length;
  }
  if (total > ctx.maxRequestTokens) fail(`${total} tokens`);
  if (typeof n.applySoftmax !== 'boolean' || typeof n.itemFirst !== 'boolean') fail('flags not boolean');
}

module.exports = {
  /** The context and model info of the last setup() (the rerank target shares them). */
  shared: () => ({ ctx, info }),
  name: 'request',
  smokeExecs: 1500,
  maxLength: 1 << 14,
  scripts: scriptsUnder('dist/scoring/requests/request', 'dist/server/http/body', 'dist/scoring/requests/errors'),
  setup,
  seeds,
  run,
  expected,
  dictionary: [
    '"query"',
    '"items"',
    '"label_token_ids"',
    '"apply_softmax"',
    '"item_first"',
    '"model"',
    'true',
    'false',
    'null',
    '[]',
    '{}',
    '[[',
    ']]',
    '1e400',
    '-1',
    '49151',
    '49152',
    '"\\ud800"',
    '"\\u0000"',
    '""',
  ],
};
