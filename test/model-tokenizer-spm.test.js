'use strict';
// SentencePiece GGUF vocabularies (tokenizer.ggml.model = "llama") on a small
// hand-made vocabulary, against a plain-JS SentencePiece BPE written here
// from llama.cpp's description (llm_tokenizer_spm): spaces become "▁" (one
// prepended when add_space_prefix), the adjacent pair whose concatenation is
// a vocabulary piece of the highest score merges first (leftmost on ties),
// and characters outside the vocabulary become <0xNN> byte tokens. Also the
// add_space_prefix = false path (Gemma), user-defined tokens, and the errors.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const M = require('../dist/model');
const tiny = require('./helpers/tiny-model');
const { prng } = require('./helpers/prng');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-tok-spm-'));
test.onFinish(() => fs.rmSync(dir, { recursive: true, force: true }));

const TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, BYTE: 6 };
const byteToken = (b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`;

/**
 * A vocabulary over a few letters: every 1-, 2- and 3-character piece, distinct
 * random scores. Without `innerSpace`, no piece has "▁" after another
 * character (SentencePiece's usual shape, which lets the tokenizer cut words).
 */
function makeVocab(seed, innerSpace = true) {
  const rng = prng(seed);
  const tokens = ['<unk>', '<s>', '</s>'];
  const types = [TYPE.UNKNOWN, TYPE.CONTROL, TYPE.CONTROL];
  for (let b = 0; b < 256; b++) (tokens.push(byteToken(b)), types.push(TYPE.BYTE));
  (tokens.push('<tool>'), types.push(TYPE.USER_DEFINED));
  const alphabet = ['▁', 'a', 'b', 'c', 'é', '日'];
  const pieces = [...alphabet];
  for (const x of alphabet) for (const y of alphabet) pieces.push(x + y);
  for (const x of alphabet)
    for (const y of alphabet) for (const z of alphabet) if (rng.uniform() < 0.3) pieces.push(x + y + z);
  pieces.push('▁▁▁▁', 'abcabc');
  for (const p of pieces) if (innerSpace || !/[^▁]▁/u.test(p)) (tokens.push(p), types.push(TYPE.NORMAL));
  // Distinct scores: a random permutation of -1 .. -n (single characters too, as in SentencePiece).
  const order = tokens.map((_, i) => i).sort(() => rng.uniform() - 0.5);
  const scores = new Array(tokens.length).fill(0);
  order.forEach((id, rank) => (scores[id] = types[id] === TYPE.NORMAL ? -(rank + 1) : 0));
  return { tokens, types, scores };
}

/** The reference: llama.cpp's SentencePiece BPE, greedily, in plain JS. */
function referenceSpm({ tokens, types, scores }, text, addSpacePrefix) {
  if (text === '') return [];
  const id = new Map(tokens.map((t, i) => [t, i]));
  const userDefined = tokens.filter((_, i) => types[i] === TYPE.USER_DEFINED);
  // User-defined pieces are cut out of the text first; each text run then gets the prefix space.
  const runs = [];
  let rest = text;
  for (;;) {
    const hits = userDefined
      .map((u) => [rest.indexOf(u), u])
      .filter(([at]) => at >= 0)
      .sort((a, b) => a[0] - b[0]);
    if (!hits.length) break;
    const [at, u] = hits[0];
    if (at > 0) runs.push(rest.slice(0, at));
    runs.push({ token: id.get(u) });
    rest = rest.slice(at + u.length);
  }
  if (rest) runs.push(rest);
  const out = [];
  let afterToken = true;
  for (const run of runs) {
    if (typeof run !== 'string') {
      out.push(run.token);
      afterToken = true;
      continue;
    }
    const symbols = Array.from(((addSpacePrefix && afterToken ? ' ' : '') + run).replace(/ /g, '▁'));
    afterToken = false;
    for (;;) {
      let best = -1;
      for (let i = 0; i + 1 < symbols.length; i++) {
        const merged = id.get(symbols[i] + symbols[i + 1]);
        if (merged === undefined || types[merged] !== TYPE.NORMAL) continue;
        if (best < 0 || scores[merged] > scores[id.get(symbols[best] + symbols[best + 1])]) best = i;
      }
      if (best < 0) break;
      symbols.splice(best, 2, symbols[best] + symbols[best + 1]);
    }
    for (const s of symbols) {
      if (id.has(s)) out.push(id.get(s));
      else for (const b of Buffer.from(s, 'utf8')) out.push(id.get(byteToken(b)));
    }
  }
  return out;
}

function writeSpmGguf(file, vocab, extra = []) {
  tiny.writeGguf(
    file,
    [
      ['general.architecture', { type: 'STRING', value: 'llama' }],
      ['tokenizer.ggml.model', { type: 'STRING', value: 'llama' }],
      ['tokenizer.ggml.tokens', { type: 'ARRAY', elementType: 'STRING', value: vocab.tokens }],
      ['tokenizer.ggml.scores', { type: 'ARRAY', elementType: 'F32', value: vocab.scores }],
      ['tokenizer.ggml.token_type', { type: 'ARRAY', elementType: 'I32', value: vocab.types }],
      ...extra,
    ],
    [],
  );
  return file;
}

function fromGguf(file) {
  const gguf = M.GgufFile.open(file);
  try {
    return M.Tokenizer.fromGguf(gguf);
  } finally {
    gguf.close();
  }
}

function randomTexts(seed, n) {
  const rng = prng(seed);
  const parts = ['a', 'b', 'c', 'é', '日', ' ', ' ', '  ', 'abc', 'z', '€', '\n', '<tool>', '<s>', '🙂'];
  return Array.from({ length: n }, () =>
    Array.from(
      { length: 1 + Math.floor(rng.uniform() * 12) },
      () => parts[Math.floor(rng.uniform() * parts.length)],
    ).join(''),
  );
}

for (const [addSpacePrefix, innerSpace] of [
  [true, true],
  [false, true],
  [true, false],
  [false, false],
]) {
  const label = `add_space_prefix = ${addSpacePrefix}, ${innerSpace ? 'pieces with' : 'no piece with'} an inner ▁`;
  test(`SentencePiece GGUF, ${label}: 500 random texts agree with the plain-JS reference`, (t) => {
    const seed = 11 + 2 * Number(addSpacePrefix) + Number(innerSpace);
    const vocab = makeVocab(seed, innerSpace);
    const file = writeSpmGguf(path.join(dir, `spm-${seed}.gguf`), vocab, [
      ['tokenizer.ggml.add_space_prefix', { type: 'BOOL', value: addSpacePrefix }],
    ]);
    const tok = fromGguf(file);
    const gguf = M.GgufFile.open(file);
    t.equal(
      M.tokenizerJsonFromGguf(gguf).pre_tokenizer === null,
      innerSpace,
      innerSpace ? 'whole text at once' : 'cut into words',
    );
    gguf.close();
    const texts = randomTexts(seed + 10, 500);
    const bad = texts.filter(
      (text) => JSON.stringify(tok.encode(text)) !== JSON.stringify(referenceSpm(vocab, text, addSpacePrefix)),
    );
    for (const text of bad.slice(0, 5))
      t.deepEqual(tok.encode(text), referenceSpm(vocab, text, addSpacePrefix), JSON.stringify(text));
    t.equal(bad.length, 0, `${texts.length - bad.length}/${texts.length} agree`);
    // After a user-defined token the text gets its own prefix space (llama.cpp does the same), so only texts without one round trip.
    const roundTrip = texts.filter((text) => !text.includes('<tool>') && tok.decode(tok.encode(text)) !== text);
    t.deepEqual(roundTrip, [], 'decode(encode(text)) round trips (texts without a user-defined token)');
    t.ok(tok.encode('x<tool>y').includes(vocab.tokens.indexOf('<tool>')), 'a user-defined token is split out');
    t.notOk(tok.encode('a<s>b').includes(1), 'control-token text stays text');
    t.end();
  });
}

test('SentencePiece GGUF: add_space_prefix defaults to true, as in llama.cpp', (t) => {
  const vocab = makeVocab(13);
  const tok = fromGguf(writeSpmGguf(path.join(dir, 'spm-default.gguf'), vocab));
  for (const text of ['abc', 'a b', ' c'])
    t.deepEqual(tok.encode(text), referenceSpm(vocab, text, true), JSON.stringify(text));
  t.end();
});

test('SentencePiece GGUF errors', (t) => {
  const vocab = makeVocab(14);
  const noScores = path.join(dir, 'spm-no-scores.gguf');
  tiny.writeGguf(
    noScores,
    [
      ['tokenizer.ggml.model', { type: 'STRING', value: 'llama' }],
      ['tokenizer.ggml.tokens', { type: 'ARRAY', elementType: 'STRING', value: vocab.tokens }],
    ],
    [],
  );
  t.throws(
    () => fromGguf(noScores),
    /^GgufError: GGUF file spm-no-scores\.gguf: a SentencePiece vocabulary needs tokenizer\.ggml\.scores \(the merge order\), which is missing$/,
    'missing scores',
  );
  const short = writeSpmGguf(path.join(dir, 'spm-short.gguf'), { ...vocab, scores: vocab.scores.slice(1) });
  t.throws(
    () => fromGguf(short),
    new RegExp(
      `^GgufError: GGUF file spm-short\\.gguf: tokenizer\\.ggml\\.scores has ${vocab.tokens.length - 1} entries but tokenizer\\.ggml\\.tokens has ${vocab.tokens.length}$`,
    ),
    'scores of the wrong length',
  );
  t.end();
});
