'use strict';
// tokenizer.json: building the tokenizer from a mutated JSON document, then
// encoding and decoding text with it. Failures must be TokenizerError.
const path = require('node:path');
const { DIST, scriptsUnder } = require('./common');
const tiny = require('../../test/helpers/tiny-model');

const model = require(path.join(DIST, 'model'));
const expected = (e) => e instanceof model.TokenizerError;
const TEXTS = ['hello world 123', '', ' <tool> x', '\u00e9\u4e2d\ud83d\ude00', 'a'.repeat(200)];

function seeds() {
  const base = tiny.tinyTokenizerJson(tiny.makeTinyModel('llama', 3));
  const variants = [
    base,
    { ...base, pre_tokenizer: null, decoder: null },
    { ...base, model: { ...base.model, byte_fallback: true, unk_token: '<unk>' } },
    { ...base, normalizer: { type: 'NFC' }, post_processor: { type: 'ByteLevel', trim_offsets: false } },
  ];
  return variants.map((v) => Buffer.from(JSON.stringify(v), 'utf8'));
}

function run(data) {
  let json;
  try {
    json = JSON.parse(data.toString('utf8'));
  } catch {
    return; // not JSON: the loaders reject it before the tokenizer sees it
  }
  if (typeof json !== 'object' || json === null) return;
  const tokenizer = new model.Tokenizer(json, { bosTokenId: 1, addBos: true });
  if (!Number.isSafeInteger(tokenizer.vocabSize) || tokenizer.vocabSize <= 0)
    throw new Error(`vocabSize ${tokenizer.vocabSize}`);
  for (const text of TEXTS) {
    let ids;
    try {
      ids = tokenizer.encode(text);
    } catch (error) {
      if (expected(error)) continue;
      throw error;
    }
    tokenizer.decode(ids); // ids from encode must decode
  }
  // An id outside the vocabulary is a RangeError by design.
  try {
    tokenizer.decode([tokenizer.vocabSize]);
    throw new Error('decode accepted an id outside the vocabulary');
  } catch (error) {
    if (!(error instanceof RangeError && /outside the vocabulary/.test(error.message))) throw error;
  }
}

module.exports = {
  name: 'tokenizer-json',
  smokeExecs: 1500,
  maxLength: 1 << 16,
  scripts: scriptsUnder('dist/model/tokenizer', '@huggingface/tokenizers'),
  seeds,
  run,
  expected,
  dictionary: [
    '"type"',
    '"BPE"',
    '"WordPiece"',
    '"Unigram"',
    '"WordLevel"',
    '"ByteLevel"',
    '"Sequence"',
    '"Split"',
    '"Digits"',
    '"Metaspace"',
    '"NFC"',
    '"NFKC"',
    '"Lowercase"',
    '"Replace"',
    '"Strip"',
    '"added_tokens"',
    '"special"',
    '"vocab"',
    '"merges"',
    '"unk_token"',
    '"byte_fallback"',
    '"pattern"',
    '{"Regex":"',
    '"pretokenizers"',
    '"normalizers"',
    'null',
    'true',
    '[]',
    '{}',
  ],
};
