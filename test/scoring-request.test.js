'use strict';
// Request validation and normalization (docs/design.md "Scoring semantics"). The tokenizer is
// a fake (one token per character, its char code): this tests the rules, not
// a model.
const test = require('tape');
const { normalizeRequest, ScoreInputError } = require('../dist/scoring');
const { normalizeScoreBody } = require('../dist/wire');

const VOCAB = 1000;
const BOS = 1;
const charTokens = (text) => Array.from(text, (c) => c.codePointAt(0) % VOCAB);

function context(overrides = {}) {
  return {
    vocabSize: VOCAB,
    contextLength: 32,
    maxItems: 4,
    maxRequestTokens: 64,
    tokenize: charTokens,
    addBos: false,
    ...overrides,
  };
}

function body(overrides = {}) {
  return { query: 'abc', items: ['x', 'yz'], label_token_ids: [5, 7], ...overrides };
}

// Asserts fn throws a ScoreInputError for `param` with code 400 and a message matching `message`.
function rejects(t, fn, param, message, label) {
  let error = null;
  try {
    fn();
  } catch (caught) {
    error = caught;
  }
  const name = label || `${param}: ${message}`;
  if (!(error instanceof ScoreInputError)) {
    t.fail(`${name}: expected ScoreInputError, got ${error && error.stack ? error.stack : error}`);
    return;
  }
  t.equal(error.param, param, `${name} -> param ${param}`);
  t.equal(error.code, 'INPUT_INVALID', `${name} -> code INPUT_INVALID`);
  t.equal(error.status, 400, `${name} -> status 400`);
  if (message instanceof RegExp) t.match(error.message, message, `${name} -> message`);
  else t.equal(error.message, message, `${name} -> message`);
}

test('the body must be an object', (t) => {
  for (const bad of [null, undefined, 'q', 3, [], [body()]]) {
    rejects(
      t,
      () => normalizeScoreBody(bad, context()),
      'body',
      /^the body must be an object, got /,
      `body ${JSON.stringify(bad)}`,
    );
  }
  rejects(t, () => normalizeRequest(null, context()), 'request', 'the request must be an object, got null');
  t.end();
});

test('missing or wrongly typed query and items', (t) => {
  const ctx = context();
  rejects(
    t,
    () => normalizeScoreBody(body({ query: undefined }), ctx),
    'query',
    'query is required: a string or an array of token ids',
  );
  for (const bad of [null, 3, true, { text: 'a' }]) {
    rejects(
      t,
      () => normalizeScoreBody(body({ query: bad }), ctx),
      'query',
      /^query must be a string or an array of token ids, got /,
      `query ${JSON.stringify(bad)}`,
    );
  }
  rejects(t, () => normalizeScoreBody(body({ items: undefined }), ctx), 'items', /^items is required/);
  for (const bad of [null, 3, { a: 1 }, false]) {
    rejects(
      t,
      () => normalizeScoreBody(body({ items: bad }), ctx),
      'items',
      /^items must be a string, an array of strings or an array of token-id arrays, got /,
      `items ${JSON.stringify(bad)}`,
    );
  }
  // A flat array of numbers is not a list of items.
  rejects(
    t,
    () => normalizeScoreBody(body({ query: [1], items: [1, 2] }), ctx),
    'items',
    'items[0] must be a string or an array of token ids, got number 1',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ items: ['a', null] }), ctx),
    'items',
    'items[1] must be a string or an array of token ids, got null',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ query: [1], items: [['a']] }), ctx),
    'items',
    'items[0][0] must be a token id (an integer), got string "a"',
  );
  t.end();
});

test('text and token ids cannot be mixed', (t) => {
  const ctx = context();
  rejects(
    t,
    () => normalizeScoreBody(body({ query: 'abc', items: [[1, 2]] }), ctx),
    'items',
    'items[0] is token ids but query is text: text and token ids cannot be mixed in one request',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ query: [1, 2], items: ['a'] }), ctx),
    'items',
    'items[0] is text but query is token ids: text and token ids cannot be mixed in one request',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ query: [1, 2], items: 'a' }), ctx),
    'items',
    /^items\[0\] is text but query is token ids/,
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ items: ['a', [1]] }), ctx),
    'items',
    /^items\[1\] is token ids but query is text/,
  );
  t.end();
});

test('label_token_ids: required, non-empty, integers in the vocabulary', (t) => {
  const ctx = context();
  rejects(
    t,
    () => normalizeScoreBody(body({ label_token_ids: undefined }), ctx),
    'label_token_ids',
    'label_token_ids is required: a non-empty array of token ids',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ label_token_ids: 5 }), ctx),
    'label_token_ids',
    'label_token_ids must be a non-empty array of token ids, got number 5',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ label_token_ids: '5' }), ctx),
    'label_token_ids',
    /^label_token_ids must be a non-empty array of token ids, got string/,
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ label_token_ids: [] }), ctx),
    'label_token_ids',
    'label_token_ids must not be empty',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ label_token_ids: [5, 1.5] }), ctx),
    'label_token_ids',
    'label_token_ids[1] = 1.5 is not an integer token id',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ label_token_ids: [-1] }), ctx),
    'label_token_ids',
    'label_token_ids[0] = -1 is out of the vocabulary [0, 1000)',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ label_token_ids: [5, 7, 1000] }), ctx),
    'label_token_ids',
    'label_token_ids[2] = 1000 is out of the vocabulary [0, 1000)',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ label_token_ids: ['5'] }), ctx),
    'label_token_ids',
    'label_token_ids[0] must be a token id (an integer), got string "5"',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ label_token_ids: [null] }), ctx),
    'label_token_ids',
    'label_token_ids[0] must be a token id (an integer), got null',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ label_token_ids: [NaN] }), ctx),
    'label_token_ids',
    'label_token_ids[0] = NaN is not an integer token id',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ label_token_ids: [Infinity] }), ctx),
    'label_token_ids',
    'label_token_ids[0] = Infinity is not an integer token id',
  );
  // The library spells the field its own way, in .param and in the message.
  rejects(
    t,
    () => normalizeRequest({ query: 'a', items: [], labelTokenIds: [] }, ctx),
    'labelTokenIds',
    'labelTokenIds must not be empty',
  );
  rejects(
    t,
    () => normalizeRequest({ query: 'a', items: [], label_token_ids: [1] }, ctx),
    'labelTokenIds',
    /^labelTokenIds is required/,
  );
  t.end();
});

test('token ids in query and items: integers in [0, vocab)', (t) => {
  const ctx = context();
  rejects(
    t,
    () => normalizeScoreBody(body({ query: [1, -1], items: [] }), ctx),
    'query',
    'query[1] = -1 is out of the vocabulary [0, 1000)',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ query: [1000], items: [] }), ctx),
    'query',
    'query[0] = 1000 is out of the vocabulary [0, 1000)',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ query: [2.5], items: [] }), ctx),
    'query',
    'query[0] = 2.5 is not an integer token id',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ query: [1], items: [[1], [2, 1000]] }), ctx),
    'items',
    'items[1][1] = 1000 is out of the vocabulary [0, 1000)',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ query: [1], items: [[1], [0.5]] }), ctx),
    'items',
    'items[1][0] = 0.5 is not an integer token id',
  );
  t.end();
});

test('flags must be booleans', (t) => {
  const ctx = context();
  for (const bad of ['true', 1, 0, null, [], {}]) {
    rejects(
      t,
      () => normalizeScoreBody(body({ apply_softmax: bad }), ctx),
      'apply_softmax',
      /^apply_softmax must be a boolean, got /,
      `apply_softmax ${JSON.stringify(bad)}`,
    );
    rejects(
      t,
      () => normalizeScoreBody(body({ item_first: bad }), ctx),
      'item_first',
      /^item_first must be a boolean, got /,
      `item_first ${JSON.stringify(bad)}`,
    );
  }
  rejects(
    t,
    () => normalizeRequest({ query: 'a', items: [], labelTokenIds: [1], applySoftmax: 'yes' }, ctx),
    'applySoftmax',
    'applySoftmax must be a boolean, got string "yes"',
  );
  rejects(
    t,
    () => normalizeRequest({ query: 'a', items: [], labelTokenIds: [1], itemFirst: 1 }, ctx),
    'itemFirst',
    'itemFirst must be a boolean, got number 1',
  );
  t.end();
});

test("empty query: each item its own sequence (SGLang's semantics); an empty item beside it is an error", (t) => {
  const empty = normalizeScoreBody(body({ query: '', items: ['ab', 'c'] }), context());
  t.deepEqual(empty.queryTokens, [], 'no query tokens');
  t.deepEqual(empty.itemTokens, [charTokens('ab'), charTokens('c')], 'each item whole');
  t.equal(empty.promptTokens, 3, 'usage counts the items');
  // A tokenizer may map non-empty text to nothing: the same rule.
  const blank = normalizeScoreBody(
    body({ query: '   ', items: ['x'] }),
    context({ tokenize: (s) => charTokens(s.trim()) }),
  );
  t.deepEqual(blank.queryTokens, [], 'a query that tokenizes to nothing is empty');
  const ids = normalizeScoreBody(body({ query: [], items: [[1], [2, 3]] }), context());
  t.deepEqual(ids.itemTokens, [[1], [2, 3]], 'token ids: an empty query too');
  rejects(
    t,
    () => normalizeScoreBody(body({ query: '', items: ['a', ''] }), context()),
    'items',
    'items[1] is empty and so is query: the sequence has no token to score at',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ query: [], items: [[]] }), context()),
    'items',
    'items[0] is empty and so is query: the sequence has no token to score at',
  );
  const withBos = normalizeScoreBody(body({ query: '' }), context({ addBos: true, bosTokenId: BOS }));
  t.deepEqual(withBos.queryTokens, [BOS], 'empty text query with BOS is [BOS]');
  const itemFirst = normalizeScoreBody(
    body({ query: '', item_first: true }),
    context({ addBos: true, bosTokenId: BOS }),
  );
  t.deepEqual(itemFirst.queryTokens, [], 'item_first: the query carries no BOS');
  t.deepEqual(
    itemFirst.itemTokens,
    [
      [BOS, 120],
      [BOS, 121, 122],
    ],
    'item_first: BOS starts each item ++ query sequence',
  );
  t.end();
});

test('truncation: each spelling cuts the item only, keeps the end asked for, reports the counts', (t) => {
  const ctx = context(); // context 32
  const q = 'q'.repeat(10);
  const item = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJ'; // 36 tokens, one per character
  const start = normalizeScoreBody(body({ query: q, items: [item, 'x'], truncate: true }), ctx);
  t.deepEqual(start.itemTokens[0], charTokens(item.slice(0, 22)), 'truncate: true keeps the first 22 (32 - 10)');
  t.deepEqual(start.itemTokens[1], charTokens('x'), 'an item that fits is untouched');
  t.deepEqual(
    start.truncation,
    { tokensBefore: 10 + 36 + 1, tokensAfter: 10 + 22 + 1, truncatedItems: [0] },
    'the counts',
  );
  t.equal(start.promptTokens, 33, 'promptTokens counts what runs');
  const end = normalizeScoreBody(body({ query: q, items: [item], truncate: { keep: 'end', max_item_tokens: 5 } }), ctx);
  t.deepEqual(end.itemTokens[0], charTokens(item.slice(-5)), 'keep end, at most 5 tokens');
  const vllm = normalizeScoreBody(body({ query: q, items: [item], truncate_prompt_tokens: 16 }), ctx);
  t.deepEqual(
    vllm.itemTokens[0],
    charTokens(item.slice(-6)),
    'truncate_prompt_tokens 16: the sequence is 16, the item keeps its end',
  );
  const whole = normalizeScoreBody(body({ query: q, items: [item], truncate_prompt_tokens: -1 }), ctx);
  t.equal(whole.itemTokens[0].length, 22, 'truncate_prompt_tokens -1: the context');
  const lib = normalizeRequest(
    { query: q, items: [item], labelTokenIds: [1], truncate: { keep: 'end', maxItemTokens: 3 } },
    ctx,
  );
  t.deepEqual(lib.itemTokens[0], charTokens(item.slice(-3)), 'library camelCase');
  const first = normalizeScoreBody(
    body({ query: q, items: [item], truncate: true, item_first: true }),
    context({ addBos: true, bosTokenId: BOS }),
  );
  t.deepEqual(
    first.itemTokens[0],
    [BOS, ...charTokens(item.slice(0, 21))],
    'item_first: BOS kept in front, counted against the context',
  );
  t.equal(
    normalizeScoreBody(body({ query: q, items: ['x'] }), ctx).truncation,
    undefined,
    'no truncation asked: no report',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ truncate: true, truncate_prompt_tokens: 5 }), ctx),
    'truncate_prompt_tokens',
    'give truncate or truncate_prompt_tokens, not both',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ truncate: 'yes' }), ctx),
    'truncate',
    /^truncate must be a boolean or an object/,
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ truncate: { keep: 'middle' } }), ctx),
    'truncate',
    'truncate.keep must be "start" or "end", got string "middle"',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ truncate: { max_item_tokens: 0 } }), ctx),
    'truncate',
    /^truncate.max_item_tokens must be a positive integer/,
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ truncate_prompt_tokens: 0 }), ctx),
    'truncate_prompt_tokens',
    /^truncate_prompt_tokens must be a positive integer/,
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ query: q, items: [item], truncate_prompt_tokens: 10 }), ctx),
    'query',
    'query is 10 tokens: it leaves no room for items[0] within 10 tokens',
  );
  rejects(
    t,
    () => normalizeRequest({ query: q, items: [item], labelTokenIds: [1] }, ctx),
    'items',
    "query + items[0] is 46 tokens, longer than the model's context of 32 tokens: set truncate to cut it",
  );
  t.end();
});

test('invalid Unicode text is rejected', (t) => {
  rejects(
    t,
    () => normalizeScoreBody(body({ query: 'ab\uD800c' }), context()),
    'query',
    'query is not valid Unicode: lone UTF-16 surrogate at index 2',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ items: ['ok', '\uDC00'] }), context()),
    'items',
    'items[1] is not valid Unicode: lone UTF-16 surrogate at index 0',
  );
  const paired = normalizeScoreBody(body({ query: 'a\uD83D\uDE00' }), context());
  t.equal(paired.queryTokens.length, 2, 'a surrogate pair is one valid character');
  t.end();
});

test('context length and request limits', (t) => {
  const ctx = context(); // context 32, maxItems 4, maxRequestTokens 64
  const q10 = 'q'.repeat(10);
  rejects(
    t,
    () => normalizeScoreBody(body({ query: q10, items: ['a', 'b'.repeat(23)] }), ctx),
    'items',
    "query + items[1] is 33 tokens, longer than the model's context of 32 tokens: set truncate (or truncate_prompt_tokens) to cut it",
  );
  t.equal(
    normalizeScoreBody(body({ query: q10, items: ['b'.repeat(22)] }), ctx).promptTokens,
    32,
    'exactly the context length is accepted',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ query: 'q'.repeat(33), items: [] }), ctx),
    'query',
    "query is 33 tokens, longer than the model's context of 32 tokens",
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ query: [1], items: [[1], [1], [1], [1], [1]] }), ctx),
    'items',
    'too many items: 5 > 4 (the configured maximum per request)',
  );
  t.equal(
    normalizeScoreBody(body({ query: [1], items: [[1], [1], [1], [1]] }), ctx).itemTokens.length,
    4,
    'exactly maxItems is accepted',
  );
  // query 10 + 3 items of 20 = 70 > 64; the count stops at the item that crosses the limit.
  rejects(
    t,
    () => normalizeScoreBody(body({ query: q10, items: ['i'.repeat(20), 'i'.repeat(20), 'i'.repeat(20)] }), ctx),
    'items',
    'the request has at least 70 tokens (the query once plus every item), more than the limit of 64',
  );
  t.equal(
    normalizeScoreBody(body({ query: q10, items: ['i'.repeat(20), 'i'.repeat(20), 'i'.repeat(14)] }), ctx).promptTokens,
    64,
    'exactly maxRequestTokens is accepted',
  );
  rejects(
    t,
    () => normalizeScoreBody(body({ query: 'q'.repeat(20), items: [] }), context({ maxRequestTokens: 16 })),
    'query',
    'query is 20 tokens, more than the limit of 16 tokens per request',
  );
  // BOS counts toward the context.
  rejects(
    t,
    () => normalizeScoreBody(body({ query: q10, items: ['b'.repeat(22)] }), context({ addBos: true, bosTokenId: BOS })),
    'items',
    /^query \+ items\[0\] is 33 tokens/,
  );
  t.end();
});

test('the item limit is checked before items are tokenized', (t) => {
  let calls = 0;
  const ctx = context({ tokenize: (s) => (calls++, charTokens(s)) });
  rejects(
    t,
    () => normalizeScoreBody(body({ items: ['a', 'b', 'c', 'd', 'e'] }), ctx),
    'items',
    /^too many items: 5 > 4/,
  );
  t.equal(calls, 0, 'nothing tokenized');
  t.end();
});

test('valid text requests normalize to token lists', (t) => {
  const ctx = context();
  const r = normalizeScoreBody(
    { query: 'ab', items: ['c', '', 'de'], label_token_ids: [3, 3, 9], model: 'ignored', extra: 1 },
    ctx,
  );
  t.deepEqual(r.queryTokens, [97, 98]);
  t.deepEqual(r.itemTokens, [[99], [], [100, 101]], 'an empty item string is valid and stays empty');
  t.deepEqual(r.labels, [3, 3, 9], 'labels in order, duplicates kept');
  t.equal(r.applySoftmax, false, 'apply_softmax defaults to false');
  t.equal(r.itemFirst, false, 'item_first defaults to false');
  t.equal(r.inputKind, 'text');
  t.equal(r.promptTokens, 2 + 1 + 0 + 2, 'query once plus every item');

  const one = normalizeScoreBody(body({ items: 'xyz', apply_softmax: true, item_first: true }), ctx);
  t.deepEqual(one.itemTokens, [[120, 121, 122]], 'a bare string is one item');
  t.equal(one.applySoftmax, true);
  t.equal(one.itemFirst, true);

  const none = normalizeScoreBody(body({ items: [] }), ctx);
  t.deepEqual(none.itemTokens, [], 'items [] is valid');
  t.equal(none.promptTokens, 3, 'only the query counts');
  t.end();
});

test('BOS goes at the start of the whole sequence, text only', (t) => {
  const ctx = context({ addBos: true, bosTokenId: BOS });
  const queryFirst = normalizeScoreBody(body({ query: 'ab', items: ['c', ''] }), ctx);
  t.deepEqual(queryFirst.queryTokens, [BOS, 97, 98], 'query-first: BOS before the query');
  t.deepEqual(queryFirst.itemTokens, [[99], []], 'items untouched');
  t.equal(queryFirst.promptTokens, 4);
  const itemFirst = normalizeScoreBody(body({ query: 'ab', items: ['c', ''], item_first: true }), ctx);
  t.deepEqual(itemFirst.queryTokens, [97, 98], 'item-first: no BOS on the query');
  t.deepEqual(itemFirst.itemTokens, [[BOS, 99], [BOS]], 'item-first: BOS before each item');
  t.equal(itemFirst.promptTokens, 2 + 2 + 1, 'the BOS of every item is counted');
  const ids = normalizeScoreBody(body({ query: [5, 6], items: [[7]] }), ctx);
  t.deepEqual(ids.queryTokens, [5, 6], 'token ids are taken as the exact sequence: no BOS');
  t.throws(
    () => normalizeScoreBody(body(), context({ addBos: true })),
    (e) => !(e instanceof ScoreInputError) && /BOS token id/.test(e.message),
    'addBos without a BOS id is a configuration error, not bad input',
  );
  t.end();
});

test('valid token-id requests, library spelling and typed arrays', (t) => {
  const ctx = context();
  const r = normalizeScoreBody({ query: [5, 6], items: [[7], [], [8, 9]], label_token_ids: [0, 999] }, ctx);
  t.deepEqual(r.queryTokens, [5, 6]);
  t.deepEqual(r.itemTokens, [[7], [], [8, 9]], 'an empty token-id item is valid');
  t.deepEqual(r.labels, [0, 999], 'vocabulary bounds are inclusive of 0 and vocab-1');
  t.equal(r.inputKind, 'tokens');
  t.equal(r.promptTokens, 5);
  const lib = normalizeRequest(
    { query: Int32Array.of(5, 6), items: [Uint32Array.of(7)], labelTokenIds: Uint16Array.of(3), applySoftmax: true },
    ctx,
  );
  t.deepEqual(lib.queryTokens, [5, 6], 'typed arrays become plain arrays');
  t.deepEqual(lib.itemTokens, [[7]]);
  t.deepEqual(lib.labels, [3]);
  t.equal(lib.applySoftmax, true);
  t.ok(Array.isArray(lib.queryTokens) && Array.isArray(lib.labels), 'plain arrays out');
  t.end();
});

test('the input is never mutated or aliased', (t) => {
  const input = { query: [5, 6], items: [[7], [8, 9]], label_token_ids: [1, 2] };
  const snapshot = JSON.parse(JSON.stringify(input));
  const r = normalizeScoreBody(input, context({ addBos: true, bosTokenId: BOS }));
  r.queryTokens.push(1);
  r.itemTokens[0].push(1);
  r.labels.push(1);
  t.deepEqual(input, snapshot, 'outputs do not alias the request');
  const bad = { query: [5], items: [[7], [1000]], label_token_ids: [1] };
  const badSnapshot = JSON.parse(JSON.stringify(bad));
  t.throws(() => normalizeScoreBody(bad, context()), ScoreInputError);
  t.deepEqual(bad, badSnapshot, 'a rejected request is untouched');
  t.end();
});

test('a tokenizer outside the vocabulary is a server fault, not bad input', (t) => {
  const ctx = context({ tokenize: () => [5, 5000] });
  t.throws(
    () => normalizeScoreBody(body(), ctx),
    (e) => !(e instanceof ScoreInputError) && /outside the model's vocabulary \[0, 1000\)/.test(e.message),
  );
  t.end();
});

test('ScoreInputError carries the Score API error body', (t) => {
  try {
    normalizeScoreBody(body({ label_token_ids: [] }), context());
    t.fail('should throw');
  } catch (e) {
    t.ok(e instanceof Error, 'is an Error');
    t.equal(e.name, 'ScoreInputError');
    t.deepEqual(JSON.parse(JSON.stringify(e)), {
      object: 'error',
      message: 'label_token_ids must not be empty',
      type: 'BadRequestError',
      param: 'label_token_ids',
      code: 400,
    });
  }
  t.end();
});
