'use strict';
// The decoder programs on tiny random models (written to GGUF and to a
// Hugging Face directory by the test helpers) equal a naive float64 forward
// pass, for Llama, Qwen2 and Qwen3, in every layout.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client } = require('..');
const { loadModel } = require('../dist/model');
const { uploadWeights } = require('../dist/device-weights');
const { decoderFused, decoderPrefill, decoderExtend } = require('../dist/hlo');
const { makeTinyModel, writeTinyGguf, writeTinyHfDir } = require('./helpers/tiny-model');
const { referenceLogprobs } = require('./helpers/reference-forward');

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-tiny-'));
let client;
test('setup', async (t) => {
  client = await Client.create();
  t.pass('client');
});

const QUERY = [5, 9, 11, 3, 40, 17, 22];
const ITEMS = [[7, 8], [], [60, 61, 62, 1, 2, 3], [4], [33, 34, 35]];
const LABELS = [0, 5, 63, 31];

async function runFused(model, dw, dims, query, items, labels) {
  const { P, N, L, B } = dims;
  const exe = await client.compile(decoderFused(model.config, { prefix: P, items: N, itemLength: L, labels: B }).text);
  const pt = new Int32Array(P);
  pt.set(query);
  const it = new Int32Array(N * L);
  items.forEach((x, i) => it.set(x, i * L));
  const lens = new Int32Array(N);
  items.forEach((x, i) => (lens[i] = x.length));
  const lb = new Int32Array(B);
  lb.set(labels);
  const args = [
    await client.upload(pt, [P]),
    await client.upload(Int32Array.of(query.length), []),
    await client.upload(it, [N, L]),
    await client.upload(lens, [N]),
    await client.upload(lb, [B]),
  ];
  const [pre, itm] = await exe.execute([...args, ...dw.buffers]);
  const prefix = await pre.toHost();
  const itemRows = await itm.toHost();
  exe.dispose();
  return { prefix, itemRows, args };
}

for (const arch of ['llama', 'qwen2', 'qwen3']) {
  for (const format of ['gguf', 'safetensors']) {
    test(`${arch} from ${format}: fused, prefill+extend and dense equal the float64 reference`, async (t) => {
      const tiny = makeTinyModel(arch, 7);
      const where = path.join(work, `${arch}-${format}`);
      if (format === 'gguf') writeTinyGguf(tiny, `${where}.gguf`, { matrixType: 'F32', embeddingType: 'F32' });
      else writeTinyHfDir(tiny, where, { dtype: 'F32' });
      const model = loadModel(format === 'gguf' ? `${where}.gguf` : where);
      const dw = await uploadWeights(client, model.config, model.weights);
      const dims = { P: 8, N: 8, L: 8, B: 4 };
      const { prefix, itemRows, args } = await runFused(model, dw, dims, QUERY, ITEMS, LABELS);

      // Reference: each query ++ item alone, float64 loops, original weights.
      let worst = 0;
      ITEMS.forEach((item, i) => {
        const seq = [...QUERY, ...item];
        const ref = referenceLogprobs(tiny.weights, tiny.config, seq, { outputs: [seq.length - 1] })[0];
        LABELS.forEach((label, j) => {
          const got = item.length ? itemRows[i * dims.B + j] : prefix[j];
          worst = Math.max(worst, Math.abs(got - ref[label]));
        });
      });
      t.ok(worst <= 1e-4, `fused: max |logprob diff| ${worst.toExponential(2)} <= 1e-4`);

      // Prefill + extend must give the fused numbers (same math, split in two programs).
      const prefill = await client.compile(decoderPrefill(model.config, { prefix: dims.P, labels: dims.B }).text);
      const [kCache, vCache, prefixOut] = await prefill.execute([args[0], args[1], args[4], ...dw.buffers]);
      const extend = await client.compile(
        decoderExtend(model.config, { prefix: dims.P, items: dims.N, itemLength: dims.L, labels: dims.B }).text,
      );
      const [extendOut] = await extend.execute([args[2], args[3], args[1], kCache, vCache, args[4], ...dw.buffers]);
      const extended = await extendOut.toHost();
      let split = 0;
      ITEMS.forEach((item, i) => {
        if (item.length)
          for (let j = 0; j < LABELS.length; j++)
            split = Math.max(split, Math.abs(extended[i * dims.B + j] - itemRows[i * dims.B + j]));
      });
      t.ok(split <= 1e-5, `prefill+extend vs fused: ${split.toExponential(2)}`);
      const prefixRow = await prefixOut.toHost();
      t.ok(
        LABELS.every((_, j) => Math.abs(prefixRow[j] - prefix[j]) <= 1e-5),
        'prefill reads the query like fused',
      );

      [prefill, extend].forEach((e) => e.dispose());
      dw.dispose();
    });
  }
}

test('teardown', (t) => {
  client.dispose();
  fs.rmSync(work, { recursive: true, force: true });
  t.end();
});
