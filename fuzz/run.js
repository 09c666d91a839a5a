#!/usr/bin/env node
'use strict';
// npm run fuzz: runs each fuzz target in its own process for a bounded time
// (or a bounded number of executions) and prints, per target, executions,
// corpus size, coverage (JS blocks reached) and findings. A crash of the
// process (a signal, an abort) is a finding too, saved with the input that
// caused it.
//
//   node fuzz/run.js [--seconds 180 | --execs N] [--targets gguf,request]
//                    [--seed N] [--work DIR] [--smoke] [--json FILE]
//   --seconds  total time, split evenly across the targets (default 180)
//   --execs    instead of a time, N executions per target: the same inputs
//              and verdict on any machine, however fast
//   --work     corpus and findings directory (default <cacheDir>/fuzz)
//   --smoke    each target's own smokeExecs executions (the test suite's
//              run: a count, never a time, so the verdict does not depend
//              on the machine's speed; give --seed for the same inputs too),
//              in a fresh temporary directory
//   --delay-ms slows every execution by this much (to show that a count-bound
//              run is the same run on a slower machine)
//   --json     also write the per-target figures and findings to FILE
// Exit status: 0 when nothing was found, 1 otherwise.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const targets = require('./targets');

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

function cacheRoot() {
  try {
    return require('../dist/util/cache-dir').cacheDir();
  } catch {
    return path.join(os.homedir(), '.cache', 'pjrt-score');
  }
}

const smoke = process.argv.includes('--smoke');
const names = (arg('targets') || Object.keys(targets).join(',')).split(',').filter(Boolean);
for (const n of names)
  if (!targets[n]) throw new Error(`unknown target ${n}; known: ${Object.keys(targets).join(', ')}`);
const execsArg = arg('execs');
const byCount = smoke || execsArg !== undefined;
const perTarget = byCount ? Infinity : Number(arg('seconds', '180')) / names.length;
const delayMs = arg('delay-ms');
// A target that prints nothing for this long is stuck in synchronous code.
const HANG_SECONDS = 120;
const work =
  arg('work') ||
  (smoke ? fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-fuzz-smoke-')) : path.join(cacheRoot(), 'fuzz'));
const seed = arg('seed');

function runTarget(name) {
  return new Promise((resolve) => {
    const current = path.join(work, `${name}.current`);
    fs.mkdirSync(work, { recursive: true });
    const args = [
      path.join(__dirname, 'worker.js'),
      '--target',
      name,
      '--seconds',
      String(perTarget),
      '--corpus',
      path.join(work, 'corpus', name),
      '--findings',
      path.join(work, 'findings'),
      '--current',
      current,
    ];
    if (byCount)
      args.push('--max-execs', execsArg ?? String(require(path.join(__dirname, 'targets', targets[name])).smokeExecs));
    if (seed) args.push('--seed', seed);
    if (delayMs) args.push('--delay-ms', delayMs);
    const child = spawn(process.execPath, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { TF_CPP_MIN_LOG_LEVEL: '2', ...process.env },
    });
    let done = null;
    const findings = [];
    let lastProgress = Date.now();
    let stderr = '';
    child.stderr.on('data', (c) => {
      stderr = (stderr + c.toString('utf8')).slice(-4000);
    });
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      if (!line.startsWith('@@fuzz ')) return;
      const event = JSON.parse(line.slice(7));
      lastProgress = Date.now();
      if (event.type === 'done') done = event;
      else if (event.type === 'finding') findings.push(event);
    });
    // A target stuck in synchronous code prints nothing (a running one reports every 2 s).
    const watchdog = setInterval(() => {
      if (Date.now() - lastProgress > HANG_SECONDS * 1000) child.kill('SIGKILL');
    }, 1000);
    child.on('close', (code, signal) => {
      clearInterval(watchdog);
      if (!done || code !== 0) {
        // The process died: keep the input it was running.
        const saved = path.join(work, 'findings', `${name}-crash-${Date.now()}.bin`);
        fs.mkdirSync(path.dirname(saved), { recursive: true });
        if (fs.existsSync(current)) fs.copyFileSync(current, saved);
        fs.writeFileSync(`${saved}.txt`, `process ended: code ${code}, signal ${signal}\n\n${stderr}`);
        findings.push({ kind: `crash (code ${code}, signal ${signal})`, file: saved });
      }
      resolve({
        name,
        result: done,
        findings: done ? [...done.findings, ...findings.filter((f) => f.kind.startsWith('crash'))] : findings,
      });
    });
  });
}

(async () => {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const budget = byCount
    ? execsArg
      ? `${execsArg} executions`
      : 'its smokeExecs executions'
    : `${perTarget.toFixed(1)} s`;
  console.log(`fuzzing ${names.length} target(s), ${budget} each, on ${cpu}; corpus and findings in ${work}`);
  const rows = [];
  let anyFinding = false;
  const allFindings = [];
  for (const name of names) {
    const { result, findings } = await runTarget(name);
    anyFinding ||= findings.length > 0;
    allFindings.push(...findings.map((f) => ({ target: name, ...f })));
    const r = result || { seconds: 0, execs: 0, corpus: 0, blocks: 0, seeds: 0, newInputs: 0, features: 0 };
    rows.push({
      target: name,
      seconds: r.seconds.toFixed(1),
      execs: r.execs,
      'execs/s': r.seconds ? Math.round(r.execs / r.seconds) : 0,
      seeds: r.seeds,
      corpus: r.corpus,
      'new inputs': r.newInputs,
      blocks: r.blocks,
      features: r.features,
      findings: findings.length,
    });
    console.log(
      `${name}: ${r.execs} execs in ${r.seconds.toFixed(1)} s, corpus ${r.corpus}, ${r.blocks} JS blocks reached, ${findings.length} finding(s)`,
    );
    for (const f of findings) console.log(`  FINDING ${f.kind}\n    input: ${f.file}`);
  }
  console.table(rows);
  if (arg('json')) fs.writeFileSync(arg('json'), JSON.stringify({ cpu, budget, rows, findings: allFindings }, null, 2));
  if (smoke) fs.rmSync(work, { recursive: true, force: true });
  process.exitCode = anyFinding ? 1 : 0;
})();
