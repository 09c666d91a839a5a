#!/usr/bin/env node
'use strict';
/*
 * Make the llama.cpp goldens for the default model (SmolLM2-135M-Instruct Q4_1):
 *
 *   test/fixtures/tokenizer-golden.json   llama.cpp token ids of a varied corpus,
 *       tokenized with add_special=false, parse_special=false (what our
 *       Tokenizer.encode must reproduce exactly);
 *   test/fixtures/llama-cpp-golden.json   label probabilities exp(logprob) at the
 *       last token of a few query+item sequences (full-vocabulary log-softmax of
 *       llama.cpp's logits), to check our transformer program against.
 *
 * node-llama-cpp is NOT a dependency of pjrt-score. Install it outside the repo:
 *
 *   mkdir -p /tmp/goldens && cd /tmp/goldens && npm init -y && npm install node-llama-cpp@3
 *   GOLDENS_NODE_MODULES=/tmp/goldens/node_modules node scripts/lab/goldens/make-goldens.js [model.gguf]
 *
 * (GOLDENS_NODE_MODULES defaults to /tmp/goldens/node_modules; the model
 * defaults to PJRT_SCORE_MODEL, else the cached default model.) Needs
 * `npx tsc -p tsconfig.json` first for dist/model/default-model.js.
 */
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { pathToFileURL } = require('node:url');

const root = path.resolve(__dirname, '..', '..', '..');
const { logSoftmax } = require(path.join(root, 'test', 'helpers', 'reference-forward.js'));
const fixtures = path.join(root, 'test', 'fixtures');
const LABELS = [9454, 2753, 28, 330];

const CORPUS = [
  'Hello world',
  'Hello, world! How are you today?',
  ' leading space',
  'trailing space ',
  '  two leading spaces',
  'multiple   spaces   between   words',
  'tabs\tand\t\ttabs',
  'new\nline',
  'double\n\nnewline\n\n\nand triple',
  'windows\r\nline endings\r\n',
  'mixed \t\n whitespace \n\t end',
  '   ',
  '\n',
  ' ',
  'a',
  '',
  'Café crème brûlée à la française',
  'naïve coöperate résumé façade Ångström',
  'Ελληνικά και русский текст',
  '中文分词测试，这是一个句子。',
  '日本語のテキストとカタカナ、ひらがな',
  '한국어 텍스트입니다',
  'العربية نص قصير',
  'emoji 😀🎉👍🏽 and the family 👨‍👩‍👧‍👦!',
  'digits 1234567890',
  'pi is 3.14159265358979 and e is 2.71828',
  'a long number 123456789012345678901234567890',
  'phone +1 (555) 123-4567, year 2024, 10,000.50 USD',
  '2024-01-15T10:30:00Z',
  'Ⅻ roman, ① circled, ١٢٣ arabic-indic, ½ ¾ ² fractions',
  'def foo(x):\n    return x ** 2  # square\n',
  'const f = (a, b) => { return a + b; };\n\tif (x !== y) {}',
  '<html><body class="x">Hi &amp; bye</body></html>',
  'SELECT * FROM users WHERE id = 42;',
  '<|im_start|>user\nHello<|im_end|>',
  '<|endoftext|>',
  'text<|endoftext|>more text',
  '<repo_name>pjrt-score<file_sep>main.ts',
  "I'm sure you've seen it, they'll say we'd do it. It's John's. DON'T",
  'ALL CAPS SHOUTING AND MiXeD CaSe',
  'Is Paris the capital of France? Answer yes or no.',
  ' yes',
  ' no',
  'URL https://example.com/path?query=1&b=2#frag',
  'email someone@example.org',
  'math: ∑_{i=1}^{n} i² = n(n+1)/2, √2 ≈ 1.414',
  'zero\u200bwidth space, non\u00a0breaking space, ideographic\u3000space',
  'ﬁ ligature and Ｆｕｌｌｗｉｄｔｈ letters',
  'The quick brown fox jumps over the lazy dog. '.repeat(6).trim(),
];

const Q1 = 'Is Paris the capital of France? Answer yes or no.';
const Q2 = 'Query: best pizza in Naples\nDocument:';
const SEQUENCES = [
  { query: Q1, item: ' yes' },
  { query: Q1, item: ' no' },
  { query: Q1, item: '' },
  { query: Q2, item: " L'Antica Pizzeria da Michele has served classic margherita since 1870.\nRelevant (Yes/No):" },
  { query: Q2, item: ' The stock market closed higher on Tuesday.\nRelevant (Yes/No):' },
  { query: 'The', item: ' answer is' },
  {
    query: 'Here is a short story. '.concat(
      'Once upon a time a small robot learned to paint the sea at dawn. '.repeat(5),
    ),
    item: 'Question: did the robot paint? Answer:',
  },
  {
    query: '<|im_start|>user\nIs the sky blue? Answer Yes or No.<|im_end|>\n<|im_start|>assistant\n',
    item: 'Yes',
    parseSpecial: true,
  },
];

function sha256(file) {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

function modelPath() {
  if (process.argv[2]) return path.resolve(process.argv[2]);
  if (process.env.PJRT_SCORE_MODEL) return path.resolve(process.env.PJRT_SCORE_MODEL);
  return require(path.join(root, 'dist', 'model', 'default-model.js')).DEFAULT_MODEL.destination;
}

async function loadNodeLlamaCpp() {
  const modules = path.resolve(process.env.GOLDENS_NODE_MODULES || '/tmp/goldens/node_modules');
  const pkgDir = path.join(modules, 'node-llama-cpp');
  if (!fs.existsSync(path.join(pkgDir, 'package.json'))) {
    throw new Error(`node-llama-cpp not found in ${modules}; see the comment at the top of this script`);
  }
  const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
  const lib = await import(pathToFileURL(path.join(pkgDir, pkg.exports['.'].import)).href);
  return { lib, version: pkg.version };
}

/** Rows of token_embd.weight, read with our own GGUF reader, to check llama.cpp returned every logit. */
function embeddingRows(file) {
  const { GgufFile } = require(path.join(root, 'dist', 'model', 'gguf.js'));
  const gguf = GgufFile.open(file);
  try {
    return gguf.tensor('token_embd.weight').dims[1];
  } finally {
    gguf.close();
  }
}

async function main() {
  const file = modelPath();
  const { lib, version } = await loadNodeLlamaCpp();
  const llama = await lib.getLlama({ gpu: false, build: 'never', logLevel: 'error' });
  const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
  const release = llama.llamaCppRelease;
  const source = {
    tool: `node-llama-cpp ${version}, llama.cpp ${release.repo} release ${release.release} (${llama.buildType} binary, CPU only)`,
    cpu: llama.systemInfo.trim(),
    model: path.basename(file),
    modelSha256: sha256(file),
    generatedBy: 'scripts/lab/goldens/make-goldens.js',
  };

  // LlamaModel.tokenize(text, false) calls common_tokenize(vocab, text, add_special=false, parse_special=false).
  const entries = CORPUS.map((text) => ({ text, ids: model.tokenize(text, false) }));
  fs.mkdirSync(fixtures, { recursive: true });
  fs.writeFileSync(
    path.join(fixtures, 'tokenizer-golden.json'),
    compactJson({ ...source, semantics: 'llama_tokenize(text, add_special=false, parse_special=false)', entries }),
  );
  console.log(`wrote ${entries.length} tokenizer entries`);

  const settings = {
    contextSize: 1024,
    batchSize: 1024,
    threads: 2,
    flashAttention: false,
    experimentalKvCacheKeyType: 'F32',
    experimentalKvCacheValueType: 'F32',
  };
  const vocabSize = embeddingRows(file);
  const quantized = await evaluateSequences(model, settings, vocabSize);
  await model.dispose();

  // The same weights as plain F32 (dequantized, Q/K rows left in llama.cpp's order): llama.cpp then computes in
  // f32 without quantizing activations, which is what our own f32 forward pass does.
  const f32File = path.join(process.env.GOLDENS_TMP || os.tmpdir(), 'pjrt-score-goldens-f32.gguf');
  writeF32Copy(file, f32File);
  const f32Model = await llama.loadModel({ modelPath: f32File, gpuLayers: 0 });
  const dequantized = await evaluateSequences(f32Model, settings, vocabSize);
  await f32Model.dispose();
  fs.rmSync(f32File, { force: true });

  const sequences = quantized.map((q, i) => {
    const d = dequantized[i];
    if (JSON.stringify(d.tokenIds) !== JSON.stringify(q.tokenIds))
      throw new Error('the F32 copy tokenized differently');
    return { ...q, f32: { labelLogprobs: d.labelLogprobs, probabilities: d.probabilities, top: d.top } };
  });
  fs.writeFileSync(
    path.join(fixtures, 'llama-cpp-golden.json'),
    compactJson({
      ...source,
      how:
        'Each sequence is tokenize(query) ++ tokenize(item) with add_special=false (parse_special=false unless ' +
        'parseSpecial is true), no BOS. llama.cpp evaluates it on the CPU (context settings below) and returns the raw ' +
        'logits after the last token; log-softmax over the whole vocabulary is taken in float64 here; ' +
        'probabilities = exp(labelLogprobs). Top level: the Q4_1 file as is; llama.cpp multiplies Q4_1/Q8_0 weights ' +
        'with activations quantized to Q8_1/Q8_0, which moves logprobs by ~0.1-0.5 nats against an f32 forward pass. ' +
        '`f32`: the same weights dequantized to an F32 GGUF (no activation quantization): an f32 forward pass on ' +
        'the dequantized weights should match it to ~1e-3 nats.',
      settings,
      sequences,
    }),
  );
  console.log(`wrote ${sequences.length} label-probability sequences`);
  await llama.dispose();
}

async function evaluateSequences(model, settings, vocabSize) {
  const context = await model.createContext({ ...settings, sequences: 1 });
  const sequence = context.getSequence();
  const results = [];
  for (const s of SEQUENCES) {
    const queryIds = model.tokenize(s.query, s.parseSpecial === true);
    const itemIds = model.tokenize(s.item, s.parseSpecial === true);
    const tokenIds = [...queryIds, ...itemIds];
    await sequence.clearHistory();
    const last = tokenIds.length - 1;
    const evaluated = await sequence.controlledEvaluate(
      tokenIds.map((id, i) => (i === last ? [id, { generateNext: { logits: true } }] : id)),
    );
    const logitMap = evaluated[last].next.logits;
    if (logitMap.size !== vocabSize)
      throw new Error(`expected ${vocabSize} logits (the whole vocabulary), got ${logitMap.size}`);
    const logits = new Float64Array(logitMap.size);
    for (const [id, v] of logitMap) logits[id] = v;
    const logprobs = logSoftmax(logits);
    const top = [...logprobs.keys()].sort((a, b) => logprobs[b] - logprobs[a]).slice(0, 5);
    results.push({
      query: s.query,
      item: s.item,
      parseSpecial: s.parseSpecial === true,
      queryIds,
      itemIds,
      tokenIds,
      labels: LABELS,
      labelLogprobs: LABELS.map((id) => logprobs[id]),
      probabilities: LABELS.map((id) => Math.exp(logprobs[id])),
      top: top.map((id) => ({ id, logprob: logprobs[id] })),
    });
    console.log(
      `${tokenIds.length} tokens -> ${LABELS.map((id) => Math.exp(logprobs[id]).toExponential(4)).join(' ')}`,
    );
  }
  await context.dispose();
  return results;
}

const VALUE_TYPE_NAMES = [
  'U8',
  'I8',
  'U16',
  'I16',
  'U32',
  'I32',
  'F32',
  'BOOL',
  'STRING',
  'ARRAY',
  'U64',
  'I64',
  'F64',
];

/** Rewrite `file` with every tensor dequantized to F32, metadata copied with its stored types. */
function writeF32Copy(file, out) {
  const { GgufFile } = require(path.join(root, 'dist', 'model', 'gguf.js'));
  const { writeGguf } = require(path.join(root, 'test', 'helpers', 'tiny-model.js'));
  const gguf = GgufFile.open(file);
  try {
    const metadata = [];
    for (const [key, value] of gguf.metadata) {
      const type = VALUE_TYPE_NAMES[gguf.metadataTypes.get(key)];
      if (key === 'general.file_type')
        metadata.push([key, { type, value: 0 }]); // LLAMA_FTYPE_ALL_F32
      else if (type === 'ARRAY')
        metadata.push([key, { type, elementType: VALUE_TYPE_NAMES[value.elementType], value: value.values }]);
      else metadata.push([key, { type, value }]);
    }
    const tensors = [...gguf.tensors.values()].map((t) => {
      const data = gguf.readTensorFloat32(t.name);
      return {
        name: t.name,
        dims: t.dims,
        type: 'F32',
        bytes: Buffer.from(data.buffer, data.byteOffset, data.byteLength),
      };
    });
    writeGguf(out, metadata, tensors, { alignment: gguf.alignment });
  } finally {
    gguf.close();
  }
}

/** JSON with one value per line, but arrays of numbers kept on one line. */
function compactJson(value) {
  return `${JSON.stringify(value, null, 1).replace(/\[[-\d.e,\s]*\]/g, (m) => m.replace(/\s+/g, ''))}\n`;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
