#!/usr/bin/env node
'use strict';
// Runs every test/*.test.js file (or the files named on the command line) in
// its own Node process, streams the TAP output, and ends with one summary line
// "N passed, N failed" (", N skipped" when a check or a test was skipped) so
// any reader can tell how the run went. A skip says a check could not run
// here; under CI (CI=true, as .ci/run runs) a skip where python3 and openssl
// exist is a failure: every check must run where CI runs.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const here = __dirname;
const files = process.argv.slice(2).length
  ? process.argv.slice(2).map((f) => path.resolve(f))
  : fs
      .readdirSync(here)
      .filter((f) => f.endsWith('.test.js'))
      .sort()
      .map((f) => path.join(here, f));

function runOne(file) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, ['--expose-gc', file], { stdio: ['ignore', 'pipe', 'inherit'] });
    let pass = 0;
    let fail = 0;
    const skips = [];
    let buffered = '';
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk);
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
      resolve({ file: path.relative(process.cwd(), file), pass, fail, skips, code, signal, seconds });
    });
  });
}

(async () => {
  const results = [];
  for (const file of files) {
    console.log(`\n# ==== ${path.relative(process.cwd(), file)}`);
    results.push(await runOne(file));
  }
  console.log('\n# ==== summary');
  for (const r of results) {
    const status = r.fail ? 'FAIL' : 'ok  ';
    const skipped = r.skips.length ? `, ${r.skips.length} skipped` : '';
    console.log(`# ${status} ${r.file}: ${r.pass} passed, ${r.fail} failed${skipped} (${r.seconds}s${r.signal ? `, signal ${r.signal}` : ''})`);
  }
  const pass = results.reduce((a, r) => a + r.pass, 0);
  let fail = results.reduce((a, r) => a + r.fail, 0);
  const skips = results.flatMap((r) => r.skips.map((s) => `${r.file}: ${s}`));
  if (skips.length) {
    console.log('# skipped:');
    for (const s of skips) console.log(`#   ${s}`);
    if (process.env.CI && has('python3') && has('openssl')) {
      console.log(`# FAIL: ${skips.length} skipped under CI where python3 and openssl exist: every check must run here`);
      fail += skips.length;
    }
  }
  console.log(`${pass} passed, ${fail} failed${skips.length ? `, ${skips.length} skipped` : ''}`);
  process.exit(fail === 0 && pass > 0 ? 0 : 1);
})();

/** Whether `command` runs here (`command --version` or `command version` exits 0). */
function has(command) {
  const { spawnSync } = require('node:child_process');
  return [['--version'], ['version']].some((args) => spawnSync(command, args, { stdio: 'ignore' }).status === 0);
}
