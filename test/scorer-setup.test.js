'use strict';
// The Scorer's setup step (lib/scoring/setup.ts; docs/design.md "Rooms"), run with no device: the
// ladders, budget, precision and attention forms a Scorer plans and runs with, from the real default
// model's config and the platform profiles. The expected values are written out by hand from the
// documented rules (planning/ladders.ts, platform/profiles.ts), or built by the plain loop `ladder`
// below, never by the code under test.
const test = require('tape');
const { openModel } = require('../dist/model');
const { ensureModelPath } = require('../dist/model/default-model');
const { scorerSetup } = require('../dist/scoring/setup');

let config;
test('the default model config (its file header only)', async (t) => {
  const model = openModel(await ensureModelPath());
  config = model.config;
  model.weights.close();
  t.equal(config.contextLength, 8192, 'context 8192');
  t.equal(config.vocabSize, 49152, 'vocabulary 49152');
});

/** A plugin that is not a device: its fields as the setup reads them. */
function plugin(platformName, over = {}) {
  return {
    platformName,
    pluginPath: '/nonexistent/plugin.so',
    prefixAttentionKernel: false,
    deviceMemoryBytes: 64 * 2 ** 30,
    ...over,
  };
}

function setup(over = {}) {
  return scorerSetup({
    config,
    options: {},
    precision: 'highest',
    plugin: plugin('cpu'),
    kernelPaths: null,
    factsOverride: {},
    matrixType: 'f32',
    weights: 'f32',
    ...over,
  });
}

/**
 * The documented ladder rule as a plain loop: every power of two from `min` times `min`, each times
 * every step rounded up to `align`, all capped at `max`, `max` itself last; ascending, no repeats.
 */
function ladder(min, max, steps = [], align = 1) {
  const sizes = new Set();
  for (let base = min; base <= max; base *= 2) {
    sizes.add(base);
    for (const s of steps) {
      const rung = Math.ceil((base * s) / align) * align;
      if (rung <= max) sizes.add(rung);
    }
  }
  sizes.add(max);
  return [...sizes].sort((a, b) => a - b);
}

test('the ladders a Scorer plans with on the CPU, from the documented rules', (t) => {
  const { ladders } = setup();
  // Written out by hand from planning/ladders.ts and the CPU profile's comments.
  t.deepEqual(
    ladders.tokens.slice(0, 10),
    [8, 16, 24, 32, 48, 64, 96, 128, 192, 256],
    'tokens: 8, then 1.5x rungs, multiples of 8',
  );
  t.deepEqual(
    ladders.itemTokens.slice(0, 17),
    [8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 72, 80],
    'items: rungs in eighths, multiples of 4',
  );
  t.deepEqual(
    ladders.counts.slice(0, 16),
    [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32],
    'counts: 1, 2, ..., 8, 10, 12, 14, 16, 20, ...',
  );
  t.deepEqual(
    ladders.labels,
    [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 49152],
    'labels: powers of two, then the vocabulary',
  );
  // Whole ladders against the plain loop.
  t.deepEqual(ladders.tokens, ladder(8, 8192, [1.5], 8), 'tokens, whole');
  t.deepEqual(
    ladders.itemTokens,
    ladder(8, 8192, [1.125, 1.25, 1.375, 1.5, 1.625, 1.75, 1.875], 4),
    'item lengths, whole',
  );
  t.deepEqual(
    ladders.queryTokens,
    ladder(8, 8192, [1.25, 1.5, 1.75], 4),
    'query lengths: the CPU steps, the item rule',
  );
  t.deepEqual(ladders.counts, ladder(1, 4096, [1.25, 1.5, 1.75]), 'counts, whole, up to 4096');
  t.equal(ladders.tokens[ladders.tokens.length - 1], 8192, 'every token ladder ends at the context');
  // What the finer count ladder buys: from 8 items up, at most 1.25x padded item rows.
  let worst = 0;
  for (let n = 8; n <= 4096; n++) worst = Math.max(worst, ladders.counts.find((c) => c >= n) / n);
  t.ok(worst <= 1.25, `padded item rows at most 1.25x from 8 items (worst ${worst.toFixed(3)})`);
  // What the finer item-length ladder buys: from 32 tokens up, at most 1.125x padded tokens per item.
  let worstLength = 0;
  for (let l = 32; l <= 8192; l++) worstLength = Math.max(worstLength, ladders.itemTokens.find((b) => b >= l) / l);
  t.ok(worstLength <= 1.125, `padded item tokens at most 1.125x from 32 tokens (worst ${worstLength.toFixed(3)})`);
  t.equal(
    ladders.itemTokens.find((b) => b >= 100),
    104,
    'a 100-token item pads to 104',
  );
  t.end();
});

test('the ladders follow the platform override and the CUDA profile', (t) => {
  const coarse = setup({ factsOverride: { countSteps: [1.5], queryTokenSteps: [] } });
  t.deepEqual(
    coarse.ladders.counts.slice(0, 10),
    [1, 2, 3, 4, 6, 8, 12, 16, 24, 32],
    'countSteps [1.5]: 1, 2, 3, 4, 6, 8, 12, ...',
  );
  t.deepEqual(coarse.ladders.queryTokens, ladder(8, 8192, [], 4), 'queryTokenSteps []: powers of two from 8');
  t.deepEqual(coarse.facts.overridden, ['countSteps', 'queryTokenSteps'], 'the override is named');
  const cuda = setup({ plugin: plugin('cuda') });
  t.deepEqual(
    cuda.ladders.counts.slice(0, 12),
    [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16],
    'CUDA: 10 items pad to 10, not 12',
  );
  t.end();
});

test('the pass budget: the profile, shrunk to a small device, under the budget option', (t) => {
  t.deepEqual(
    setup().budget,
    { tokensPerPass: 1536, scoreBytesPerPass: 256 * 2 ** 20, batchRowsPerPass: 2560 },
    'CPU, memory to spare: the measured budget',
  );
  // 1 GiB: a sixteenth is 64 MiB, a quarter of the measured 256 MiB: every limit scaled by 0.25.
  const small = setup({ plugin: plugin('cpu', { deviceMemoryBytes: 2 ** 30 }) }).budget;
  t.deepEqual(
    small,
    { tokensPerPass: 384, scoreBytesPerPass: 64 * 2 ** 20, batchRowsPerPass: 640 },
    '1 GiB: a quarter',
  );
  // 64 MiB: a sixteenth is 4 MiB; scaled by 1/64 every limit falls under the floor (256 tokens, 16 MiB, 256 rows).
  const tiny = setup({ plugin: plugin('cpu', { deviceMemoryBytes: 64 * 2 ** 20 }) }).budget;
  t.deepEqual(
    tiny,
    { tokensPerPass: 256, scoreBytesPerPass: 16 * 2 ** 20, batchRowsPerPass: 256 },
    '64 MiB: the floor',
  );
  const cuda = setup({ plugin: plugin('cuda', { deviceMemoryBytes: 80 * 2 ** 30 }) }).budget;
  t.deepEqual(
    cuda,
    { tokensPerPass: 16384, scoreBytesPerPass: 4 * 2 ** 30, batchRowsPerPass: 16384 },
    'CUDA, 80 GiB: its measured budget',
  );
  const asked = setup({ options: { budget: { tokensPerPass: 999 } } }).budget;
  t.equal(asked.tokensPerPass, 999, 'the budget option over the profile');
  t.equal(asked.batchRowsPerPass, 2560, 'the rest from the profile');
  const sizing = setup().sizing;
  t.equal(sizing.numHeads, 9, "the sizing carries the model's query heads");
  t.end();
});

test('precision and attention forms by platform', (t) => {
  const cpu = setup();
  t.equal(cpu.precisionChoice.precision, 'highest', 'CPU, highest asked: highest');
  t.deepEqual(
    [cpu.prefixAttention, cpu.causalAttention],
    [{ kind: 'rows' }, { kind: 'chunked', queryChunks: 4 }],
    'CPU without the kernels: ones_own rows, 4 query chunks',
  );
  t.equal(cpu.attentionNote, undefined, 'no note');
  const kernels = setup({ plugin: plugin('cpu', { prefixAttentionKernel: true }) });
  t.deepEqual(
    [kernels.prefixAttention, kernels.causalAttention],
    [{ kind: 'kernel' }, { kind: 'kernel' }],
    'CPU with the kernels registered: the kernels',
  );
  t.equal(setup({ precision: 'auto' }).precisionChoice.precision, 'highest', "CPU 'auto' without the kernels: highest");
  const cudaAuto = setup({ plugin: plugin('cuda'), precision: 'auto', weights: 'auto' });
  t.equal(cudaAuto.weightChoice.weightType, 'bf16', `CUDA weights 'auto': bf16 (${cudaAuto.weightChoice.reason})`);
  t.equal(cudaAuto.precisionChoice.precision, 'bf16', "CUDA 'auto': bf16");
  t.ok(
    /tensor cores/.test(cudaAuto.precisionChoice.reason),
    `with the profile's reason (${cudaAuto.precisionChoice.reason.slice(0, 40)}...)`,
  );
  // Not the plugin the cuDNN forms are pinned to: the StableHLO forms, and the load log says why.
  t.deepEqual(
    [cudaAuto.prefixAttention, cudaAuto.causalAttention],
    [{ kind: 'joint' }, { kind: 'square' }],
    'CUDA, unpinned plugin: joint and square',
  );
  t.ok(/pinned to/.test(cudaAuto.attentionNote), 'the note names the pinned plugin');
  t.deepEqual(
    cudaAuto.bf16,
    { matrices: 'bf16', products: true, matmulKernel: false, packedMatrices: [] },
    "CUDA bf16: bf16 matrices and products, no matmul kernel (the addon's kernels are the CPU's)",
  );
  const cudaHighest = setup({ plugin: plugin('cuda') });
  t.equal(cudaHighest.attentionNote, undefined, 'CUDA highest: no cuDNN note');
  t.deepEqual(
    cudaHighest.bf16,
    { matrices: null, products: false, matmulKernel: false, packedMatrices: [] },
    'f32 weights, f32 products',
  );
  t.equal(
    setup({ plugin: plugin('rocm'), precision: 'auto' }).precisionChoice.precision,
    'highest',
    "a platform with no profile, 'auto': highest",
  );
  t.end();
});

test('one setup decides the precision, the weight type and the packed matrices together: a bf16 checkpoint on an AVX-512 bf16 CPU', (t) => {
  const kernelPaths = {
    cpu: 'avx512bf16',
    tried: 'avx512bf16',
    allowed: 'avx512bf16',
    f32: 'avx512',
    bf16: 'avx512bf16',
  };
  const cpu = plugin('cpu', { prefixAttentionKernel: true });
  const half = setup({ plugin: cpu, kernelPaths, precision: 'auto', weights: 'auto', matrixType: 'bf16' });
  t.equal(half.precisionChoice.precision, 'bf16', `auto: ${half.precisionChoice.reason}`);
  t.equal(half.weightChoice.weightType, 'bf16', `weights auto: ${half.weightChoice.reason}`);
  t.equal(half.matmulKernel, 'bf16', 'the bf16 matmul kernel');
  t.deepEqual(
    [...half.bf16.packedMatrices].sort(),
    ['wDown', 'wGateUp', 'wO', 'wQkv'],
    'its four matrices packed at load',
  );
  t.equal(half.bf16.matrices, 'u16', 'the bf16 matrices typed as the platform types them');
  const quantized = setup({ plugin: cpu, kernelPaths, precision: 'auto', weights: 'auto', matrixType: 'quantized' });
  t.equal(
    quantized.precisionChoice.precision,
    'highest',
    `a quantized checkpoint: ${quantized.precisionChoice.reason}`,
  );
  t.equal(quantized.weightChoice.weightType, 'f32', 'f32 weights');
  t.equal(quantized.matmulKernel, 'f32', 'the f32 matmul kernel');
  t.deepEqual(quantized.bf16.packedMatrices, [], 'nothing packed as bf16 panels');
  t.deepEqual(
    [quantized.packed.for, [...quantized.packed.matrices].sort()],
    ['f32', ['wDown', 'wGateUp', 'wO', 'wQkv']],
    'its four matrices packed at load as f32 panels',
  );
  t.deepEqual(
    [half.packed.for, [...half.packed.matrices].sort()],
    ['bf16', ['wDown', 'wGateUp', 'wO', 'wQkv']],
    'the bf16 kernel: the same four as bf16 panels',
  );
  const asked = setup({ plugin: cpu, kernelPaths, precision: 'highest', weights: 'auto', matrixType: 'bf16' });
  t.deepEqual(
    [asked.weightChoice.weightType, asked.matmulKernel, asked.packed.for, [...asked.packed.matrices].sort()],
    ['bf16', 'f32', 'bf16', ['wDown', 'wGateUp', 'wO', 'wQkv']],
    'highest asked for a bf16 checkpoint: its bf16 weights, packed as bf16 pairs for the f32 kernel to widen',
  );
  const f32Asked = setup({ plugin: cpu, kernelPaths, precision: 'highest', weights: 'f32', matrixType: 'bf16' });
  t.deepEqual(
    [f32Asked.weightChoice.weightType, f32Asked.matmulKernel, f32Asked.packed.for],
    ['f32', 'f32', 'f32'],
    'f32 weights asked for: f32 panels',
  );
  const int8 = setup({ plugin: cpu, kernelPaths, precision: 'highest', weights: 'int8', matrixType: 'bf16' });
  t.deepEqual([int8.matmulKernel, int8.packed.matrices], [null, []], "int8 weights: XLA's dots, nothing packed");
  const noKernel = setup({
    plugin: plugin('cpu', { prefixAttentionKernel: false }),
    kernelPaths: null,
    precision: 'highest',
    weights: 'auto',
    matrixType: 'bf16',
  });
  t.equal(noKernel.weightChoice.weightType, 'f32', "no addon kernels: XLA's f32 dots, f32 weights");
  // The same class on an Intel CPU without AMX: bf16 dots do no more work a cycle than f32 ones there.
  const intel = setup({
    plugin: cpu,
    kernelPaths,
    precision: 'auto',
    weights: 'auto',
    matrixType: 'bf16',
    cpuVendor: 'GenuineIntel',
  });
  t.equal(intel.precisionChoice.precision, 'highest', `Intel, auto: ${intel.precisionChoice.reason}`);
  t.equal(intel.weightChoice.weightType, 'bf16', `the checkpoint's bf16 weights: ${intel.weightChoice.reason}`);
  t.equal(intel.matmulKernel, 'f32', 'the f32 kernel, widening them');
  // Gemma's GeGLU down projection goes through the kernel too (GeGLU its prologue): the checkpoint's bf16 kept.
  const gemma = setup({
    config: {
      ...config,
      gemma: { embeddingScale: 1, postNorms: false, attentionScale: 0.125, ropeThetaLocal: 10000 },
    },
    plugin: cpu,
    kernelPaths,
    precision: 'auto',
    weights: 'auto',
    matrixType: 'bf16',
    cpuVendor: 'GenuineIntel',
  });
  t.deepEqual(
    [gemma.weightChoice.weightType, gemma.matmulKernel, gemma.packed.for, [...gemma.packed.matrices].sort()],
    ['bf16', 'f32', 'bf16', ['wDown', 'wGateUp', 'wO', 'wQkv']],
    'Gemma there: its bf16 weights, all four matrices as bf16 pairs for the f32 kernel',
  );
  const intelBf16 = setup({
    plugin: cpu,
    kernelPaths,
    precision: 'bf16',
    weights: 'auto',
    matrixType: 'bf16',
    cpuVendor: 'GenuineIntel',
  });
  t.equal(intelBf16.matmulKernel, 'bf16', 'bf16 asked there: the bf16 kernel');
  t.end();
});

test('a load makes its decisions once: one setup, one read of the platform facts, one weight choice', async (t) => {
  const profiles = require('../dist/scoring/platform/profiles');
  const setupModule = require('../dist/scoring/setup');
  const choose = require('../dist/device-weights/choose');
  const counts = { platformFacts: 0, scorerSetup: 0, chooseWeightType: 0 };
  const wrap = (module, name) => {
    const original = module[name];
    module[name] = (...args) => {
      counts[name]++;
      return original(...args);
    };
    return () => (module[name] = original);
  };
  const restore = [wrap(profiles, 'platformFacts'), wrap(setupModule, 'scorerSetup'), wrap(choose, 'chooseWeightType')];
  const { Scorer } = require('../dist/scoring/scorer');
  let scorer;
  try {
    scorer = await Scorer.load({ diskCache: false });
  } finally {
    restore.forEach((undo) => undo());
  }
  t.deepEqual(
    counts,
    { platformFacts: 1, scorerSetup: 1, chooseWeightType: 1 },
    `calls during Scorer.load: ${JSON.stringify(counts)}`,
  );
  const r = await scorer.score({ query: [1, 2, 3], items: [[4], [5, 6]], labelTokenIds: [7] });
  t.equal(r.scores.length, 2, 'and the Scorer scores');
  scorer.dispose();
});

test('a model the fused forms cannot run gets the StableHLO forms, and a note', (t) => {
  const windowed = { ...config, slidingWindow: { window: 64, layers: new Array(config.numLayers).fill(true) } };
  const s = setup({ config: windowed, plugin: plugin('cpu', { prefixAttentionKernel: true }) });
  t.deepEqual(
    [s.prefixAttention.kind, s.causalAttention.kind],
    ['rows', 'chunked'],
    'kernels asked, StableHLO forms run',
  );
  t.ok(/sliding window of 64 on 30 of 30 layers/.test(s.attentionNote), `note: ${s.attentionNote}`);
  t.end();
});
