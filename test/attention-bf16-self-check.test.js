'use strict';
// The bf16 tile paths' self-check (native/kernels/bf16_tiles_check.h, run once per
// process before a matrix-unit path's first use by native/kernels/bf16_tiles_gate.h):
// the real tiles of this CPU agree with the portable tiles; a deliberately
// wrong product (pairs of b swapped: test-swapped-pairs) is caught; and in a
// process where this CPU's matrix-unit path is made to fail its check
// (PJRT_SCORE_TILES_CHECK_WRONG), dispatch falls back (AMX to AVX512_BF16,
// AVX512_BF16 to the f32 kernel), says which and why (attentionKernelPaths'
// bf16Note, what explain().attentionKernel and the load log carry) and a
// bf16 kernel call runs the fallback: on an f32 fallback within 1e-5 of the
// float64 reference, where the bf16 tiles are only within the bf16 gate.
const test = require('tape');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { binding } = require('../dist/runtime/binding');
const { attentionKernelPaths, KERNEL_ISAS } = require('../dist/runtime');
const { cpuIsa, withIsa } = require('./helpers/kernel-path');

const order = (isa) => KERNEL_ISAS.indexOf(isa);
// This CPU's matrix-unit tile paths (each gated by its self-check).
const matrixPaths = ['avx512bf16', 'amx'].filter((p) => order(cpuIsa) >= order(p));

test('self-check: the portable tiles and every matrix-unit path of this CPU agree with the portable tiles', (t) => {
  for (const p of ['portable', ...matrixPaths]) {
    const r = binding().checkBf16Tiles(p);
    t.equal(r.ok, true, `${p}: ${r.detail}`);
    t.match(r.detail, /^agrees with portable: .*Round exact$/, `${p}: the verdict says what was compared`);
  }
  if (!matrixPaths.includes('amx'))
    t.skip(`hardware amx: CPU ${cpuIsa} has no AMX; the amx tiles' self-check did not run`);
  t.end();
});

test('self-check: a wrong tile product (the pairs of b swapped) is caught, and says where', (t) => {
  const r = binding().checkBf16Tiles('test-swapped-pairs');
  t.equal(r.ok, false, `caught: ${r.detail}`);
  t.match(
    r.detail,
    /^failed its self-check against portable: Dot depth \d+ lda \d+( accumulating)?: c\[\d+\]\[\d+\] is \S+, portable \S+ \(limit \S+\)$/,
    'the first result out of its limit',
  );
  t.throws(
    () => binding().checkBf16Tiles('sse9'),
    /no bf16 tile path 'sse9' on this CPU/,
    'an unknown path is an error',
  );
  if (!matrixPaths.includes('amx'))
    t.throws(
      () => binding().checkBf16Tiles('amx'),
      /no bf16 tile path 'amx' on this CPU/,
      'a path this CPU lacks is an error, not a fault',
    );
  t.throws(() => binding().checkBf16Tiles(3), TypeError, 'a non-string is a TypeError');
  t.end();
});

test('dispatch: a path that passed its check is taken under its own name, with no note', async (t) => {
  for (const isa of KERNEL_ISAS.slice(0, order(cpuIsa) + 1)) {
    const p = await withIsa(isa, () => attentionKernelPaths(64));
    if (matrixPaths.includes(isa)) t.equal(p.bf16, isa, `cap ${isa}: bf16 path ${p.bf16}`);
    t.equal(p.bf16Note, undefined, `cap ${isa}: no fallback note`);
  }
  t.end();
});

// In a child process (the verdict is once per process): this CPU's best matrix-unit path made to
// fail, the paths, the choice explain() reports for precision bf16, and one bf16 kernel call's
// largest difference from the float64 reference.
const CHILD = `
const { Client, attentionKernelPaths } = require('./dist/runtime');
const { attentionKernelChoice } = require('./dist/scoring/platform/precision-choice');
const { buildProgram, itemsOverPrefix, parsePrefixAttentionTag } = require('./dist/hlo');
const { runProgram } = require('./test/helpers/run-program');
const { makeInputs, prefixParams, reference } = require('./test/helpers/prefix-forms');
const ref = require('./test/helpers/attention-reference');
(async () => {
  const c = ${JSON.stringify({ P: 40, prefixLength: 37, N: 3, L: 4, itemLengths: [4, 2, 3], Hq: 4, Hkv: 2, D: 64 })};
  const prog = buildProgram('items_over_prefix_bf16', (f) => ({ out: itemsOverPrefix(f, prefixParams(f, c), parsePrefixAttentionTag('ffi')) }), { dotOperands: 'bf16' });
  const inputs = makeInputs(31, c);
  const client = await Client.create();
  const [out] = await runProgram(client, prog, inputs);
  client.dispose();
  const paths = attentionKernelPaths(64);
  console.log(JSON.stringify({ paths, choice: attentionKernelChoice(paths, 'bf16'), diff: ref.maxAbsDiff(out, reference(c, inputs)) }));
})();
`;

function runChild(wrong) {
  const run = spawnSync(process.execPath, ['-e', CHILD], {
    cwd: path.join(__dirname, '..'),
    env: { ...process.env, PJRT_SCORE_TILES_CHECK_WRONG: wrong },
    encoding: 'utf8',
    timeout: 300_000,
  });
  if (run.status !== 0) throw new Error(`child exited ${run.status}: ${run.stderr}`);
  return JSON.parse(run.stdout.trim().split('\n').pop());
}

test("fallback: this CPU's best matrix-unit path made to fail its check is not taken; the note says which, why and what runs", (t) => {
  const best = matrixPaths[matrixPaths.length - 1];
  const normal = attentionKernelPaths(64);
  const { paths, choice, diff } = runChild(best ?? 'avx512bf16');
  if (best === undefined) {
    t.deepEqual(
      paths,
      normal,
      `CPU ${cpuIsa}: no matrix-unit path, so nothing to fail: the same paths (${paths.bf16})`,
    );
    t.ok(diff <= 0.02, `a bf16 call on ${paths.bf16}: max ${diff.toExponential(2)} from float64`);
    t.end();
    return;
  }
  const fallback = best === 'amx' ? 'avx512bf16' : `f32 ${normal.f32}`;
  t.equal(paths.bf16, fallback, `${best} failed: bf16 path ${paths.bf16}`);
  t.match(
    paths.bf16Note,
    new RegExp(`^${best} failed its self-check against portable: Dot depth .*; using ${fallback}$`),
    `note: ${paths.bf16Note}`,
  );
  t.equal(choice.used, fallback, 'explain() and the load log: the path used is the fallback');
  t.equal(choice.bf16Note, paths.bf16Note, 'and carry the note');
  t.equal(paths.cpu, cpuIsa, 'the CPU class is unchanged');
  if (fallback.startsWith('f32'))
    t.ok(diff <= 1e-5, `a bf16 kernel call ran the f32 kernel: max ${diff.toExponential(2)} from float64 <= 1e-5`);
  else t.ok(diff <= 0.02, `a bf16 kernel call on ${fallback}: max ${diff.toExponential(2)} from float64 <= 0.02`);
  t.end();
});
