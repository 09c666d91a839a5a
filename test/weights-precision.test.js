'use strict';
// Weights in f32, bf16 and int8 on the device (issue 20), on the real CPU
// plugin and the real default model:
// - round trip: what the device holds equals a conversion written here (round
//   to nearest even for bf16; symmetric int8 in blocks of 32 input elements
//   with an f32 scale each) of what the f32 upload holds, both when the file's
//   blocks are decoded on the device and when host weights are uploaded; the
//   Q8_0 embedding of the default model comes back exactly;
// - at each weight type, the packed and prefix plans equal the serial plan;
// - each weight type stays within the seeds' gate of f32 over 50 items, on
//   label probabilities as the Score API returns them by default (the seeds'
//   workloads); the two-label softmax, a stricter reading, is reported and
//   held for bf16.
// Cost: three Scorers (one per weight type, each shared by its plans) and
// three uploads for the round trip; the conversions below run over typed
// arrays without per-element allocation (135M weights each).
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client, Scorer } = require('..');
const { loadModel, openModel } = require('../dist/model');
const { uploadWeights } = require('../dist/device-weights');
const { decoderWeightSpecs } = require('../dist/hlo/decoder-layout');
const { decoderFused } = require('../dist/hlo');
const { loadProgramCache } = require('../dist/scoring/load-programs');
const { makeTinyModel, writeTinyHfDir } = require('./helpers/tiny-model');

// ---- the test's own conversions --------------------------------------------

/** f32 -> bf16 bits, round to nearest even, by comparing the dropped half with 0x8000 (not the library's add-and-shift). */
function bf16Bits(values) {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = new Uint16Array(values.length);
  for (let i = 0; i < bits.length; i++) {
    const u = bits[i];
    const hi = u >>> 16;
    const lo = u & 0xffff;
    if (Number.isNaN(values[i])) out[i] = hi | 0x40;
    else out[i] = lo > 0x8000 || (lo === 0x8000 && (hi & 1) === 1) ? (hi + 1) & 0xffff : hi;
  }
  return out;
}

const BLOCK = 32;

/**
 * The int8 rule the project states, written over the device layout: one
 * block is 32 consecutive input elements of one output channel; scale =
 * f32(max|w| / 127), q = round-half-away-from-zero(w / scale) clamped to
 * [-127, 127]; scale 0 gives q 0. The input axis is the last of a [V, Dm]
 * table (a row is a token) and the middle of a stacked [Ly, in, out] matrix
 * (a column is an output channel), so the scales are [V, Dm / 32] and
 * [Ly, in / 32, out].
 */
function quantizeBlocks(values, dims, perLayer) {
  const [layers, rows, cols] = perLayer ? dims : [1, ...dims];
  // blockOf(l, r, c): the scale index of element (l, r, c).
  const blockOf = perLayer ? (l, r, c) => (l * (rows / BLOCK) + Math.floor(r / BLOCK)) * cols + c : (l, r, c) => r * (cols / BLOCK) + Math.floor(c / BLOCK);
  const max = new Float64Array(values.length / BLOCK);
  for (let l = 0, k = 0; l < layers; l++) {
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++, k++) {
        const b = blockOf(l, r, c);
        max[b] = Math.max(max[b], Math.abs(values[k]));
      }
    }
  }
  const scales = Float32Array.from(max, (m) => m / 127);
  const q = new Int8Array(values.length);
  for (let l = 0, k = 0; l < layers; l++) {
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++, k++) {
        const s = scales[blockOf(l, r, c)];
        if (s === 0) continue;
        const x = values[k] / s;
        q[k] = Math.max(-127, Math.min(127, Math.sign(x) * Math.floor(Math.abs(x) + 0.5)));
      }
    }
  }
  return { q, scales };
}

function firstMismatch(a, b) {
  if (a.length !== b.length) return `length ${a.length} vs ${b.length}`;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) return `index ${i}: ${a[i]} vs ${b[i]}`;
  return null;
}

// ---- round trip --------------------------------------------------------------

/** What each array of a `weights` load must hold, from the f32 arrays: the test's own conversions. */
function expectedArrays(config, weights, reference) {
  const specs = decoderWeightSpecs(config, weights);
  const expected = specs.map(() => null);
  specs.forEach((spec, i) => {
    if (spec.scaleOf !== undefined) return;
    if (spec.elementType === 'f32') expected[i] = { what: `${spec.name} (f32)`, values: reference[i] };
    else if (spec.elementType === 'u16') expected[i] = { what: `${spec.name} [${spec.dims}] bf16 bits, round to nearest even`, values: bf16Bits(reference[i]) };
    else {
      const { q, scales } = quantizeBlocks(reference[i], spec.dims, spec.perLayer);
      const scaleIndex = specs.findIndex((s) => s.scaleOf === spec.name);
      expected[i] = { what: `${spec.name} [${spec.dims}] int8 values`, values: q };
      expected[scaleIndex] = { what: `${spec.name}Scale [${specs[scaleIndex].dims}]: one per 32 input elements`, values: scales, dims: spec.perLayer ? [spec.dims[0], spec.dims[1] / BLOCK, spec.dims[2]] : [spec.dims[0], spec.dims[1] / BLOCK] };
    }
  });
  return { specs, expected };
}

test('round trip: each weight type on the device equals the test\'s conversion of the f32 arrays, from the file (decoded on the device) and from host weights', async (t) => {
  const client = await Client.create();
  const model = loadModel();
  // The reference: the host path's f32 arrays (dequantized in JavaScript, transposed, stacked).
  const f32 = await uploadWeights(client, model.config, model.weights, 'f32');
  const reference = [];
  for (const b of f32.buffers) reference.push(await b.toHost());
  const f32Bytes = f32.bytes;
  f32.dispose();

  // Decode programs through the Scorer's load cache: compiled once, read from the disk cache after.
  const programs = loadProgramCache(client, true);
  for (const weights of ['f32', 'bf16', 'int8']) {
    const { specs, expected } = expectedArrays(model.config, weights, reference);
    for (const source of weights === 'f32' ? ['file'] : ['file', 'host']) {
      const opened = source === 'file' ? openModel() : null;
      const loaded = await uploadWeights(client, model.config, opened ? opened.weights : model.weights, weights, programs);
      opened?.weights.close();
      t.equal(loaded.weightType, weights);
      const bad = [];
      for (let i = 0; i < specs.length; i++) {
        if (expected[i].dims && firstMismatch(specs[i].dims, expected[i].dims)) bad.push(`${specs[i].name}: dims [${specs[i].dims}]`);
        const m = firstMismatch(await loaded.buffers[i].toHost(), expected[i].values);
        if (m) bad.push(`${expected[i].what}: ${m}`);
      }
      t.deepEqual(bad, [], `${weights} from the ${source}: all ${specs.length} arrays equal (${expected.map((e) => e.what.split(' ')[0]).join(', ')})`);
      const ratio = loaded.bytes / f32Bytes;
      t.ok(ratio <= { f32: 1, bf16: 0.51, int8: 0.29 }[weights], `${weights} weights take ${(loaded.bytes / 2 ** 20).toFixed(0)} MiB (${ratio.toFixed(3)} of f32)`);
      if (weights === 'int8' && source === 'file') {
        // The file's Q8_0 embedding (blocks of 32 values, one f16 scale, max |q| = 127) re-quantizes to itself.
        const e = specs.findIndex((s) => s.name === 'embedding');
        const q = await loaded.buffers[e].toHost();
        const scales = await loaded.buffers[specs.findIndex((s) => s.scaleOf === 'embedding')].toHost();
        t.equal(firstMismatch(Float32Array.from(q, (v, k) => v * scales[Math.floor(k / BLOCK)]), reference[e]), null, 'int8 embedding (Q8_0 in the GGUF), dequantized: bit-equal to f32');
      }
      loaded.dispose();
    }
  }
  await programs.close();
  client.dispose();
});

test('round trip: a bf16 safetensors model goes to the device as its own bits', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-bf16-'));
  try {
    const tiny = makeTinyModel('qwen2', 11);
    writeTinyHfDir(tiny, dir, { dtype: 'BF16' });
    const client = await Client.create();
    const model = loadModel(dir);
    const { openModel } = require('../dist/model');
    const opened = openModel(dir);
    const streamed = await uploadWeights(client, opened.config, opened.weights, 'bf16');
    opened.weights.close();
    const f32 = await uploadWeights(client, model.config, model.weights, 'f32');
    const specs = decoderWeightSpecs(model.config, 'bf16');
    for (let i = 0; i < specs.length; i++) {
      const got = await streamed.buffers[i].toHost();
      const ref = await f32.buffers[i].toHost();
      const want = specs[i].elementType === 'u16' ? bf16Bits(ref) : ref;
      t.equal(firstMismatch(got, want), null, `${specs[i].name}: equal`);
    }
    streamed.dispose();
    f32.dispose();
    client.dispose();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('program text: f32 weights add no op; bf16/int8 convert each matrix slice before its dot, which stays f32', (t) => {
  const { config } = makeTinyModel('qwen3');
  const shape = { prefix: 8, items: 2, itemLength: 4, labels: 2 };
  const f32 = decoderFused(config, shape, { dotPrecision: 'HIGHEST' }).text;
  t.equal(decoderFused(config, shape, { dotPrecision: 'HIGHEST', weights: 'f32' }).text, f32, "weights: 'f32' is the program without the option");
  t.notOk(/bf16|xi8/.test(f32), 'f32 program: no bf16 or i8 anywhere');
  for (const [weights, stored] of [['bf16', 'ui16'], ['int8', 'i8']]) {
    const text = decoderFused(config, shape, { dotPrecision: 'HIGHEST', weights }).text;
    const dots = text.split('\n').filter((l) => l.includes('stablehlo.dot_general'));
    t.ok(dots.length > 5 && dots.every((l) => /tensor<[0-9x]*xf32>, tensor<[0-9x]*xf32>\) ->/.test(l)), `${weights}: all ${dots.length} dots take f32 operands`);
    t.notOk(/bf16/.test(text), `${weights}: no bf16 op (XLA CPU would compute it in f32 on the whole array)`);
    const converts = text.split('\n').filter((l) => l.includes('stablehlo.convert') && l.includes(`x${stored}>) ->`));
    // embedding rows, LM head, and the four projections of the layer body
    t.equal(converts.length, 6, `${weights}: ${stored} is widened in 6 places (embedding rows, LM head, 4 layer projections)`);
  }
  t.end();
});

// ---- plans and accuracy on the real model ---------------------------------------

const YES = 9805; // ' yes'
const NO = 787; // ' no'
const SUBJECTS = ['The sun', 'Water', 'A cat', 'Paris', 'The moon', 'Iron', 'A triangle', 'Snow', 'The Pacific', 'Honey'];
const CLAIMS = [' is hot.', ' is a liquid at room temperature.', ' has four legs.', ' is the capital of France.', ' orbits the Earth.'];
const REQUEST = {
  query: 'Answer yes or no. Is the following statement true?',
  // 50 items (the minimum): every subject with every claim.
  items: SUBJECTS.flatMap((s) => CLAIMS.map((c) => ` ${s}${c} Answer:`)),
  labelTokenIds: [YES, NO],
};

/** p(yes) / (p(yes) + p(no)) per item: what apply_softmax would return. */
function twoLabelSoftmax(scores) {
  return scores.map(([y, n]) => [y / (y + n), n / (y + n)]);
}

function diffs(a, b) {
  let max = 0;
  let sum = 0;
  let n = 0;
  a.forEach((row, i) => row.forEach((x, j) => {
    const d = Math.abs(x - b[i][j]);
    max = Math.max(max, d);
    sum += d;
    n++;
  }));
  return { max, mean: sum / n };
}

const byType = {};
for (const weights of ['f32', 'bf16', 'int8']) {
  test(`${weights} weights: packed and prefix equal serial (<= 1e-4) over ${REQUEST.items.length} items`, async (t) => {
    const scorer = await Scorer.load({ weights, diskCache: true });
    t.equal(scorer.weightType, weights, `the scorer says ${weights}`);
    const serial = await scorer.score(REQUEST, { algorithm: 'serial' });
    for (const algorithm of ['packed', 'prefix']) {
      const other = await scorer.score(REQUEST, { algorithm });
      t.equal(other.algorithm, algorithm);
      const d = diffs(other.scores, serial.scores);
      t.ok(d.max <= 1e-4, `${algorithm} vs serial: max |diff| ${d.max.toExponential(2)}`);
    }
    byType[weights] = serial.scores;
    scorer.dispose();
  });
}

// Both hold the seeds' gate against f32 on the label probabilities. int8 is
// quantized in blocks of 32 input elements: one scale per output channel
// (the first int8) gave max 4.5e-2, mean 1.0e-2 here, outside the gate.
test('bf16 and int8 weights are within the gate of f32 (max <= 0.02, mean <= 0.01 on label probabilities)', (t) => {
  for (const weights of ['bf16', 'int8']) {
    const d = diffs(byType[weights], byType.f32);
    const soft = diffs(twoLabelSoftmax(byType[weights]), twoLabelSoftmax(byType.f32));
    t.comment(`${weights} vs f32 over ${REQUEST.items.length} items: label probabilities max ${d.max.toExponential(2)}, mean ${d.mean.toExponential(2)}; two-label softmax max ${soft.max.toExponential(2)}, mean ${soft.mean.toExponential(2)}`);
    t.ok(d.max <= 0.02, `${weights}: max |diff| ${d.max.toExponential(2)} <= 0.02`);
    t.ok(d.mean <= 0.01, `${weights}: mean |diff| ${d.mean.toExponential(2)} <= 0.01`);
    if (weights === 'bf16') t.ok(soft.max <= 0.02 && soft.mean <= 0.01, 'bf16: within the gate on the two-label softmax too');
  }
  t.end();
});

test('weights: a bad value is refused before anything loads', async (t) => {
  await Scorer.load({ weights: 'fp8' }).then(
    () => t.fail('fp8 must be refused'),
    (error) => t.match(error.message, /weights must be one of f32, bf16, int8, auto/),
  );
});
