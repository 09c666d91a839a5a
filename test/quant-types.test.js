'use strict';
// Every quantized GGUF type pjrt-score decodes, on random blocks (random
// bytes, the f16 scales made finite): the host decoder (lib/model/
// dequantize.ts) gives bit for bit what gguf-py's gguf.quants.dequantize
// gives (PyPI gguf, pinned in helpers/gguf-py.js, run here with python3),
// and the device decode programs (lib/device-weights/decode.ts) give the
// host's values bit for bit, both as a [V, Dm] table and as layer matrices
// (decoded transposed). Other types are refused by name with the list.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client } = require('..');
const { dequantize, GgmlType, DEQUANTIZABLE_TYPES, ggmlTypeName } = require('../dist/model');
const { decodeProgram } = require('../dist/device-weights/decode');
const { prng } = require('./helpers/prng');
const { runProgram } = require('./helpers/run-program');
const { runGgufPy } = require('./helpers/gguf-py');
const { QUANT_BLOCKS, randomQuantBlocks } = require('./helpers/quant-blocks');

const TYPES = QUANT_BLOCKS;
const ROWS = 6;
const ROW_LENGTH = 2048;

/** gguf-py's values for each type's blocks (one Python process for all). */
function ggufPyDecode(inputs, dir) {
  const jobs = Object.keys(inputs).map((name) => {
    const input = path.join(dir, `${name}.bin`);
    fs.writeFileSync(input, inputs[name]);
    return { type: name, input, output: path.join(dir, `${name}.f32`) };
  });
  fs.writeFileSync(path.join(dir, 'jobs.json'), JSON.stringify(jobs));
  runGgufPy(
    [
      'import sys, json, numpy as np',
      'from gguf import quants, GGMLQuantizationType',
      'for job in json.load(open(sys.argv[1])):',
      '    values = quants.dequantize(np.fromfile(job["input"], dtype=np.uint8), GGMLQuantizationType[job["type"]])',
      '    assert values.dtype == np.float32, values.dtype',
      '    values.tofile(job["output"])',
    ].join('\n'),
    [path.join(dir, 'jobs.json')],
  );
  return Object.fromEntries(
    jobs.map((j) => [j.type, new Uint32Array(new Uint8Array(fs.readFileSync(j.output)).buffer)]),
  );
}

/** The first index where two bit patterns differ, described, or null. */
function firstDifference(actual, expected) {
  if (actual.length !== expected.length) return `${actual.length} values, expected ${expected.length}`;
  const f = (bits) => new Float32Array(new Uint32Array([bits]).buffer)[0];
  for (let i = 0; i < actual.length; i++) {
    if (actual[i] !== expected[i])
      return `element ${i}: ${f(actual[i])} (0x${actual[i].toString(16)}), expected ${f(expected[i])} (0x${expected[i].toString(16)})`;
  }
  return null;
}

const bitsOf = (values) => new Uint32Array(values.buffer, values.byteOffset, values.length);

test('the decoded types: the legacy and K quants, IQ4_NL and IQ4_XS, besides F32, F16 and BF16', (t) => {
  t.deepEqual(
    DEQUANTIZABLE_TYPES.map(ggmlTypeName).sort(),
    ['F32', 'F16', 'BF16', ...Object.keys(TYPES)].sort(),
    'DEQUANTIZABLE_TYPES',
  );
  t.throws(
    () => dequantize(GgmlType.IQ2_XS, new Uint8Array(74), 256, 'GGUF tensor w'),
    /^GgufError: GGUF tensor w has type IQ2_XS \(17\), which pjrt-score cannot dequantize yet \(supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS\)$/,
    'another type is refused by name, with the list',
  );
  t.end();
});

test('random blocks: host decode equals gguf-py bit for bit, and the device decode equals the host', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-quant-'));
  const random = prng(35);
  const inputs = Object.fromEntries(
    Object.keys(TYPES).map((name) => [
      name,
      randomQuantBlocks(name, (ROWS * ROW_LENGTH) / TYPES[name].elements, random),
    ]),
  );
  const client = await Client.create();
  try {
    const reference = ggufPyDecode(inputs, dir);
    for (const name of Object.keys(TYPES)) {
      const type = GgmlType[name];
      const bytes = inputs[name];
      const host = bitsOf(dequantize(type, bytes, ROWS * ROW_LENGTH));
      t.equal(
        firstDifference(host, reference[name]),
        null,
        `${name}: ${host.length} values on the host equal gguf-py's bit for bit`,
      );
      const rowBytes = bytes.length / ROWS;
      // As a table: [ROWS, ROW_LENGTH] in the file's orientation.
      const table = decodeProgram(
        { name: 'embedding', perLayer: false },
        [{ type, rows: ROWS, rowLength: ROW_LENGTH, rowBytes }],
        'f32',
        1,
      );
      const [tableValues] = await runProgram(client, table, [bytes]);
      t.equal(firstDifference(bitsOf(tableValues), host), null, `${name}: the device's table decode equals the host's`);
      // As layer matrices: 2 layers of [ROWS / 2, ROW_LENGTH], decoded into [2, ROW_LENGTH, ROWS / 2].
      const rows = ROWS / 2;
      const layers = decodeProgram(
        { name: 'wDown', perLayer: true },
        [{ type, rows, rowLength: ROW_LENGTH, rowBytes }],
        'f32',
        2,
      );
      const [layerValues] = await runProgram(client, layers, [bytes]);
      const transposed = new Uint32Array(host.length);
      const decoded = bitsOf(layerValues);
      for (let l = 0; l < 2; l++) {
        for (let r = 0; r < rows; r++)
          for (let c = 0; c < ROW_LENGTH; c++)
            transposed[(l * rows + r) * ROW_LENGTH + c] = decoded[(l * ROW_LENGTH + c) * rows + r];
      }
      t.equal(
        firstDifference(transposed, host),
        null,
        `${name}: the device's layer decode (transposed) equals the host's`,
      );
    }
  } finally {
    client.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
