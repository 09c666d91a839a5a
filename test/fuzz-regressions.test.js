'use strict';
// Bugs the fuzz targets (fuzz/) found, each reduced to a small input, so they
// stay fixed. The deserialize finding has its own file (runtime-envelope).
const test = require('tape');
const { Tokenizer, TokenizerError } = require('../dist/model');
const tiny = require('./helpers/tiny-model');

const base = () => tiny.tinyTokenizerJson(tiny.makeTinyModel('llama', 3));

test('tokenizer-json: a junk id in the vocabulary is a TokenizerError, not a vocabulary of size Infinity or NaN', (t) => {
  for (const junk of [null, -1, 0.5, 1e-7, Infinity, '7', 2 ** 40]) {
    const json = base();
    const token = Object.keys(json.model.vocab)[10];
    json.model.vocab[token] = junk;
    // Through JSON, as from a file (JSON.parse reads 1e400 as Infinity; stringify would write null).
    const parsed = JSON.parse(JSON.stringify(json));
    parsed.model.vocab[token] = junk;
    t.throws(
      () => new Tokenizer(parsed),
      (e) => e instanceof TokenizerError && /token id/.test(e.message),
      `vocab id ${String(junk)}`,
    );
  }
  const json = base();
  json.added_tokens[0].id = -3;
  t.throws(() => new Tokenizer(json), TokenizerError, 'added token id -3');
  t.end();
});

test('tokenizer-json: an unk_token missing from the vocabulary is a TokenizerError, never undefined ids', (t) => {
  // Before the fix, encode('Z~\u00e9') returned [undefined x4]: the library maps
  // unknown pieces to the unk token, which this vocabulary lacks.
  const json = base();
  json.model = { ...json.model, unk_token: '<unk>' };
  const tokenizer = new Tokenizer(json);
  t.throws(
    () => tokenizer.encode('Z~\u00e9'),
    (e) => e instanceof TokenizerError && /no valid token id/.test(e.message),
    'encode refuses',
  );
  const ids = tokenizer.encode('hello world 123');
  t.ok(
    ids.length > 0 && ids.every((id) => Number.isInteger(id) && id >= 0 && id < tokenizer.vocabSize),
    'covered text still encodes to valid ids',
  );
  t.end();
});
