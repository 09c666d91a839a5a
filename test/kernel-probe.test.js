'use strict';
// Kernel paths are tried in a child first (docs/design.md): no instruction
// set's kernel runs in this process before a child process ran its trial
// (native/kernels/kernel_probe.h, lib/runtime/kernel-probe.ts). A forced fault in the
// child's trial (PJRT_SCORE_KERNEL_PROBE_FAULT, a store to an unmapped
// address: what a rejected tile configuration ends in too) leaves the process
// alive, caps the kernels below the faulting path, and says so in
// attentionKernelPaths, explain() and the load log; the scores then are
// exactly those of the path below, run with PJRT_SCORE_KERNEL_ISA (the same
// compiled program and kernel: bit for bit).
const test = require('tape');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { attentionKernelPaths, KERNEL_ISAS } = require('../dist/runtime');
const { binding } = require('../dist/runtime/binding');
const { cacheDir } = require('../dist/util/cache-dir');

const root = path.join(__dirname, '..');
const order = (isa) => KERNEL_ISAS.indexOf(isa);
const here = attentionKernelPaths(64);
const cpu = here.cpu;

/** A child that loads a Scorer in `precision`, scores one request, and prints what it saw as JSON. */
const CHILD = `
const { Scorer } = require('./dist');
(async () => {
  let loaded;
  const scorer = await Scorer.load({ diskCache: false, precision: process.argv[1], log: (e) => e.event === 'model_loaded' && (loaded = e) });
  const request = { query: 'Is the sky blue on a clear day?', items: [' yes', ' no, it is green', ' maybe'], labelTokenIds: [9805, 787] };
  const result = await scorer.score(request);
  const explained = scorer.explain(request);
  console.log(JSON.stringify({ explained: explained.attentionKernel, logged: loaded.attentionKernel, scores: result.scores }));
  scorer.dispose();
})().catch((e) => { console.error(e); process.exit(3); });
`;

function runChild(precision, env) {
  const childEnv = { ...process.env, ...env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete childEnv[k];
  const r = spawnSync(process.execPath, ['-e', CHILD, precision], {
    cwd: root,
    env: childEnv,
    encoding: 'utf8',
    timeout: 240_000,
  });
  const line = (r.stdout || '').split('\n').find((l) => l.startsWith('{'));
  return { status: r.status, signal: r.signal, stderr: r.stderr, out: line ? JSON.parse(line) : null };
}

function verdictFiles() {
  const dir = path.join(cacheDir(), 'kernel-probe');
  return fs.existsSync(dir)
    ? fs
        .readdirSync(dir)
        .filter((f) => f.endsWith('.json'))
        .map((f) => path.join(dir, f))
    : [];
}

test('this process: every path this CPU has passed its trial in a child, and the kernels may take them all', (t) => {
  t.equal(here.tried, cpu, `CPU ${cpu}: tried up to ${here.tried}`);
  t.equal(here.probeNote, undefined, 'no path was capped');
  t.equal(binding().kernelIsas().tried, cpu, 'the addon holds the same ceiling');
  if (cpu === 'portable') {
    t.skip('hardware avx2: a CPU with the portable loops only: nothing to try');
  } else {
    const files = verdictFiles()
      .map((f) => JSON.parse(fs.readFileSync(f, 'utf8')).value)
      .filter(Boolean); // records of older formats hold none
    const mine = files.find((v) => v.cpu === cpu && v.tried === cpu);
    t.ok(mine, `the verdict is kept in ${path.join(cacheDir(), 'kernel-probe')}`);
    t.deepEqual(
      mine.trials.map((x) => x.isa),
      KERNEL_ISAS.slice(1, order(cpu) + 1),
      `trials in order: ${mine.trials.map((x) => x.isa).join(', ')}`,
    );
    t.ok(
      mine.trials.every((x) => x.ok && /against portable/.test(x.detail)),
      'each agreed with the portable loops',
    );
  }
  t.end();
});

test('the trial runs only in the probe child: in this process it refuses and runs nothing', (t) => {
  const r = binding().probeKernelIsa('portable');
  t.equal(r.ok, false, 'refused');
  t.match(r.detail, /only in the probe's child process/, r.detail);
  t.throws(() => binding().probeKernelIsa('sse9'), /unknown instruction set 'sse9'/, 'an unknown name is a TypeError');
  t.throws(() => binding().setTriedKernelIsa(3), /setTriedKernelIsa\(isa: string\)/, 'so is a non-string');
  t.end();
});

const faulted = cpu === 'portable' ? [] : [cpu, 'avx2'].filter((isa, i, all) => all.indexOf(isa) === i);
if (faulted.length === 0) {
  test('a CPU with the portable loops only: no path to fault', (t) => {
    t.equal(cpu, 'portable');
    t.end();
  });
}
for (const isa of faulted) {
  const below = KERNEL_ISAS[order(isa) - 1];
  test(`a forced fault in the ${isa} trial: the process lives, the kernels run ${below}, and explain() and the load log say why`, (t) => {
    const before = verdictFiles().map((f) => [f, fs.readFileSync(f, 'utf8')]);
    const run = runChild('bf16', { PJRT_SCORE_KERNEL_PROBE_FAULT: isa, PJRT_SCORE_KERNEL_ISA: undefined });
    t.equal(
      run.status,
      0,
      `the scoring process exited 0 (signal ${run.signal})${run.status ? `: ${run.stderr.slice(-400)}` : ''}`,
    );
    const { explained, logged, scores } = run.out;
    t.equal(explained.tried, below, `tried: ${explained.tried}`);
    t.equal(explained.allowed, below, `the kernels take ${explained.allowed}`);
    t.match(
      explained.probeNote,
      new RegExp(`^${isa} killed its probe process \\(SIGSEGV\\); the kernels run ${below}$`),
      `explain(): ${explained.probeNote}`,
    );
    t.deepEqual(logged, explained, 'the load log says the same');
    const reference = runChild('bf16', { PJRT_SCORE_KERNEL_ISA: below, PJRT_SCORE_KERNEL_PROBE_FAULT: undefined });
    t.equal(reference.status, 0, `the reference run (PJRT_SCORE_KERNEL_ISA=${below}) exited 0`);
    t.equal(reference.out.explained.used, explained.used, `both ran the ${explained.used} kernel path`);
    t.deepEqual(
      scores,
      reference.out.scores,
      `scores bit for bit those of ${below} (${scores.map((r) => r.map((x) => x.toFixed(4)).join('/')).join(' ')})`,
    );
    const after = verdictFiles().map((f) => [f, fs.readFileSync(f, 'utf8')]);
    t.deepEqual(after, before, 'a forced fault neither reads nor writes the verdicts on disk');
    t.end();
  });
}

test('a forced fault under the default precision: the default never reaches the untried path', (t) => {
  if (cpu === 'portable') {
    t.skip('hardware avx2: nothing above portable to fault');
    return t.end();
  }
  const run = runChild('highest', { PJRT_SCORE_KERNEL_PROBE_FAULT: 'avx2', PJRT_SCORE_KERNEL_ISA: undefined });
  t.equal(run.status, 0, 'exited 0');
  t.equal(run.out.explained.used, 'portable', `f32 calls take ${run.out.explained.used}`);
  t.end();
});
