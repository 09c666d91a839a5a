'use strict';
// The precision option (docs/design.md "Platforms and precision"): by default every dot of every
// decoder program asks for HIGHEST (true f32 on every platform); 'default'
// asks for the platform's fast mode. On the CPU both compute f32, so the
// scores agree; the programs are different programs, compiled apart.
const test = require('tape');
const { decoderFused, decoderPrefill, decoderExtend } = require('../dist/hlo');
const { makeTinyModel } = require('./helpers/tiny-model');
const { Scorer } = require('../dist/scoring/scorer');
const { cpuIsa, withIsa, bf16Paths } = require('./helpers/kernel-path');
const { choosePrecision, BF16_DOT_ISAS, BF16_PAYS } = require('../dist/scoring/platform/precision-choice');

const config = makeTinyModel('qwen3').config;

/** Every dot_general line of the program text, and those carrying the precision. */
function dots(text, precision) {
  const lines = text.split('\n').filter((l) => l.includes('stablehlo.dot_general'));
  return { all: lines.length, marked: lines.filter((l) => l.includes(`#stablehlo<precision ${precision}>, #stablehlo<precision ${precision}>`)).length };
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
    const lines = build({ dotOperands: 'bf16' }).text.split('\n').filter((l) => l.includes('stablehlo.dot_general'));
    const bf16 = lines.filter((l) => /: \(tensor<[^>]*xbf16>, tensor<[^>]*xbf16>\) -> tensor<[^>]*xf32>/.test(l) && !l.includes('precision'));
    const table = new RegExp(`: \\(tensor<${V}x${Dm}xf32>, tensor<(\\d+)x${Dm}xf32>\\) -> tensor<${V}x(\\d+)xf32>`);
    const readouts = lines.filter((l) => table.test(l) && Number(table.exec(l)[1]) <= 16 && !l.includes('precision'));
    const name = build({}).name;
    t.ok(lines.length > 5 && bf16.length === lines.length - fewRowReadouts, `${name}: ${bf16.length} of ${lines.length} dots bf16 x bf16 -> f32`);
    t.equal(readouts.length, fewRowReadouts, `${name}: ${readouts.length} LM-head readout(s) of at most 16 rows read the f32 table as it is`);
  }
  t.end();
});

test('Scorer: highest by default; default on the CPU gives the same scores from other programs', async (t) => {
  await Scorer.load({ precision: 'fast' }).then(
    () => t.fail('an unknown precision must be refused'),
    (error) => t.match(error.message, /precision must be one of highest, default, bf16, auto/, 'an unknown precision is refused'),
  );
  const highest = await Scorer.load({ diskCache: false });
  const fast = await Scorer.load({ diskCache: false, precision: 'default' });
  const request = { query: 'Is the sky blue? Answer:', items: [' yes it is', ' no', ''], labelTokenIds: [9805, 787] };
  t.equal(highest.precision, 'highest', 'the default is highest');
  t.equal(highest.explain(request).precision, 'highest', 'explain() states it');
  t.equal(fast.explain(request).precision, 'default');
  const a = await highest.score(request);
  const b = await fast.score(request);
  let worst = 0;
  a.scores.forEach((row, i) => row.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - b.scores[i][j]) / Math.max(x, 1e-30)))));
  t.ok(worst <= 1e-5, `CPU: default precision within 1e-5 relative of highest (${worst.toExponential(2)})`);
  t.equal(highest.stats().jit.compiles + fast.stats().jit.compiles, 2, 'each compiled its own program');
  highest.dispose();
  fast.dispose();
});

test('Scorer: bf16 dots stay within the seeds\' gate of true f32 on the real model, every plan', async (t) => {
  const highest = await Scorer.load({ diskCache: false });
  const bf16 = await Scorer.load({ diskCache: false, precision: 'bf16' });
  t.equal(bf16.explain({ query: 'a', items: ['b'], labelTokenIds: [1] }).precision, 'bf16', 'explain() states it');
  const words = ' the a sky sea is blue green red yes no maybe'.split(' ');
  const items = Array.from({ length: 24 }, (_, i) => ` ${words[i % words.length]} ${words[(i * 7) % words.length]}`);
  const request = { query: 'Question: which colour is the sky on a clear day? Answer:', items, labelTokenIds: [9805, 787], applySoftmax: true };
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
    r.scores.forEach((row, i) => row.forEach((x, j) => {
      const d = Math.abs(x - reference.scores[i][j]);
      max = Math.max(max, d);
      sum += d;
    }));
    const mean = sum / (r.scores.length * 2);
    t.ok(max <= 0.02 && mean <= 0.01, `${algorithm} (${path ?? paths[paths.length - 1].path} attention): bf16 dots vs f32 max ${max.toExponential(2)} <= 0.02, mean ${mean.toExponential(2)} <= 0.01`);
  }
  highest.dispose();
  bf16.dispose();
});

/** The ratio and the two GFLOP/s figures an 'auto' reason states: bf16 then f32. */
function statedSpeeds(reason) {
  const m = /ran at (\d+\.\d\d)x .*\((\d+) against (\d+) GFLOP\/s/.exec(reason);
  return m ? { ratio: Number(m[1]), bf16: Number(m[2]), f32: Number(m[3]) } : null;
}

test("Scorer: precision 'auto' times bf16 against f32 dots where the kernels have bf16 dot units, and takes bf16 only where it measured at least BF16_PAYS x; highest elsewhere; explain() and the load log say why", async (t) => {
  let loaded;
  const auto = await Scorer.load({ diskCache: false, precision: 'auto', log: (e) => e.event === 'model_loaded' && (loaded = e) });
  const e = auto.explain({ query: 'a', items: ['b'], labelTokenIds: [1] });
  const units = BF16_DOT_ISAS.includes(e.attentionKernel.tried);
  if (units) {
    const speeds = statedSpeeds(e.precisionReason);
    t.ok(speeds, `the reason states both measured speeds: ${e.precisionReason}`);
    // The stated ratio is the measured one to 2 decimals, and the rounded GFLOP/s figures agree with it.
    t.ok(Math.abs(speeds.bf16 / speeds.f32 - speeds.ratio) <= 0.01 + 1 / speeds.f32, `the stated ratio ${speeds.ratio} is ${speeds.bf16} / ${speeds.f32}`);
    t.equal(e.precision, speeds.ratio >= BF16_PAYS ? 'bf16' : 'highest', `CPU ${cpuIsa}: bf16 at ${speeds.ratio.toFixed(2)}x f32 (pays from ${BF16_PAYS}x), auto runs ${e.precision}`);
  } else {
    t.equal(e.precision, 'highest', `CPU ${cpuIsa}: no bf16 dot units, auto runs highest`);
    t.match(e.precisionReason, /^auto: highest \(.*no bf16 dot units\)$/, `reason: ${e.precisionReason}`);
  }
  t.equal(e.attentionKernel.cpu, cpuIsa, 'explain() names the CPU class');
  t.equal(e.attentionKernel.used, e.precision === 'bf16' ? e.attentionKernel.bf16 : e.attentionKernel.f32, `and the kernel path used: ${e.attentionKernel.used}`);
  t.equal(loaded.precisionReason, e.precisionReason, 'the load log says the same');
  t.deepEqual(loaded.attentionKernel, e.attentionKernel, 'and names the same paths');
  auto.dispose();
});

test("choosePrecision: on a CPU with bf16 dot units 'auto' follows the measured speeds, never the flags", (t) => {
  const kernel = (tried) => ({ cpu: tried, tried, allowed: tried, f32: 'avx512', bf16: tried });
  const dots = (bf16Gflops, f32Gflops) => ({ shape: [2048, 576, 1536], bf16Gflops, f32Gflops, rounds: 7, source: 'measured', cores: 2 });
  // The Intel Xeon without AMX of docs/performance.md: bf16 dots at 0.6x f32.
  const xeon = choosePrecision('auto', 'cpu', kernel('avx512bf16'), dots(140, 234));
  t.equal(xeon.precision, 'highest', `bf16 slower than f32: ${xeon.reason}`);
  t.match(xeon.reason, /0\.60x .*140 against 234 GFLOP\/s/, 'the reason gives the ratio and both speeds');
  t.equal(choosePrecision('auto', 'cpu', kernel('amx'), dots(2820, 1480)).precision, 'bf16', 'AMX: bf16 at 1.9x');
  t.equal(choosePrecision('auto', 'cpu', kernel('avx512bf16'), dots(1.2 * 400, 400)).precision, 'bf16', '1.2x pays');
  t.equal(choosePrecision('auto', 'cpu', kernel('avx512bf16'), dots(1.1 * 400, 400)).precision, 'highest', '1.1x does not');
  // At the boundary the decision is the one the reason states: 169.4 / 147.6 = 1.1477 reads 1.15x and pays,
  // 168.9 / 147.6 = 1.1443 reads 1.14x and does not (the CI run that printed "1.15x ... auto runs highest").
  const edge = choosePrecision('auto', 'cpu', kernel('avx512bf16'), dots(169.4, 147.6));
  t.equal(edge.precision, 'bf16', `stated 1.15x pays: ${edge.reason}`);
  t.match(edge.reason, /ran at 1\.15x/, 'and says 1.15x');
  const below = choosePrecision('auto', 'cpu', kernel('avx512bf16'), dots(168.9, 147.6));
  t.equal(below.precision, 'highest', `stated 1.14x does not: ${below.reason}`);
  t.match(below.reason, /ran at 1\.14x/, 'and says 1.14x');
  t.equal(choosePrecision('auto', 'cpu', kernel('avx512bf16'), null).precision, 'highest', 'not measured: highest');
  t.equal(choosePrecision('auto', 'cpu', kernel('avx512'), dots(999, 1)).precision, 'highest', 'no bf16 dot units: highest whatever a figure says');
  const capped = { cpu: 'amx', tried: 'avx512', allowed: 'avx512', f32: 'avx512', bf16: 'f32 avx512', probeNote: 'avx512bf16 killed its probe process (SIGSEGV); the kernels run avx512' };
  const c = choosePrecision('auto', 'cpu', capped, dots(2820, 1480));
  t.equal(c.precision, 'highest', 'an untried bf16 path is never the default');
  t.match(c.reason, /killed its probe process/, `and the reason says why: ${c.reason}`);
  t.end();
});
