'use strict';
// GGUF and safetensors readers, dequantization, config and HostWeights,
// checked on the tiny model that test/helpers/tiny-model.js writes with its
// own writers and llama.cpp-style quantizers, against the original f64
// weights and an independent block decoder written in this file.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const M = require('../dist/model');
const tiny = require('./helpers/tiny-model');
const { referenceLogprobs } = require('./helpers/reference-forward');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-model-gguf-'));
test.onFinish(() => fs.rmSync(dir, { recursive: true, force: true }));
const ARCHS = ['llama', 'qwen2', 'qwen3'];
const QUANT = { Q8_0: [32, 34], Q4_0: [32, 18], Q4_1: [32, 20], F16: [1, 2], BF16: [1, 2] };

const referenceDecode = tiny.referenceDecode;

/** Largest acceptable |decoded - original| for one element, from its block's statistics. */
function quantBound(type, block, x) {
  const amax = Math.max(...block.map(Math.abs));
  const f16Rel = 2 ** -10;
  switch (type) {
    case 'F16':
      return Math.abs(x) * 2 ** -11 + 2 ** -24;
    case 'BF16':
      return Math.abs(x) * 2 ** -8;
    case 'Q8_0':
      return (amax / 127) * 0.5 + amax * f16Rel;
    case 'Q4_0':
      return amax / 8 + amax * f16Rel; // the side opposite the largest value clamps at 7/8
    case 'Q4_1': {
      const min = Math.min(...block);
      const max = Math.max(...block);
      return ((max - min) / 15) * 0.5 + (Math.abs(min) + Math.abs(max)) * f16Rel;
    }
    default:
      return 0;
  }
}

function maxAbsDiff(a, b) {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

function throwsMessage(t, fn, expected, label) {
  try {
    fn();
    t.fail(`${label}: did not throw`);
  } catch (err) {
    if (expected instanceof RegExp) t.match(err.message, expected, label);
    else t.equal(err.message, expected, label);
  }
}

test('GGUF header: every metadata value type, arrays, tensor table and alignment', (t) => {
  const file = path.join(dir, 'header.gguf');
  const metadata = [
    ['general.architecture', { type: 'STRING', value: 'llama' }],
    ['general.alignment', { type: 'U32', value: 64 }],
    ['t.u8', { type: 'U8', value: 200 }],
    ['t.i8', { type: 'I8', value: -5 }],
    ['t.u16', { type: 'U16', value: 60000 }],
    ['t.i16', { type: 'I16', value: -300 }],
    ['t.u32', { type: 'U32', value: 4000000000 }],
    ['t.i32', { type: 'I32', value: -2000000000 }],
    ['t.f32', { type: 'F32', value: 1.25 }],
    ['t.f64', { type: 'F64', value: Math.PI }],
    ['t.bool', { type: 'BOOL', value: true }],
    ['t.string', { type: 'STRING', value: 'héllo ✓ 世界' }],
    ['t.u64', { type: 'U64', value: 2 ** 53 + 2 }],
    ['t.u64small', { type: 'U64', value: 12345 }],
    ['t.i64', { type: 'I64', value: -42 }],
    ['t.array_u8', { type: 'ARRAY', elementType: 'U8', value: [1, 2, 3] }],
    ['t.array_str', { type: 'ARRAY', elementType: 'STRING', value: ['a', '', 'ccc'] }],
    ['t.array_empty', { type: 'ARRAY', elementType: 'F32', value: [] }],
  ];
  const values = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
    32,
  ];
  const tensors = [
    { name: 'a', dims: [3], type: 'F32', bytes: tiny.encodeTensor('F32', [1, 2, 3]) },
    { name: 'b', dims: [32, 1], type: 'Q8_0', bytes: tiny.encodeTensor('Q8_0', values) },
    { name: 'c', dims: [2, 2], type: 'F16', bytes: tiny.encodeTensor('F16', [0.5, -1, 2, 65504]) },
  ];
  tiny.writeGguf(file, metadata, tensors, { alignment: 64 });
  const gguf = M.GgufFile.open(file);
  t.teardown(() => gguf.close());
  t.equal(gguf.version, 3, 'version');
  t.equal(gguf.alignment, 64, 'alignment from general.alignment');
  t.equal(gguf.dataOffset % 64, 0, 'data section aligned');
  const m = gguf.metadata;
  t.equal(m.get('t.u8'), 200);
  t.equal(m.get('t.i8'), -5);
  t.equal(m.get('t.u16'), 60000);
  t.equal(m.get('t.i16'), -300);
  t.equal(m.get('t.u32'), 4000000000);
  t.equal(m.get('t.i32'), -2000000000);
  t.equal(m.get('t.f32'), 1.25);
  t.equal(m.get('t.f64'), Math.PI);
  t.equal(m.get('t.bool'), true);
  t.equal(m.get('t.string'), 'héllo ✓ 世界', 'UTF-8 string');
  t.equal(m.get('t.u64'), BigInt(2 ** 53) + 2n, 'u64 beyond 2^53 stays exact as a bigint');
  t.equal(m.get('t.u64small'), 12345, 'small u64 is a number');
  t.equal(m.get('t.i64'), -42);
  t.deepEqual(m.get('t.array_u8').values, [1, 2, 3]);
  t.equal(m.get('t.array_u8').elementType, M.GgufValueType.UINT8);
  t.deepEqual(gguf.meta.stringArray('t.array_str'), ['a', '', 'ccc']);
  t.deepEqual(m.get('t.array_empty').values, []);
  t.deepEqual([...gguf.tensors.keys()], ['a', 'b', 'c'], 'tensor order');
  t.deepEqual(gguf.tensor('b').dims, [32, 1]);
  t.equal(gguf.tensor('b').type, M.GgmlType.Q8_0);
  t.equal(gguf.tensor('b').byteLength, 34);
  t.ok(
    [...gguf.tensors.values()].every((x) => x.offset % 64 === 0),
    'tensor offsets aligned',
  );
  t.deepEqual(Array.from(gguf.readTensorFloat32('a')), [1, 2, 3]);
  t.deepEqual(Array.from(gguf.readTensorFloat32('c')), [0.5, -1, 2, 65504]);
  t.deepEqual(
    Array.from(gguf.readTensorFloat32('b')),
    Array.from(referenceDecode('Q8_0', gguf.readTensorBytes('b'), 32)),
  );
  throwsMessage(
    t,
    () => gguf.meta.string('t.u8'),
    `GGUF file header.gguf: metadata t.u8 should be a string, got number 200`,
    'typed accessor names key and value',
  );
  throwsMessage(
    t,
    () => gguf.meta.integer('missing.key'),
    'GGUF file header.gguf lacks the metadata key missing.key',
    'missing key',
  );
  t.end();
});

test('dequantization of F16, BF16, Q8_0, Q4_0, Q4_1 equals an independent block decoder and stays within quantization error', (t) => {
  const model = tiny.makeTinyModel('llama', 3);
  for (const type of Object.keys(QUANT)) {
    const file = tiny.writeTinyGguf(model, path.join(dir, `deq-${type}.gguf`), { matrixType: type });
    const gguf = M.GgufFile.open(file);
    let exact = true;
    let within = true;
    let checked = 0;
    for (const entry of tiny.tensorTable(model.config)) {
      if (entry.dims.length !== 2) continue;
      const info = gguf.tensor(entry.gguf);
      const [blockSize, blockBytes] = QUANT[type];
      t.equal(info.byteLength, (info.elementCount / blockSize) * blockBytes, `${type} ${entry.gguf} byte length`);
      const ours = gguf.readTensorFloat32(entry.gguf);
      const theirs = referenceDecode(type, gguf.readTensorBytes(entry.gguf), info.elementCount);
      if (ours.some((v, i) => v !== Math.fround(theirs[i]))) exact = false;
      // The file holds Q/K rows in llama.cpp's order: compare with the original permuted the same way.
      let original = entry.get(model.weights);
      if (entry.ropeHeads) original = tiny.llamaCppPermute(original, entry.ropeHeads, entry.dims[1]);
      const group = type === 'F16' || type === 'BF16' ? 1 : 32;
      for (let i = 0; i < ours.length; i++) {
        const start = Math.floor(i / 32) * 32;
        const block = Array.from(original.subarray(start, start + 32));
        if (Math.abs(ours[i] - original[i]) > quantBound(type, block, original[i]) * (group === 1 ? 1 : 1.0001))
          within = false;
      }
      checked++;
    }
    t.ok(checked > 0 && exact, `${type}: lib decode == reference decode, bit for bit (${checked} tensors)`);
    t.ok(within, `${type}: decoded values within the quantization error bound of the originals`);
    gguf.close();
  }
  t.end();
});

function checkWeightsEqual(t, got, want, config, tolerance, label) {
  const pairs = [
    ['embedding', got.embedding, want.embedding],
    ['finalNorm', got.finalNorm, want.finalNorm],
    ['lmHead', got.lmHead, want.lmHead],
  ];
  got.layers.forEach((layer, l) => {
    for (const key of Object.keys(want.layers[l])) pairs.push([`layers[${l}].${key}`, layer[key], want.layers[l][key]]);
    for (const key of Object.keys(layer))
      if (!(key in want.layers[l])) t.fail(`${label}: unexpected ${key} in layer ${l}`);
  });
  let worst = 0;
  let worstName = '';
  let worstDiff = 0;
  for (const [name, tensor, original] of pairs) {
    if (!tensor || tensor.data.length !== original.length) {
      t.fail(`${label}: ${name} missing or of wrong size`);
      continue;
    }
    const rowLength = tensor.dims.length === 2 ? tensor.dims[1] : tensor.dims[0];
    for (let r = 0; r * rowLength < original.length; r++) {
      const row = original.subarray(r * rowLength, (r + 1) * rowLength);
      const diff = maxAbsDiff(tensor.data.subarray(r * rowLength, (r + 1) * rowLength), row);
      const ratio = diff / tolerance(row, name);
      if (ratio > worst) ((worst = ratio), (worstName = `${name} row ${r}`), (worstDiff = diff));
    }
  }
  t.equal(got.layers.length, config.numLayers, `${label}: layer count`);
  t.equal(got.lmHead === got.embedding, config.tiedEmbeddings, `${label}: lmHead is the embedding iff tied`);
  const detail =
    worst === 0
      ? 'all exact'
      : `worst |diff| ${worstDiff.toExponential(2)} = ${worst.toExponential(2)} x the bound, at ${worstName}`;
  t.ok(worst <= 1, `${label}: every tensor within tolerance (${detail})`);
}

const exactly = () => Number.MIN_VALUE;

test('HostWeights from F32 GGUF equal the original HF-orientation weights (llama Q/K permutation undone)', (t) => {
  for (const arch of ARCHS) {
    const model = tiny.makeTinyModel(arch, 5);
    const file = tiny.writeTinyGguf(model, path.join(dir, `w-${arch}.gguf`));
    const weights = M.loadGgufWeights(file);
    checkWeightsEqual(t, weights, model.weights, model.config, exactly, `${arch} F32 GGUF`);
    t.deepEqual(
      weights.layers[0].wq.dims,
      [model.config.numHeads * model.config.headDim, model.config.hiddenSize],
      `${arch}: wq dims [Hq*D, Dm]`,
    );
    t.deepEqual(
      weights.layers[0].wDown.dims,
      [model.config.hiddenSize, model.config.intermediateSize],
      `${arch}: wDown dims [Dm, F]`,
    );
    const gguf = M.GgufFile.open(file);
    const rawQ = gguf.readTensorFloat32('blk.0.attn_q.weight');
    gguf.close();
    const rawMatches = maxAbsDiff(rawQ, model.weights.layers[0].wq) === 0;
    t.equal(
      rawMatches,
      arch !== 'llama',
      `${arch}: the file's own Q rows are ${arch === 'llama' ? '' : 'not '}permuted`,
    );
  }
  t.end();
});

test('HostWeights from quantized GGUF (Q8_0 embedding, Q4_1 / Q4_0 / Q8_0 matrices) within quantization error', (t) => {
  for (const [arch, matrixType] of [
    ['llama', 'Q4_1'],
    ['qwen2', 'Q4_0'],
    ['qwen3', 'Q8_0'],
  ]) {
    const model = tiny.makeTinyModel(arch, 7);
    const file = tiny.writeTinyGguf(model, path.join(dir, `wq-${arch}.gguf`), { matrixType, embeddingType: 'Q8_0' });
    const weights = M.loadGgufWeights(file);
    // Blocks are parts of rows and the permutation moves whole rows, so a bound from the row's range holds.
    const bound = (row, name) => {
      if (row.length < 32) return Number.MIN_VALUE; // norms and biases stay F32
      const type = name === 'embedding' || (name === 'lmHead' && model.config.tiedEmbeddings) ? 'Q8_0' : matrixType;
      let b = 0;
      for (let s = 0; s < row.length; s += 32) {
        const block = Array.from(row.subarray(s, s + 32));
        for (const x of block) b = Math.max(b, quantBound(type, block, x));
      }
      return b * 1.0001;
    };
    checkWeightsEqual(t, weights, model.weights, model.config, bound, `${arch} ${matrixType} GGUF`);
  }
  t.end();
});

test('safetensors + config.json: f32 exact, f16/bf16 within rounding, sharded directory', (t) => {
  const rel = {
    F32: () => Number.MIN_VALUE,
    F16: (row) => Math.max(...row.map(Math.abs)) * 2 ** -11 + 2 ** -24,
    BF16: (row) => Math.max(...row.map(Math.abs)) * 2 ** -8,
  };
  for (const arch of ARCHS) {
    const model = tiny.makeTinyModel(arch, 11);
    for (const dtype of ['F32', 'F16', 'BF16']) {
      const hfDir = tiny.writeTinyHfDir(model, path.join(dir, `hf-${arch}-${dtype}`), {
        dtype,
        shards: dtype === 'F32' && arch === 'qwen2' ? 2 : 1,
      });
      const { config, weights } = M.loadModel(hfDir);
      t.deepEqual(config, model.config, `${arch} ${dtype}: config from config.json`);
      checkWeightsEqual(t, weights, model.weights, model.config, rel[dtype], `${arch} HF ${dtype}`);
    }
  }
  t.end();
});

test('config from GGUF metadata equals the generator config (f32 metadata floats)', (t) => {
  for (const arch of ARCHS) {
    const model = tiny.makeTinyModel(arch, 1);
    const gguf = M.GgufFile.open(tiny.writeTinyGguf(model, path.join(dir, `cfg-${arch}.gguf`)));
    const want = {
      ...model.config,
      ropeTheta: Math.fround(model.config.ropeTheta),
      rmsEps: Math.fround(model.config.rmsEps),
    };
    t.deepEqual(M.configFromGguf(gguf), want, `${arch}`);
    gguf.close();
  }
  t.end();
});

test('loadModel: .gguf and HF directory give the same model, tokens and (nearly) the same forward pass', (t) => {
  for (const arch of ARCHS) {
    const model = tiny.makeTinyModel(arch, 13);
    const g = M.loadModel(tiny.writeTinyGguf(model, path.join(dir, `lm-${arch}.gguf`)));
    const h = M.loadModel(tiny.writeTinyHfDir(model, path.join(dir, `lm-${arch}`)));
    t.equal(g.name, `lm-${arch}`, 'GGUF name is the file name without .gguf');
    t.equal(h.name, `lm-${arch}`, 'HF name is the directory name');
    for (const text of tiny.TINY_TEXTS)
      t.deepEqual(g.tokenizer.encode(text), h.tokenizer.encode(text), `${arch}: same ids for ${JSON.stringify(text)}`);
    const ids = g.tokenizer.encode(tiny.TINY_TEXTS[0]);
    const want = referenceLogprobs(model.weights, model.config, ids);
    const fromGguf = referenceLogprobs(g.weights, g.config, ids);
    const worst = Math.max(...want.map((row, i) => maxAbsDiff(row, fromGguf[i])));
    t.ok(
      worst < 1e-4,
      `${arch}: forward pass of the loaded GGUF weights matches the originals (max |dlogprob| ${worst.toExponential(2)})`,
    );
    if (arch === 'llama') {
      // The same check fails without the unpermutation: proof the comparison can see it.
      const gguf = M.GgufFile.open(g.path);
      const raw = {
        ...g.weights,
        layers: g.weights.layers.map((l, i) => ({
          ...l,
          wq: gguf.readTensorFloat32(`blk.${i}.attn_q.weight`),
          wk: gguf.readTensorFloat32(`blk.${i}.attn_k.weight`),
        })),
      };
      gguf.close();
      const permuted = referenceLogprobs(raw, g.config, ids);
      const off = Math.max(...want.map((row, i) => maxAbsDiff(row, permuted[i])));
      t.ok(off > 1e-3, `llama: leaving Q/K in llama.cpp's order changes the logprobs (by ${off.toExponential(2)})`);
    }
  }
  t.end();
});

test('GGUF errors: bad magic, unsupported version, truncation, unsupported type, architecture, missing tensor, wrong shape', (t) => {
  const model = tiny.makeTinyModel('llama', 1);
  const good = tiny.writeTinyGguf(model, path.join(dir, 'good.gguf'));
  const bytes = fs.readFileSync(good);
  const variant = (name, buf) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, buf);
    return file;
  };
  const badMagic = Buffer.from(bytes);
  badMagic.write('GGML', 0, 'latin1');
  throwsMessage(
    t,
    () => M.GgufFile.open(variant('magic.gguf', badMagic)),
    'magic.gguf is not a GGUF file: it starts with "GGML", not "GGUF"',
    'bad magic',
  );
  const v1 = Buffer.from(bytes);
  v1.writeUInt32LE(1, 4);
  throwsMessage(
    t,
    () => M.GgufFile.open(variant('v1.gguf', v1)),
    'v1.gguf: GGUF version 1 is not supported (supported: 2, 3)',
    'version 1',
  );
  throwsMessage(
    t,
    () => M.GgufFile.open(variant('short-header.gguf', bytes.subarray(0, 200))),
    /^GGUF file short-header\.gguf is truncated: reading .* needs bytes \d+\.\.\d+, but the file has 200 bytes$/,
    'truncated header',
  );
  const cut = bytes.length - 1000;
  throwsMessage(
    t,
    () => M.GgufFile.open(variant('short-data.gguf', bytes.subarray(0, cut))),
    new RegExp(
      `^GGUF file short-data\\.gguf is truncated: tensor \\S+ needs bytes up to \\d+, but the file has ${cut} bytes$`,
    ),
    'truncated data',
  );
  throwsMessage(
    t,
    () => M.GgufFile.open(variant('empty.gguf', Buffer.alloc(0))),
    'empty.gguf is not a GGUF file: it has only 0 bytes',
    'empty file',
  );

  // An IQ2_XXS tensor (66 bytes per 256 values) is valid GGUF that we do not decode.
  const iq2 = variant('iq2.gguf', Buffer.alloc(0));
  tiny.writeGguf(
    iq2,
    [['general.architecture', { type: 'STRING', value: 'llama' }]],
    [{ name: 'blk.0.attn_q.weight', dims: [256, 1], type: 'IQ2_XXS', bytes: Buffer.alloc(66) }],
  );
  const iq2File = M.GgufFile.open(iq2);
  t.equal(iq2File.tensor('blk.0.attn_q.weight').byteLength, 66, 'IQ2_XXS tensors are listed with their size');
  throwsMessage(
    t,
    () => iq2File.readTensorFloat32('blk.0.attn_q.weight'),
    'GGUF tensor blk.0.attn_q.weight has type IQ2_XXS (16), which pjrt-score cannot dequantize yet ' +
      '(supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS)',
    'unsupported type',
  );
  try {
    iq2File.readTensorFloat32('blk.0.attn_q.weight');
  } catch (err) {
    t.equal(err.code, 'GGUF_UNSUPPORTED', 'unsupported type has code GGUF_UNSUPPORTED');
    t.ok(err instanceof M.GgufError, 'and is a GgufError');
  }
  throwsMessage(t, () => iq2File.tensor('nope'), 'GGUF file iq2.gguf has no tensor named nope', 'unknown tensor');
  iq2File.close();
  iq2File.close();
  throwsMessage(
    t,
    () => iq2File.readTensorBytes('blk.0.attn_q.weight'),
    'GGUF file iq2.gguf is closed',
    'read after close',
  );

  const bloomBytes = Buffer.from(bytes);
  const at = bloomBytes.indexOf('llama', 0, 'latin1');
  bloomBytes.write('bloom', at, 'latin1'); // same length: the header stays valid
  const bloomFile = M.GgufFile.open(variant('bloom.gguf', bloomBytes));
  throwsMessage(
    t,
    () => M.configFromGguf(bloomFile),
    'GGUF architecture "bloom" is not supported by pjrt-score (supported: llama, qwen2, qwen3, gemma, gemma2, gemma3)',
    'unsupported architecture',
  );

  // Drop a tensor by renaming it (same length keeps every offset valid).
  const missing = tiny.writeTinyGguf(model, path.join(dir, 'missing.gguf'));
  const mb = fs.readFileSync(missing);
  mb.write('blk.1.ffn_XX.weight', mb.indexOf('blk.1.ffn_up.weight', 0, 'latin1'), 'latin1');
  fs.writeFileSync(missing, mb);
  throwsMessage(
    t,
    () => M.loadGgufWeights(missing),
    'GGUF file missing.gguf has no tensor blk.1.ffn_up.weight, which a llama model needs',
    'missing tensor',
  );

  const shapeGguf = M.GgufFile.open(good);
  const cfg = { ...M.configFromGguf(shapeGguf), intermediateSize: 96 };
  throwsMessage(
    t,
    () => M.loadGgufWeights(shapeGguf, cfg),
    'GGUF tensor blk.0.ffn_gate.weight has shape [64, 32], expected [96, 32] from the model config',
    'wrong shape',
  );
  shapeGguf.close();
  bloomFile.close();
  t.end();
});

test('safetensors errors: truncated, bad header, inconsistent offsets, unsupported dtype', (t) => {
  const file = path.join(dir, 'st.safetensors');
  tiny.writeSafetensors(file, [{ name: 'w', shape: [2, 3], dtype: 'F32', values: [1, 2, 3, 4, 5, 6] }]);
  const st = M.SafetensorsFile.open(file);
  t.deepEqual(Array.from(st.readTensorFloat32('w')), [1, 2, 3, 4, 5, 6], 'round trip');
  t.deepEqual(st.tensor('w').shape, [2, 3]);
  const bytes = fs.readFileSync(file);
  const put = (name, buf) => {
    const p = path.join(dir, name);
    fs.writeFileSync(p, buf);
    return p;
  };
  throwsMessage(
    t,
    () => M.SafetensorsFile.open(put('cut.safetensors', bytes.subarray(0, bytes.length - 4))),
    /^cut\.safetensors is not a valid safetensors file: truncated: tensor w ends at byte \d+, the file has \d+$/,
    'truncated data',
  );
  const notJson = Buffer.concat([Buffer.from([5, 0, 0, 0, 0, 0, 0, 0]), Buffer.from('{nope')]);
  throwsMessage(
    t,
    () => M.SafetensorsFile.open(put('json.safetensors', notJson)),
    /^json\.safetensors is not a valid safetensors file: the header is not JSON/,
    'bad JSON',
  );
  const header = Buffer.from(JSON.stringify({ w: { dtype: 'F32', shape: [2, 3], data_offsets: [0, 20] } }));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(header.length));
  throwsMessage(
    t,
    () => M.SafetensorsFile.open(put('off.safetensors', Buffer.concat([len, header, Buffer.alloc(24)]))),
    'off.safetensors is not a valid safetensors file: tensor w (F32 [2,3]) needs 24 bytes but data_offsets span 20',
    'offsets vs shape',
  );
  const ints = Buffer.from(JSON.stringify({ i: { dtype: 'I32', shape: [2], data_offsets: [0, 8] } }));
  len.writeBigUInt64LE(BigInt(ints.length));
  const intFile = M.SafetensorsFile.open(put('int.safetensors', Buffer.concat([len, ints, Buffer.alloc(8)])));
  throwsMessage(
    t,
    () => intFile.readTensorFloat32('i'),
    'safetensors tensor i in int.safetensors has dtype I32, which pjrt-score cannot load (supported: F32, F16, BF16)',
    'unsupported dtype',
  );
  intFile.close();
  st.close();
  t.end();
});
