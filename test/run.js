#!/usr/bin/env node
'use strict';
// Runs every test/*.test.js file (or the files named on the command line) in
// its own Node process and ends with one summary line "N passed, N failed"
// (", N skipped" when a check or a test was skipped) so any reader can tell
// how the run went. A skip says a check could not run here; under CI
// (CI=true, as .ci/run runs) a skip where python3 and openssl exist is a
// failure: every check must run where CI runs. The one exception: a path for
// hardware this machine lacks, skipped as "hardware <name>: ..." by a file
// that HARDWARE_SKIPS allows it, is listed by name, never failed.
//
// Files run two at a time (PJRT_SCORE_TEST_JOBS, or --jobs N; 1 streams one
// file's TAP live): many files spend their time waiting on pip, npm, child
// services or the network, and the other lane uses the CPU meanwhile. With
// more than one lane a file's output is printed whole when it ends. No
// verdict depends on the lanes: each file is its own process, every port is
// chosen by the OS, and the cache's writers take locks or rename into place.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const here = __dirname;
const argv = process.argv.slice(2);
const jobsAt = argv.indexOf('--jobs');
const jobs = Math.max(
  1,
  Number(
    jobsAt >= 0
      ? argv.splice(jobsAt, 2)[1]
      : process.env.PJRT_SCORE_TEST_JOBS || Math.min(2, os.availableParallelism()),
  ) || 1,
);
// Files that mostly wait (pip and npm installs, fleets of child processes) start first, so the
// run does not end on one of them with the other lane idle.
const WAIT_HEAVY = [
  'fleet-smg',
  'model-rope',
  'compat-clients',
  'rerank-reference',
  'ai-sdk-versions',
  'package',
  'hub',
];
// `--unit` (npm run test:unit): the fast lane, files that fetch nothing past what npm install did (no pip
// install, no hub, no child services) and finish in seconds each; under 2 minutes in all on 2 cores.
const UNIT = [
  'admission',
  'batch-plan',
  'docs-options',
  'docs-performance',
  'fuzz-regressions',
  'hlo-builder',
  'hlo-ops',
  'jit-cache',
  'json-floats',
  'lm-head',
  'model-gguf',
  'model-gguf-split',
  'model-tokenizer',
  'model-tokenizer-spm',
  'platform-defaults',
  'public-api',
  'rooms',
  'runtime-envelope',
  'runtime-errors',
  'runtime-nesting',
  'scorer-setup',
  'scoring-buckets',
  'scoring-packing',
  'scoring-request',
  'scoring-scores',
  'scoring-selector',
  'scripts-layout',
  'serve-options',
  'weights-choose',
];
const unitAt = argv.indexOf('--unit');
if (unitAt >= 0) argv.splice(unitAt, 1, ...UNIT.map((name) => path.join(here, `${name}.test.js`)));
const files = argv.length
  ? argv.map((f) => path.resolve(f))
  : fs
      .readdirSync(here)
      .filter((f) => f.endsWith('.test.js'))
      .sort()
      .map((f) => path.join(here, f));
const startOrder = (file) => {
  const i = WAIT_HEAVY.indexOf(path.basename(file, '.test.js'));
  return i < 0 ? WAIT_HEAVY.length : i;
};

function runOne(file) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, ['--expose-gc', file], {
      stdio: ['ignore', 'pipe', jobs > 1 ? 'pipe' : 'inherit'],
    });
    const held = [];
    if (jobs > 1) child.stderr.on('data', (chunk) => held.push(chunk));
    let pass = 0;
    let fail = 0;
    const skips = [];
    let buffered = '';
    child.stdout.on('data', (chunk) => {
      if (jobs > 1) held.push(chunk);
      else process.stdout.write(chunk);
      buffered += chunk.toString('utf8');
      let nl;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (/^ok \d+.*# SKIP/.test(line)) skips.push(line.replace(/^ok \d+ /, ''));
        else if (/^# SKIP /.test(line)) skips.push(line.slice(2));
        else if (/^ok \d+/.test(line)) pass++;
        else if (/^not ok \d+/.test(line)) fail++;
      }
    });
    child.on('close', (code, signal) => {
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      if ((code !== 0 || signal) && fail === 0) fail++; // a crash or exit counts as a failure
      if (jobs > 1)
        process.stdout.write(`\n# ==== ${path.relative(process.cwd(), file)}\n${Buffer.concat(held).toString('utf8')}`);
      resolve({ file: path.relative(process.cwd(), file), pass, fail, skips, code, signal, seconds });
    });
  });
}

(async () => {
  const queue = [...files].sort((a, b) => startOrder(a) - startOrder(b));
  const byFile = new Map();
  const lane = async () => {
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
      if (jobs === 1) console.log(`\n# ==== ${path.relative(process.cwd(), file)}`);
      byFile.set(file, await runOne(file));
    }
  };
  const started = Date.now();
  await Promise.all(Array.from({ length: Math.min(jobs, files.length) }, lane));
  const results = files.map((f) => byFile.get(f));
  console.log('\n# ==== summary');
  for (const r of results) {
    const status = r.fail ? 'FAIL' : 'ok  ';
    const skipped = r.skips.length ? `, ${r.skips.length} skipped` : '';
    console.log(
      `# ${status} ${r.file}: ${r.pass} passed, ${r.fail} failed${skipped} (${r.seconds}s${r.signal ? `, signal ${r.signal}` : ''})`,
    );
  }
  const pass = results.reduce((a, r) => a + r.pass, 0);
  let fail = results.reduce((a, r) => a + r.fail, 0);
  const all = results.flatMap((r) =>
    r.skips.map((s) => ({ file: r.file, text: s, hardware: hardwareSkip(r.file, s) })),
  );
  const hardware = all.filter((s) => s.hardware);
  const skips = all.filter((s) => !s.hardware).map((s) => `${s.file}: ${s.text}`);
  if (hardware.length) {
    console.log('# hardware paths not run on this machine (allowed: HARDWARE_SKIPS):');
    for (const s of hardware) console.log(`#   ${s.file} [${s.hardware}]: ${s.text}`);
  }
  if (skips.length) {
    console.log('# skipped:');
    for (const s of skips) console.log(`#   ${s}`);
    if (process.env.CI && has('python3') && has('openssl')) {
      console.log(
        `# FAIL: ${skips.length} skipped under CI where python3 and openssl exist: every check must run here`,
      );
      fail += skips.length;
    }
  }
  console.log(`# ${files.length} files in ${((Date.now() - started) / 1000).toFixed(1)} s, ${jobs} at a time`);
  console.log(`${pass} passed, ${fail} failed${all.length ? `, ${all.length} skipped` : ''}`);
  process.exit(fail === 0 && pass > 0 ? 0 : 1);
})();

/**
 * The skips a machine without some hardware may report, by test file and hardware: a test skips such a
 * path with a message "hardware <name>: ...". They are printed, never failed; any other skip fails under CI.
 */
const HARDWARE_SKIPS = {
  'test/amx-disassembly.test.js': ['x64'],
  'test/attention-bf16-self-check.test.js': ['amx'],
  'test/kernel-probe.test.js': ['avx2'],
};

/** The hardware a skip names where its file may skip for it (HARDWARE_SKIPS), else null. */
function hardwareSkip(file, text) {
  const m = /^hardware ([a-z0-9]+):/.exec(text);
  const allowed = HARDWARE_SKIPS[file.split(path.sep).join('/')];
  return m && allowed && allowed.includes(m[1]) ? m[1] : null;
}

/** Whether `command` runs here (`command --version` or `command version` exits 0). */
function has(command) {
  const { spawnSync } = require('node:child_process');
  return [['--version'], ['version']].some((args) => spawnSync(command, args, { stdio: 'ignore' }).status === 0);
}
