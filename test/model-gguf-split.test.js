'use strict';
// Split GGUF models (llama.cpp's gguf-split layout: <prefix>-0000i-of-0000N.gguf,
// split.no / split.count / split.tensors.count): loading the first shard loads
// them all, with the weights, config and tokenizer of the same model written
// as one file; inconsistent or truncated shard sets fail with a clear error
// and leave no file open. The shards are written here by the test's own GGUF
// writer (test/helpers/tiny-model.js).
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const M = require('../dist/model');
const tiny = require('./helpers/tiny-model');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-gguf-split-'));
test.onFinish(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The tiny model's GGUF tensors, written the way writeTinyGguf writes them (F32, llama Q/K permuted). */
function ggufTensors(model) {
  return tiny.tensorTable(model.config).map((t) => {
    let values = t.get(model.weights);
    if (model.arch === 'llama' && t.ropeHeads)
      values = tiny.llamaCppPermute(values, t.ropeHeads, t.dims.length > 1 ? t.dims[1] : 1);
    return { name: t.gguf, dims: [...t.dims].reverse(), type: 'F32', bytes: tiny.encodeTensor('F32', values) };
  });
}

const splitKeys = (no, count, tensorsCount) => [
  ['split.no', { type: 'U16', value: no }],
  ['split.count', { type: 'U16', value: count }],
  ['split.tensors.count', { type: 'I32', value: tensorsCount }],
];

/**
 * Write `model` as `count` shards in `sub`: the tensors dealt round-robin, the
 * model metadata in the first shard only (as gguf-split does). `edit(i, shard)`
 * may change a shard's { name, metadata, tensors } before it is written.
 */
function writeSplit(model, sub, count, { prefix = 'tiny', edit = () => {} } = {}) {
  const target = path.join(dir, sub);
  fs.mkdirSync(target, { recursive: true });
  const tensors = ggufTensors(model);
  const files = [];
  for (let i = 0; i < count; i++) {
    const shard = {
      name: `${prefix}-${String(i + 1).padStart(5, '0')}-of-${String(count).padStart(5, '0')}.gguf`,
      metadata: [...(i === 0 ? tiny.ggufMetadata(model) : []), ...splitKeys(i, count, tensors.length)],
      tensors: tensors.filter((_, k) => k % count === i),
    };
    edit(i, shard);
    const file = path.join(target, shard.name);
    tiny.writeGguf(file, shard.metadata, shard.tensors);
    files.push(file);
  }
  return files;
}

const openFds = () => fs.readdirSync('/proc/self/fd').length;

function sameWeights(t, a, b, label) {
  const pairs = [
    ['embedding', a.embedding, b.embedding],
    ['finalNorm', a.finalNorm, b.finalNorm],
    ['lmHead', a.lmHead, b.lmHead],
  ];
  a.layers.forEach((layer, l) => {
    for (const key of Object.keys(layer)) pairs.push([`layers[${l}].${key}`, layer[key], b.layers[l][key]]);
  });
  const differ = pairs.filter(
    ([, x, y]) =>
      JSON.stringify(x.dims) !== JSON.stringify(y.dims) ||
      Buffer.compare(
        Buffer.from(x.data.buffer, x.data.byteOffset, x.data.byteLength),
        Buffer.from(y.data.buffer, y.data.byteOffset, y.data.byteLength),
      ) !== 0,
  );
  t.deepEqual(
    differ.map(([name]) => name),
    [],
    `${label}: all ${pairs.length} tensors bit-identical`,
  );
}

for (const arch of ['llama', 'qwen2', 'qwen3']) {
  test(`${arch}: the first of 3 shards loads the same model as the single file`, (t) => {
    const model = tiny.makeTinyModel(arch, 3);
    const whole = M.loadModel(tiny.writeTinyGguf(model, path.join(dir, `${arch}-whole.gguf`)));
    const files = writeSplit(model, `${arch}-3`, 3, { prefix: `tiny-${arch}` });
    const split = M.loadModel(files[0]);
    t.deepEqual(split.config, whole.config, 'same config');
    t.equal(split.name, `tiny-${arch}`, 'named after the prefix');
    t.equal(split.tokenizer.vocabSize, whole.tokenizer.vocabSize, 'same vocabulary size');
    for (const text of tiny.TINY_TEXTS)
      t.deepEqual(split.tokenizer.encode(text), whole.tokenizer.encode(text), `same ids for ${JSON.stringify(text)}`);
    sameWeights(t, split.weights, whole.weights, arch);
    // And against the generated values themselves (F32 holds them exactly).
    t.deepEqual(
      Array.from(split.weights.finalNorm.data),
      Array.from(model.weights.finalNorm),
      'final norm equals the generated values',
    );

    const gguf = M.GgufFile.open(files[0]);
    t.deepEqual(gguf.shardPaths, files, 'shardPaths lists the 3 shards in order');
    t.equal(gguf.tensors.size, tiny.tensorTable(model.config).length, 'every tensor of every shard');
    gguf.close();
    t.end();
  });
}

test('a split of 1 and a file with split.count = 1 load like a single file', (t) => {
  const model = tiny.makeTinyModel('llama', 4);
  const whole = M.loadModel(tiny.writeTinyGguf(model, path.join(dir, 'one-whole.gguf')));
  const [only] = writeSplit(model, 'one', 1);
  sameWeights(t, M.loadModel(only).weights, whole.weights, '1 shard');
  t.end();
});

test('split errors: clear messages, nothing left open', (t) => {
  const model = tiny.makeTinyModel('llama', 5);
  const cases = [];
  const expectError = (label, file, re) => cases.push({ label, file, re });

  {
    const files = writeSplit(model, 'missing', 3);
    fs.rmSync(files[2]);
    expectError(
      'missing shard',
      files[0],
      /^GgufError: split GGUF tiny-00001-of-00003\.gguf: shard 3 of 3 \(.*tiny-00003-of-00003\.gguf\) is missing$/,
    );
  }
  {
    const files = writeSplit(model, 'count', 3, {
      edit: (i, s) =>
        i === 1 &&
        (s.metadata = s.metadata.map(([k, v]) => (k === 'split.count' ? [k, { type: 'U16', value: 4 }] : [k, v]))),
    });
    expectError(
      'wrong count',
      files[0],
      /^GgufError: split GGUF: tiny-00002-of-00003\.gguf should be shard 2 of 3, but its metadata says shard 2 of 4$/,
    );
  }
  {
    const files = writeSplit(model, 'numbering', 3, {
      edit: (i, s) =>
        i === 1 &&
        (s.metadata = s.metadata.map(([k, v]) => (k === 'split.no' ? [k, { type: 'U16', value: 2 }] : [k, v]))),
    });
    expectError(
      'wrong numbering',
      files[0],
      /^GgufError: split GGUF: tiny-00002-of-00003\.gguf should be shard 2 of 3, but its metadata says shard 3 of 3$/,
    );
  }
  {
    const files = writeSplit(model, 'nosplit', 3, { edit: (i, s) => i === 2 && (s.metadata = []) });
    expectError(
      'a shard without split keys',
      files[0],
      /^GgufError: split GGUF: tiny-00003-of-00003\.gguf should be shard 3 of 3, but its metadata says not a shard \(no split\.no \/ split\.count\)$/,
    );
  }
  {
    let first;
    const files = writeSplit(model, 'duplicate', 3, {
      edit: (i, s) => {
        if (i === 0) first = s.tensors[0];
        if (i === 2) s.tensors = [...s.tensors, first];
      },
    });
    expectError(
      'duplicate tensor',
      files[0],
      /^GgufError: split GGUF tiny-00001-of-00003\.gguf: tensor token_embd\.weight appears in shard 1 and shard 3$/,
    );
  }
  {
    const files = writeSplit(model, 'total', 3, { edit: (i, s) => i === 1 && (s.tensors = s.tensors.slice(1)) });
    const n = tiny.tensorTable(model.config).length;
    expectError(
      'tensor total',
      files[0],
      new RegExp(
        `^GgufError: split GGUF tiny-00001-of-00003\\.gguf: split\\.tensors\\.count is ${n}, but its 3 shards hold ${n - 1} tensors$`,
      ),
    );
  }
  {
    const files = writeSplit(model, 'truncated', 3);
    fs.truncateSync(files[1], fs.statSync(files[1]).size - 100);
    expectError(
      'truncated shard',
      files[0],
      /^GgufError: GGUF file tiny-00002-of-00003\.gguf is truncated: tensor .* needs bytes up to \d+, but the file has \d+ bytes$/,
    );
  }
  {
    const files = writeSplit(model, 'later', 3);
    expectError(
      'a later shard opened',
      files[1],
      /^GgufError: tiny-00002-of-00003\.gguf is shard 2 of 3 of a split GGUF: load the first shard; open tiny-00001-of-00003\.gguf instead$/,
    );
  }
  {
    const files = writeSplit(model, 'renamed', 2);
    const renamed = path.join(path.dirname(files[0]), 'tiny.gguf');
    fs.renameSync(files[0], renamed);
    expectError(
      'first shard renamed',
      renamed,
      /^GgufError: tiny\.gguf is the first of 2 shards of a split GGUF, but its name does not end in -00001-of-00002\.gguf, so the other shards cannot be found$/,
    );
  }
  {
    const files = writeSplit(model, 'misnamed', 2);
    const renamed = path.join(path.dirname(files[0]), 'tiny-00001-of-00003.gguf');
    fs.renameSync(files[0], renamed);
    expectError(
      'name and metadata disagree',
      renamed,
      /^GgufError: tiny-00001-of-00003\.gguf: its name says shard 1 of 3, but its metadata says shard 1 of 2$/,
    );
  }

  const before = openFds();
  for (const { label, file, re } of cases) {
    t.throws(() => M.loadModel(file), re, label);
    t.throws(() => M.GgufFile.open(file), re, `${label} (GgufFile.open)`);
  }
  t.equal(openFds(), before, 'no file descriptor left open by the failures');
  t.end();
});
