#!/usr/bin/env node
'use strict';
// npm run bench:restart — a restarted service with a warm executable cache,
// from `pjrt-score serve` to the answer of its first request (small-10),
// against an older build of this project, alternating in one run:
//
//   node scripts/bench/restart.js [--baseline-ref <commit>] [--rounds 5] [--weights f32] [--input ids|text]
//
// --input text sends the first request as text (the service then builds its
// tokenizer, which the load no longer does); ids (default) as token ids.
//
// --baseline-ref (default fd3023e, the last commit before the streamed weight
// loading) is exported with `git archive` into a directory under the temp dir
// and built there with this checkout's node_modules and native addon (the
// addon's JavaScript interface did not change since; its C++ did only for
// the parser's stack and nesting checks). Each build has its own executable
// cache, filled by one untimed cold start; then the two restart alternately
// (old, new, new, old, ...). Prints the medians (wall, and CPU seconds of the
// server process, which a shared machine moves less), their ratios, and each
// build's start split into its steps, in wall seconds and in the server's CPU
// seconds up to the loaded model and for the first request
// (lib/service-start.js). Writes
// bench-results/restart.json.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { describeMachine, machine } = require('../lib/machine');
const { median } = require('../lib/median');

const root = path.join(__dirname, '..', '..');
const { values: args } = parseArgs({
  options: {
    'baseline-ref': { type: 'string', default: 'fd3023e' },
    rounds: { type: 'string', default: '5' },
    weights: { type: 'string', default: 'f32' },
    input: { type: 'string', default: 'ids' },
  },
});

function run(command, argv, options = {}) {
  const r = spawnSync(command, argv, { encoding: 'utf8', maxBuffer: 1 << 28, ...options });
  if (r.status !== 0)
    throw new Error(`${command} ${argv.join(' ')} failed (exit ${r.status}):\n${(r.stderr || '').slice(-3000)}`);
  return r.stdout;
}

/** Points the baseline's node_modules and build (the native addon) at this checkout's. */
function linkShared(dir) {
  for (const name of ['node_modules', 'build']) {
    const link = path.join(dir, name);
    fs.rmSync(link, { recursive: true, force: true });
    fs.symlinkSync(fs.realpathSync(path.join(root, name)), link);
  }
}

/** The baseline's package root, built once per commit. */
function baselineRoot(ref) {
  const sha = run('git', ['rev-parse', '--verify', `${ref}^{commit}`], { cwd: root }).trim();
  const dir = path.join(os.tmpdir(), `pjrt-score-baseline-${sha.slice(0, 12)}`);
  if (fs.existsSync(path.join(dir, 'dist', 'index.js'))) {
    // Built by another checkout, maybe since removed: use this one's node_modules and addon.
    linkShared(dir);
    return { dir, sha };
  }
  process.stderr.write(`[restart] building ${sha.slice(0, 12)} in ${dir}\n`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const tar = spawnSync('git', ['archive', '--format=tar', sha], { cwd: root, maxBuffer: 1 << 30 });
  if (tar.status !== 0) throw new Error(`git archive ${sha} failed: ${tar.stderr}`);
  run('tar', ['-x', '-C', dir], { input: tar.stdout, encoding: 'buffer' });
  linkShared(dir);
  run(process.execPath, [path.join(dir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], {
    cwd: dir,
  });
  // The ESM entry writer, where that commit keeps it (scripts/ was sorted into job folders later).
  const esmEntry = ['scripts/build/write-esm-entry.js', 'scripts/write-esm-entry.js'].find((f) =>
    fs.existsSync(path.join(dir, f)),
  );
  if (esmEntry) run(process.execPath, [esmEntry], { cwd: dir });
  return { dir, sha };
}

/** One restart of the service in `packageRoot` over `cache` (lib/service-start.js, in its own process). */
function start(cache, packageRoot, weights) {
  const out = run(process.execPath, [path.join(__dirname, 'lib', 'service-start.js'), cache, packageRoot, args.input], {
    cwd: root,
    env: { ...process.env, PJRT_SCORE_WEIGHTS: weights },
  });
  const r = JSON.parse(out.trim().split('\n').pop());
  if (r.status !== 200) throw new Error(`a start answered ${r.status}`);
  return r;
}

function main() {
  const rounds = Number(args.rounds);
  if (!(Number.isInteger(rounds) && rounds >= 1))
    throw new Error(`--rounds must be a positive integer, got ${args.rounds}`);
  if (args.input !== 'ids' && args.input !== 'text') throw new Error(`--input must be ids or text, got ${args.input}`);
  const info = machine();
  console.log(`machine: ${describeMachine()}`);
  const baseline = baselineRoot(args['baseline-ref']);
  const head = run('git', ['rev-parse', 'HEAD'], { cwd: root }).trim();
  const dirty = run('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: root }).trim() !== '';
  const builds = {
    old: {
      label: `baseline ${baseline.sha.slice(0, 12)}`,
      root: baseline.dir,
      cache: fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-restart-old-')),
      runs: [],
    },
    new: {
      label: `this checkout ${head.slice(0, 12)}${dirty ? ' (with uncommitted changes)' : ''}`,
      root,
      cache: fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-restart-new-')),
      runs: [],
    },
  };
  const loadBefore = os.loadavg();
  try {
    for (const b of Object.values(builds)) {
      process.stderr.write(`[restart] ${b.label}: cold start to fill its executable cache\n`);
      b.cold = start(b.cache, b.root, args.weights);
    }
    for (let r = 0; r < rounds; r++) {
      for (const name of r % 2 === 0 ? ['old', 'new'] : ['new', 'old']) {
        const result = start(builds[name].cache, builds[name].root, args.weights);
        builds[name].runs.push(result);
        process.stderr.write(
          `[restart] round ${r + 1}: ${name} ${result.seconds.toFixed(2)} s (${result.compiles} compiles)\n`,
        );
      }
    }
  } finally {
    for (const b of Object.values(builds)) fs.rmSync(b.cache, { recursive: true, force: true });
  }
  const loadAfter = os.loadavg();
  const summary = {};
  for (const [name, b] of Object.entries(builds)) {
    const steps = {};
    for (const key of Object.keys(b.runs[0].steps ?? {})) steps[key] = median(b.runs.map((r) => r.steps[key]));
    // The server's CPU seconds up to the loaded model and for the first request (read from /proc by lib/service-start.js).
    const cpuSteps = {};
    for (const key of Object.keys(b.runs[0].cpu ?? {})) cpuSteps[key] = median(b.runs.map((r) => r.cpu[key]));
    summary[name] = {
      label: b.label,
      medianSeconds: median(b.runs.map((r) => r.seconds)),
      medianCpuSeconds: median(b.runs.map((r) => r.cpuSeconds)),
      seconds: b.runs.map((r) => r.seconds),
      compiles: b.runs.map((r) => r.compiles),
      coldSeconds: b.cold.seconds,
      steps,
      cpuSteps,
    };
  }
  const ratio = summary.old.medianSeconds / summary.new.medianSeconds;
  console.log(
    `load average: ${loadBefore.map((x) => x.toFixed(2)).join(' ')} before, ${loadAfter.map((x) => x.toFixed(2)).join(' ')} after`,
  );
  console.log(
    `restart with a warm executable cache to the first answered request (small-10 as ${args.input === 'text' ? 'text' : 'token ids'}, weights ${args.weights}), ${rounds} alternating rounds:`,
  );
  for (const s of Object.values(summary)) {
    console.log(
      `  ${s.label}: median ${s.medianSeconds.toFixed(2)} s, ${s.medianCpuSeconds.toFixed(2)} CPU s (${s.seconds.map((x) => x.toFixed(2)).join(', ')}; compiles ${s.compiles.join(', ')}; cold start ${s.coldSeconds.toFixed(2)} s)`,
    );
  }
  console.log(
    `  old / new: ${ratio.toFixed(2)}x wall, ${(summary.old.medianCpuSeconds / summary.new.medianCpuSeconds).toFixed(2)}x CPU`,
  );
  for (const [name, s] of Object.entries(summary)) {
    const split = Object.entries(s.steps);
    const who = name === 'new' ? 'this checkout' : 'baseline';
    if (split.length)
      console.log(`  ${who}, median by step: ${split.map(([k, v]) => `${k} ${v.toFixed(2)} s`).join(', ')}`);
    const cpu = Object.entries(s.cpuSteps);
    if (cpu.length)
      console.log(`  ${who}, median CPU seconds: ${cpu.map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}`);
  }
  fs.mkdirSync(path.join(root, 'bench-results'), { recursive: true });
  const report = {
    machine: info,
    loadAverage: { before: loadBefore, after: loadAfter },
    weights: args.weights,
    input: args.input,
    rounds,
    summary,
    ratio,
    command: `node scripts/bench/restart.js --baseline-ref ${args['baseline-ref']} --rounds ${rounds} --weights ${args.weights} --input ${args.input}`,
  };
  fs.writeFileSync(path.join(root, 'bench-results', 'restart.json'), `${JSON.stringify(report, null, 2)}\n`);
  console.log('wrote bench-results/restart.json');
}

try {
  main();
} catch (err) {
  console.error(err);
  process.exit(1);
}
