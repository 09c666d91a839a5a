'use strict';
// What `weights: 'auto'` picks (lib/device-weights/choose.ts), keyed by
// platform and CPU flags, for the default model's shape: the device bytes
// are checked against the layout's own element counts computed here.
const test = require('tape');
const { chooseWeightType, weightBytes } = require('../dist/device-weights');

// SmolLM2-135M's shape (tied LM head).
const config = {
  vocabSize: 49152,
  hiddenSize: 576,
  intermediateSize: 1536,
  numLayers: 30,
  numHeads: 9,
  numKvHeads: 3,
  headDim: 64,
  ropeTheta: 100000,
  rmsEps: 1e-5,
  attentionBias: false,
  qkNorm: false,
  tiedEmbeddings: true,
};

test("auto keeps a bf16 checkpoint's bits where the dots read bf16 weights as they lie, and only a bf16 checkpoint", (t) => {
  const memoryBytes = weightBytes(config, 'f32');
  const on = (readsBf16, matrixType) =>
    chooseWeightType('auto', { platform: 'cpu', config, memoryBytes, cpuFlags: ['avx512f'], readsBf16, matrixType });
  t.equal(on(true, 'bf16').weightType, 'bf16', `a bf16 checkpoint, read as it lies: ${on(true, 'bf16').reason}`);
  t.equal(on(false, 'bf16').weightType, 'f32', 'a bf16 checkpoint under dots that widen it whole: f32');
  t.equal(on(true, 'quantized').weightType, 'f32', 'a quantized checkpoint: f32');
  t.equal(on(true, 'f32').weightType, 'f32', 'an f32 checkpoint: f32');
  t.end();
});

test('weightBytes: matrices in the weight type, vectors f32, int8 scales f32 (one per 32 input elements), a tied head once', (t) => {
  const {
    vocabSize: V,
    hiddenSize: Dm,
    intermediateSize: F,
    numLayers: Ly,
    numHeads: Hq,
    numKvHeads: Hkv,
    headDim: D,
  } = config;
  const qkv = (Hq + 2 * Hkv) * D;
  const matrices = V * Dm + Ly * (Dm * qkv + Hq * D * Dm + Dm * 2 * F + F * Dm);
  const vectors = Dm + Ly * 2 * Dm;
  // int8: one f32 scale per 32 consecutive input elements of each output channel.
  const blocks = matrices / 32;
  t.equal(weightBytes(config, 'f32'), 4 * (matrices + vectors));
  t.equal(weightBytes(config, 'bf16'), 2 * matrices + 4 * vectors);
  t.equal(weightBytes(config, 'int8'), matrices + 4 * vectors + 4 * blocks);
  t.end();
});

test('auto: f32 on a CPU where it fits, whatever the flags; then bf16, then int8 as memory shrinks', (t) => {
  const f32 = weightBytes(config, 'f32');
  const bf16 = weightBytes(config, 'bf16');
  const int8 = weightBytes(config, 'int8');
  const on = (memoryBytes, cpuFlags = ['avx2', 'fma']) =>
    chooseWeightType('auto', { platform: 'cpu', config, memoryBytes, cpuFlags });
  t.equal(on(f32).weightType, 'f32', 'fits: f32');
  t.equal(
    on(f32, ['avx512f', 'avx512_bf16', 'amx_bf16']).weightType,
    'f32',
    'AVX-512 BF16 / AMX: still f32 (the dots are f32)',
  );
  t.match(on(f32, ['avx512_bf16']).reason, /avx512_bf16/, 'the reason names the flag it saw');
  t.equal(on(f32 - 1).weightType, 'bf16', 'f32 does not fit: bf16');
  t.match(on(f32 - 1).reason, /f32 .* would not fit/);
  t.equal(on(bf16 - 1).weightType, 'int8', 'bf16 does not fit: int8');
  t.equal(on(int8 - 1).weightType, 'int8', 'nothing fits: the smallest, said so');
  t.match(on(int8 - 1).reason, /no weight type fits/);
  t.ok(on(f32).auto, 'marked as chosen by auto');
  t.end();
});

test('auto never picks int8 for a model whose matrix inputs are not whole blocks of 32; int8 asked for is refused with the reason', (t) => {
  const odd = { ...config, intermediateSize: 1540 };
  const c = chooseWeightType('auto', { platform: 'cpu', config: odd, memoryBytes: 1 });
  t.equal(c.weightType, 'bf16', 'nothing fits: the smallest of those it can hold');
  t.match(c.reason, /wDown has 1540/, 'the reason names the matrix');
  t.throws(() => weightBytes(odd, 'int8'), /multiple of 32; wDown has 1540/);
  t.end();
});

test('auto on another platform (cuda): bf16 first; an explicit choice is kept as asked', (t) => {
  t.equal(chooseWeightType('auto', { platform: 'cuda', config }).weightType, 'bf16');
  for (const w of ['f32', 'bf16', 'int8']) {
    const c = chooseWeightType(w, { platform: 'cpu', config });
    t.equal(c.weightType, w);
    t.notOk(c.auto);
  }
  t.end();
});
