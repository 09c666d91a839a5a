'use strict';
// A short run of every fuzz target (fuzz/, `npm run fuzz`): each runs its
// seeds and then mutations up to its own fixed count of executions
// (smokeExecs), from a fixed seed, in its own process, in a fresh corpus
// directory, and finds nothing: no unexpected error, no hang, no crash. The
// run is bounded by a count, never by time, so a faster machine runs the same
// inputs and reaches the same verdict (the second test shows it).
const test = require('tape');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const targets = require('../fuzz/targets');

function runFuzz(args) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-fuzz-test-'));
  const json = path.join(dir, 'figures.json');
  const run = spawnSync(
    process.execPath,
    [path.join(__dirname, '..', 'fuzz', 'run.js'), '--smoke', '--json', json, ...args],
    { encoding: 'utf8' },
  );
  const figures = fs.existsSync(json) ? JSON.parse(fs.readFileSync(json, 'utf8')) : { rows: [], findings: [] };
  fs.rmSync(dir, { recursive: true, force: true });
  return { run, figures };
}

test('every fuzz target runs its seeds and a fixed count of mutations with no finding', (t) => {
  const names = Object.keys(targets);
  const { run, figures } = runFuzz(['--seed', '1']);
  t.equal(run.signal, null, 'the runner was not killed');
  t.deepEqual(
    figures.rows.map((r) => r.target),
    names,
    'every target ran',
  );
  for (const row of figures.rows) {
    const want = require(path.join(__dirname, '..', 'fuzz', 'targets', targets[row.target])).smokeExecs;
    t.equal(
      row.execs,
      want,
      `${row.target}: exactly its ${want} executions (${row.seeds} seeds), corpus ${row.corpus}`,
    );
    t.ok(row.blocks > 0, `${row.target}: coverage feedback works (${row.blocks} blocks reached)`);
  }
  t.deepEqual(figures.findings, [], 'no findings');
  t.equal(run.status, 0, `runner exit status 0${run.status ? `\n${run.stdout.slice(-3000)}` : ''}`);
  t.end();
});

test('a count-bound run is the same run on a slower machine', (t) => {
  // The same seed and count, once as fast as it goes and once with every
  // execution slowed by 3 ms: the same executions, corpus and coverage.
  const args = ['--targets', 'request,native-upload', '--execs', '300', '--seed', '7'];
  const fast = runFuzz(args);
  const slow = runFuzz([...args, '--delay-ms', '3']);
  t.equal(fast.run.status, 0, 'fast run exits 0');
  t.equal(slow.run.status, 0, 'slowed run exits 0');
  const pick = (r) => ({
    target: r.target,
    execs: r.execs,
    corpus: r.corpus,
    newInputs: r['new inputs'],
    blocks: r.blocks,
    features: r.features,
  });
  t.deepEqual(
    fast.figures.rows.map((r) => r.execs),
    [300, 300],
    'each target ran exactly 300 executions',
  );
  t.deepEqual(
    slow.figures.rows.map(pick),
    fast.figures.rows.map(pick),
    'the slowed run reached the same corpus and coverage',
  );
  t.end();
});
