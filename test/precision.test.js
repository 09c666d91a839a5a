'use strict';
// The precision option (docs/design.md "Platforms and precision"): 'highest' makes every dot of every
// decoder program ask for HIGHEST (true f32 on every platform); 'default'
// asks for the platform's fast mode. On the CPU both compute f32, so the
// scores agree; the programs are different programs, compiled apart.
const test = require('tape');
const { decoderFused, decoderPrefill, decoderExtend } = require('../dist/hlo');
const { makeTinyModel, writeTinyHfDir } = require('./helpers/tiny-model');
const { Scorer } = require('../dist/scoring/scorer');
const { cpuIsa, withIsa, bf16Paths } = require('./helpers/kernel-path');
const { choosePrecision, BF16_DOT_ISAS } = require('../dist/scoring/platform/precision-choice');
const { platformFacts } = require('../dist/scoring/platform');
const { hostCpu } = require('../dist/runtime/host-cpu');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const config = makeTinyModel('qwen3').config;

/** Every dot_general line of the program text, and those carrying the precision. */
function dots(text, precision) {
  const lines = text.split('\n').filter((l) => l.includes('stablehlo.dot_general'));
  return {
    all: lines.length,
    marked: lines.filter((l) => l.includes(`#stablehlo<precision ${precision}>, #stablehlo<precision ${precision}>`))
      .length,
  };
}

test('program text: every dot carries the asked precision', (t) => {
  // Each builder with its LM-head readouts of at most 16 rows (a fused pass reads the query's last row and
  // the items' in one product; a prefill the query's; an extend the items'): under bf16 dots those read
  // the f32 table as it is (lib/hlo/nn/lm-head.ts).
  const builders = [
    [(o) => decoderFused(config, { prefix: 8, items: 2, itemLength: 4, labels: 2 }, o), 1],
    [(o) => decoderFused(config, { prefix: 8, items: 17, itemLength: 4, labels: 2 }, o), 0],
    [(o) => decoderPrefill(config, { prefix: 8, labels: 2 }, o), 1],
    [(o) => decoderExtend(config, { prefix: 8, items: 2, itemLength: 4, labels: 2 }, o), 1],
    [(o) => decoderExtend(config, { prefix: 8, items: 17, itemLength: 4, labels: 2 }, o), 0],
  ];
  const V = config.vocabSize;
  const Dm = config.hiddenSize;
  for (const [build, fewRowReadouts] of builders) {
    for (const p of ['HIGHEST', 'DEFAULT']) {
      const d = dots(build({ dotPrecision: p }).text, p);
      t.ok(d.all > 5 && d.marked === d.all, `${build({}).name}: ${d.marked} of ${d.all} dots ${p}`);
    }
    t.equal(dots(build({}).text, 'HIGHEST').marked, 0, 'no option: no attribute');
    // bf16 dots: both operands bf16, the product f32, no precision attribute; the few-row readouts: the f32
    // table [V, Dm] against the rows [K, Dm], K <= 16, in f32.
    const lines = build({ dotOperands: 'bf16' })
      .text.split('\n')
      .filter((l) => l.includes('stablehlo.dot_general'));
    const bf16 = lines.filter(
      (l) => /: \(tensor<[^>]*xbf16>, tensor<[^>]*xbf16>\) -> tensor<[^>]*xf32>/.test(l) && !l.includes('precision'),
    );
    const table = new RegExp(`: \\(tensor<${V}x${Dm}xf32>, tensor<(\\d+)x${Dm}xf32>\\) -> tensor<${V}x(\\d+)xf32>`);
    const readouts = lines.filter((l) => table.test(l) && Number(table.exec(l)[1]) <= 16 && !l.includes('precision'));
    const name = build({}).name;
    t.ok(
      lines.length > 5 && bf16.length === lines.length - fewRowReadouts,
      `${name}: ${bf16.length} of ${lines.length} dots bf16 x bf16 -> f32`,
    );
    t.equal(
      readouts.length,
      fewRowReadouts,
      `${name}: ${readouts.length} LM-head readout(s) of at most 16 rows read the f32 table as it is`,
    );
  }
  t.end();
});

test('Scorer: the default model in highest by default; default on the CPU gives the same scores from other programs', async (t) => {
  await Scorer.load({ precision: 'fast' }).then(
    () => t.fail('an unknown precision must be refused'),
    (error) =>
      t.match(
        error.message,
        /precision must be one of highest, default, bf16, auto/,
        'an unknown precision is refused',
      ),
  );
  const highest = await Scorer.load({ diskCache: false });
  const fast = await Scorer.load({ diskCache: false, precision: 'default' });
  const request = { query: 'Is the sky blue? Answer:', items: [' yes it is', ' no', ''], labelTokenIds: [9805, 787] };
  t.equal(highest.precision, 'highest', "the default ('auto') runs the default model (quantized) in true f32");
  t.equal(highest.explain(request).precision, 'highest', 'explain() states it');
  t.equal(fast.explain(request).precision, 'default');
  const a = await highest.score(request);
  const b = await fast.score(request);
  let worst = 0;
  a.scores.forEach((row, i) =>
    row.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - b.scores[i][j]) / Math.max(x, 1e-30)))),
  );
  t.ok(worst <= 1e-5, `CPU: default precision within 1e-5 relative of highest (${worst.toExponential(2)})`);
  t.equal(highest.stats().jit.compiles + fast.stats().jit.compiles, 2, 'each compiled its own program');
  highest.dispose();
  fast.dispose();
});

test("Scorer: bf16 dots stay within the seeds' gate of true f32 on the real model, every plan", async (t) => {
  const highest = await Scorer.load({ diskCache: false });
  const bf16 = await Scorer.load({ diskCache: false, precision: 'bf16' });
  t.equal(bf16.explain({ query: 'a', items: ['b'], labelTokenIds: [1] }).precision, 'bf16', 'explain() states it');
  const words = ' the a sky sea is blue green red yes no maybe'.split(' ');
  const items = Array.from({ length: 24 }, (_, i) => ` ${words[i % words.length]} ${words[(i * 7) % words.length]}`);
  const request = {
    query: 'Question: which colour is the sky on a clear day? Answer:',
    items,
    labelTokenIds: [9805, 787],
    applySoftmax: true,
  };
  const reference = await highest.score({ ...request, algorithm: 'serial' });
  // Every plan on the CPU's best bf16 attention path (native/kernels/prefix_attention_bf16.cc: AMX or AVX512_BF16
  // tiles, else the f32 kernel); the prefix plan also on each other matrix-unit path this CPU has. The
  // portable tiles are checked against the float64 reference in test/attention-bf16-ffi.test.js.
  const paths = bf16Paths();
  const others = paths.slice(0, -1).filter(({ path }) => ['amx', 'avx512bf16'].includes(path));
  const runs = [['serial'], ['packed'], ['prefix'], ...others.map(({ isa, path }) => ['prefix', isa, path])];
  for (const [algorithm, isa, path] of runs) {
    const r = await withIsa(isa ?? null, () => bf16.score({ ...request, algorithm }));
    let max = 0;
    let sum = 0;
    r.scores.forEach((row, i) =>
      row.forEach((x, j) => {
        const d = Math.abs(x - reference.scores[i][j]);
        max = Math.max(max, d);
        sum += d;
      }),
    );
    const mean = sum / (r.scores.length * 2);
    t.ok(
      max <= 0.02 && mean <= 0.01,
      `${algorithm} (${path ?? paths[paths.length - 1].path} attention): bf16 dots vs f32 max ${max.toExponential(2)} <= 0.02, mean ${mean.toExponential(2)} <= 0.01`,
    );
  }
  highest.dispose();
  bf16.dispose();
});

/** Whether 'auto' runs bf16 here for a 16-bit checkpoint: the kernels' path has bf16 dot units and the class measured them to pay. */
function autoBf16Here(kernel) {
  return (
    BF16_DOT_ISAS.includes(kernel.allowed) &&
    platformFacts('cpu', kernel.tried, hostCpu().vendor ?? null).autoPrecision.rule === 'bf16-checkpoints'
  );
}

test("Scorer: by default (precision 'auto') a bf16 checkpoint runs in bf16 where this CPU's class has bf16 dot units that pay, its weights kept bf16; a quantized one in true f32; explain() and the load log say why", async (t) => {
  let loaded;
  const quantized = await Scorer.load({ diskCache: false, log: (e) => e.event === 'model_loaded' && (loaded = e) });
  const e = quantized.explain({ query: 'a', items: ['b'], labelTokenIds: [1] });
  const bf16Here = autoBf16Here(e.attentionKernel);
  t.equal(e.precision, 'highest', `the default model (GGUF Q4_1) on a ${cpuIsa} CPU: ${e.precisionReason}`);
  t.match(
    e.precisionReason,
    bf16Here ? /^auto: highest \(the checkpoint stores its matrices as quantized/ : /^auto: highest \(/,
    'and says why',
  );
  t.equal(e.attentionKernel.cpu, cpuIsa, 'explain() names the CPU class');
  t.equal(e.attentionKernel.used, e.attentionKernel.f32, `and the kernel path used: ${e.attentionKernel.used}`);
  t.equal(loaded.precisionReason, e.precisionReason, 'the load log says the same');
  t.deepEqual(loaded.attentionKernel, e.attentionKernel, 'and names the same paths');
  quantized.dispose();

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-auto-'));
  try {
    writeTinyHfDir(makeTinyModel('qwen3'), dir, { dtype: 'BF16' });
    const half = await Scorer.load({
      model: dir,
      diskCache: false,
      log: (ev) => ev.event === 'model_loaded' && (loaded = ev),
    });
    const h = half.explain({ query: [5, 6, 7], items: [[8, 9]], labelTokenIds: [1] });
    t.equal(h.precision, bf16Here ? 'bf16' : 'highest', `a bf16 checkpoint on a ${cpuIsa} CPU: ${h.precisionReason}`);
    if (bf16Here) t.match(h.precisionReason, /^auto: bf16 \(a bf16 checkpoint/, 'the reason names the checkpoint');
    t.equal(
      loaded.weights,
      // Either matmul kernel reads a bf16 checkpoint's bits (the f32 one widening them); XLA's f32 dots take f32.
      loaded.matmulKernel !== null ? 'bf16' : 'f32',
      `its weights: ${loaded.weights} (${loaded.weightsReason})`,
    );
    const r = await half.score({ query: [5, 6, 7], items: [[8, 9], [10]], labelTokenIds: [1, 2], applySoftmax: true });
    t.ok(
      r.scores.every((row) => Math.abs(row[0] + row[1] - 1) < 1e-6),
      'and it scores',
    );
    half.dispose();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("choosePrecision: 'auto' follows the platform's facts and the checkpoint's stored type, never a timing", (t) => {
  const kernel = (tried) => ({ cpu: tried, tried, allowed: tried, f32: 'avx512', bf16: tried });
  const zen4 = kernel('avx512bf16');
  for (const type of ['bf16', 'f16']) {
    const c = choosePrecision('auto', 'cpu', zen4, type);
    t.equal(c.precision, 'bf16', `a ${type} checkpoint on an AVX-512 bf16 CPU: ${c.reason}`);
  }
  for (const type of ['f32', 'quantized']) {
    const c = choosePrecision('auto', 'cpu', zen4, type);
    t.equal(c.precision, 'highest', `a ${type} checkpoint there: ${c.reason}`);
    t.match(c.reason, new RegExp(`stores its matrices as ${type}`), 'the reason names the stored type');
  }
  const intel = choosePrecision('auto', 'cpu', zen4, 'bf16', 'GenuineIntel');
  t.equal(intel.precision, 'highest', `a bf16 checkpoint on an Intel AVX-512 bf16 CPU without AMX: ${intel.reason}`);
  t.match(intel.reason, /Intel/, 'the reason names the vendor');
  t.equal(choosePrecision('auto', 'cpu', zen4, 'bf16', 'AuthenticAMD').precision, 'bf16', 'an AMD one: bf16');
  const amx = choosePrecision('auto', 'cpu', kernel('amx'), 'bf16');
  t.equal(amx.precision, 'highest', `the AMX class, not measured: ${amx.reason}`);
  t.match(amx.reason, /not measured/, 'says so');
  t.equal(choosePrecision('auto', 'cpu', kernel('avx512'), 'bf16').precision, 'highest', 'no bf16 dot units: highest');
  t.equal(choosePrecision('auto', 'cpu', null, 'bf16').precision, 'highest', 'without the kernels: highest');
  const capped = {
    cpu: 'avx512bf16',
    tried: 'avx512',
    allowed: 'avx512',
    f32: 'avx512',
    bf16: 'f32 avx512',
    probeNote: 'avx512bf16 killed its probe process (SIGSEGV); the kernels run avx512',
  };
  const c = choosePrecision('auto', 'cpu', capped, 'bf16');
  t.equal(c.precision, 'highest', 'an untried bf16 path is never the default');
  t.match(c.reason, /killed its probe process/, `and the reason says why: ${c.reason}`);
  for (const type of ['bf16', 'f32', 'quantized'])
    t.equal(choosePrecision('auto', 'cuda', null, type).precision, 'bf16', `cuda: bf16 for a ${type} checkpoint`);
  for (const asked of ['highest', 'default', 'bf16'])
    t.equal(choosePrecision(asked, 'cpu', zen4, 'quantized').precision, asked, `${asked} as asked`);
  t.end();
});
