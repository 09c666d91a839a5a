'use strict';
// Weights decoded on the device from a GGUF file's own blocks
// (lib/device-weights/decode.ts) against the host path (dequantize to f32 in
// JavaScript, transpose, convert): for every stored type the device decodes
// (F32, F16, BF16, Q8_0, Q4_0, Q4_1) and every weight type, the arrays are
// bit-equal, and both equal the test's own conversions (helpers/
// weight-conversions.js) of the f32 arrays. Tiny random models written here
// as GGUF, on the real CPU plugin;
// llama (Q/K rows permuted in the file), qwen2 (untied LM head, biases) and
// qwen3 (q/k norms, Hq * D != Dm). The K-quants, Q5_0/Q5_1 and IQ4 types
// (rows of whole 256-element super-blocks: Dm = F = 256) on random blocks:
// every matrix decoded on the device, bit-equal to the host path.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client } = require('..');
const { loadModel, openModel } = require('../dist/model');
const { uploadWeights } = require('../dist/device-weights');
const { decoderWeightSpecs } = require('../dist/hlo');
const { loadProgramCache } = require('../dist/scoring/execution/load-programs');
const {
  makeTinyModel,
  writeTinyGguf,
  tensorTable,
  ggufMetadata,
  writeGguf,
  encodeTensor,
} = require('./helpers/tiny-model');
const { randomQuantBlocks, QUANT_BLOCKS, REFUSED_BLOCKS } = require('./helpers/quant-blocks');
const { prng } = require('./helpers/prng');

const { firstMismatch, mismatches } = require('./helpers/weight-conversions');

const STORED = ['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1'];

/**
 * Uploads `file`'s weights as `weights` decoded on the device from the file's own blocks (llama:
 * every stacked array built layer by layer and joined on the device, as for models past
 * ASSEMBLE_BYTES) and through the host path (`host`: the file loaded); asserts that every matrix
 * went through a decode program and that the arrays are bit-equal. The programs asked for are
 * listed: every matrix must have gone through a decode program, none through the host. They come
 * through the Scorer's load cache `cache` (compiled once, then read from the disk cache).
 * `more(fromHost)` checks more before both are freed.
 */
async function assertDecodedEqualsHost(t, { client, cache, arch, file, host, weights, label, more = async () => {} }) {
  const compiled = [];
  const programs = (program) => {
    compiled.push(program.name);
    return cache.programs(program);
  };
  const opened = openModel(file);
  const byLayer = arch === 'llama';
  const fromFile = await uploadWeights(client, opened.config, opened.weights, weights, {
    programs,
    ...(byLayer ? { assembleBytes: 1 } : {}),
  });
  opened.weights.close();
  const fromHost = await uploadWeights(client, host.config, host.weights, weights);
  try {
    const specs = decoderWeightSpecs(host.config, weights);
    const matrices = specs.filter((s) => s.matrix && !(s.tiedTo && host.config.tiedEmbeddings)).map((s) => s.name);
    const decodedNames = compiled.map((n) => /^decode_(\w+?)_/.exec(n)?.[1]).filter(Boolean);
    t.deepEqual(
      decodedNames.sort(),
      matrices.sort(),
      `${label} -> ${weights}: each matrix decoded on the device${byLayer ? ' (layer by layer, joined on the device)' : ''}`,
    );
    const bad = [];
    for (let i = 0; i < specs.length; i++) {
      const m = firstMismatch(await fromFile.buffers[i].toHost(), await fromHost.buffers[i].toHost());
      if (m) bad.push(`${specs[i].name}: ${m}`);
    }
    t.deepEqual(
      bad,
      [],
      `${label} -> ${weights}${byLayer ? ' by layer' : ''}: ${specs.length} arrays bit-equal to the host path`,
    );
    await more(fromHost);
  } finally {
    fromFile.dispose();
    fromHost.dispose();
  }
}

test('device decode equals the host path, bit for bit, for every stored type and weight type', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-decode-'));
  const client = await Client.create();
  const cache = loadProgramCache(client, true);
  try {
    for (const [arch, stored] of [
      ['llama', STORED],
      ['qwen2', ['Q4_1', 'F16']],
      ['qwen3', ['Q8_0']],
    ]) {
      const model = makeTinyModel(arch, 5);
      for (const matrixType of stored) {
        // The embedding in another type than the layers, as llama.cpp's quantizations do.
        const embeddingType = matrixType === 'Q4_1' ? 'Q8_0' : matrixType;
        const file = writeTinyGguf(model, path.join(dir, `${arch}-${matrixType}.gguf`), { matrixType, embeddingType });
        const host = loadModel(file);
        const f32 = await uploadWeights(client, host.config, host.weights, 'f32');
        const reference = [];
        for (const b of f32.buffers) reference.push(await b.toHost());
        f32.dispose();
        for (const weights of ['f32', 'bf16', 'int8']) {
          const more = async (fromHost) => {
            if (weights !== 'f32')
              t.deepEqual(
                await mismatches(fromHost.buffers, host.config, weights, reference),
                [],
                `... and to the test's ${weights} conversion`,
              );
          };
          await assertDecodedEqualsHost(t, {
            client,
            cache,
            arch,
            file,
            host,
            weights,
            label: `${arch} ${matrixType} (embedding ${embeddingType})`,
            more,
          });
        }
      }
    }
  } finally {
    await cache.close();
    client.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * A tiny model with rows of 256 (Dm = F = 256, 4 heads of 64) whose matrices are random blocks of the types
 * named by tensor (the GGUF name's suffix); vectors are random f32.
 */
function writeRandomBlocksGguf(arch, file, types) {
  const model = makeTinyModel(arch, 3);
  model.config = { ...model.config, hiddenSize: 256, intermediateSize: 256, headDim: 64 };
  const random = prng(351);
  const tensors = tensorTable(model.config).map((entry) => {
    const count = entry.dims.reduce((a, b) => a * b, 1);
    const suffix = entry.gguf.replace(/^blk\.\d+\./, '');
    const type = entry.dims.length === 1 ? 'F32' : types[suffix];
    const bytes =
      type === 'F32'
        ? encodeTensor(
            'F32',
            Array.from({ length: count }, () => random.uniform()),
          )
        : randomQuantBlocks(type, count / (QUANT_BLOCKS[type] ?? REFUSED_BLOCKS[type]).elements, random);
    return { name: entry.gguf, dims: [...entry.dims].reverse(), type, bytes: Buffer.from(bytes) };
  });
  writeGguf(file, ggufMetadata(model), tensors);
  return file;
}

test('K-quant, Q5 and IQ4 matrices: each decoded on the device, bit-equal to the host path', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-decode-k-'));
  const client = await Client.create();
  const cache = loadProgramCache(client, true);
  const cases = [
    // q, k, v of different types (joined after decoding), the layers joined on the device.
    [
      'llama',
      {
        'token_embd.weight': 'Q6_K',
        'attn_q.weight': 'Q4_K',
        'attn_k.weight': 'Q5_K',
        'attn_v.weight': 'Q6_K',
        'attn_output.weight': 'Q2_K',
        'ffn_gate.weight': 'Q3_K',
        'ffn_up.weight': 'IQ4_XS',
        'ffn_down.weight': 'Q5_0',
      },
    ],
    // q, k, v of one type (joined as bytes), an untied LM head.
    [
      'qwen2',
      {
        'token_embd.weight': 'Q5_K',
        'output.weight': 'Q4_K',
        'attn_q.weight': 'Q4_K',
        'attn_k.weight': 'Q4_K',
        'attn_v.weight': 'Q4_K',
        'attn_output.weight': 'Q5_1',
        'ffn_gate.weight': 'IQ4_NL',
        'ffn_up.weight': 'Q5_0',
        'ffn_down.weight': 'Q6_K',
      },
    ],
  ];
  try {
    for (const [arch, types] of cases) {
      const file = writeRandomBlocksGguf(arch, path.join(dir, `${arch}.gguf`), types);
      const host = loadModel(file);
      for (const weights of ['f32', 'int8']) {
        await assertDecodedEqualsHost(t, {
          client,
          cache,
          arch,
          file,
          host,
          weights,
          label: `${arch} (${[...new Set(Object.values(types))].join(', ')})`,
        });
      }
    }
  } finally {
    await cache.close();
    client.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a matrix in a type pjrt-score does not decode is refused at load, by name, with the list', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-decode-refused-'));
  const client = await Client.create();
  const cache = loadProgramCache(client, true);
  try {
    const types = {
      'token_embd.weight': 'Q8_0',
      'attn_q.weight': 'Q4_K',
      'attn_k.weight': 'Q4_K',
      'attn_v.weight': 'Q4_K',
      'attn_output.weight': 'Q4_K',
      'ffn_gate.weight': 'Q4_K',
      'ffn_up.weight': 'IQ2_XS',
      'ffn_down.weight': 'Q4_K',
    };
    const file = writeRandomBlocksGguf('llama', path.join(dir, 'iq2.gguf'), types);
    const message =
      /^GGUF tensor blk\.\d\.ffn_up\.weight has type IQ2_XS \(17\), which pjrt-score cannot dequantize yet \(supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS\)$/;
    t.throws(
      () => loadModel(file),
      (err) => message.test(err.message) && err.code === 'GGUF_UNSUPPORTED',
      'loadModel (host weights) refuses it',
    );
    const opened = openModel(file);
    try {
      await uploadWeights(client, opened.config, opened.weights, 'f32', { programs: cache.programs });
      t.fail('the streaming upload loaded it');
    } catch (err) {
      t.match(err.message, message, 'the streaming upload (decoded on the device) refuses it');
      t.equal(err.code, 'GGUF_UNSUPPORTED', 'with code GGUF_UNSUPPORTED');
    } finally {
      opened.weights.close();
    }
  } finally {
    await cache.close();
    client.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
