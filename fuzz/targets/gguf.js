'use strict';
// GGUF reader: header, metadata, tensor table, config, tokenizer and weights
// from a mutated file (truncated, inconsistent, huge counts and lengths,
// nested arrays). Every failure must be one of the model errors.
const fs = require('node:fs');
const path = require('node:path');
const { DIST, scratchFile, scriptsUnder, tolerate } = require('./common');
const tiny = require('../../test/helpers/tiny-model');

const model = require(path.join(DIST, 'model'));
const EXPECTED = [model.GgufError, model.ModelConfigError, model.WeightsError, model.TokenizerError];
const expected = (e) => EXPECTED.some((C) => e instanceof C);

function seeds() {
  const out = [];
  const file = scratchFile('seed.gguf');
  const m = tiny.makeTinyModel('llama', 3);
  for (const matrixType of ['F32', 'Q8_0', 'Q4_1']) {
    tiny.writeTinyGguf(m, file, { matrixType });
    out.push(fs.readFileSync(file));
  }
  // Header-only files: nested arrays and every scalar type.
  tiny.writeGguf(
    file,
    [
      ['general.architecture', { type: 'STRING', value: 'llama' }],
      ['a.u8', { type: 'U8', value: 7 }],
      ['a.i64', { type: 'I64', value: -5n }],
      ['a.f64', { type: 'F64', value: 0.25 }],
      ['a.arr', { type: 'ARRAY', value: [1, 2, 3], elementType: 'I32' }],
      ['a.strs', { type: 'ARRAY', value: ['x', 'yz'], elementType: 'STRING' }],
    ],
    [],
  );
  out.push(fs.readFileSync(file));
  return out;
}

function run(data) {
  const file = scratchFile('input.gguf');
  fs.writeFileSync(file, data);
  const gguf = model.GgufFile.open(file);
  try {
    for (const name of [...gguf.tensors.keys()].slice(0, 64)) tolerate(expected, () => gguf.readTensorBytes(name));
    const config = tolerate(expected, () => model.configFromGguf(gguf));
    const json = tolerate(expected, () => model.tokenizerJsonFromGguf(gguf));
    if (config) tolerate(expected, () => model.loadGgufWeights(gguf, config));
    if (json) {
      const tokenizer = tolerate(expected, () => new model.Tokenizer(json));
      if (tokenizer) tokenizer.decode(tokenizer.encode('hello 123 world'));
    }
  } finally {
    gguf.close();
  }
}

module.exports = {
  name: 'gguf',
  smokeExecs: 1500,
  maxLength: 1 << 18,
  scripts: scriptsUnder('dist/model/'),
  seeds,
  run,
  expected,
  dictionary: [
    'GGUF',
    'general.architecture',
    'llama',
    'qwen3',
    'tokenizer.ggml.tokens',
    'tokenizer.ggml.merges',
    'tokenizer.ggml.token_type',
    'general.alignment',
    'llama.block_count',
    'llama.embedding_length',
    'llama.attention.head_count',
    'token_embd.weight',
    'blk.0.attn_q.weight',
    'output_norm.weight',
  ],
};
