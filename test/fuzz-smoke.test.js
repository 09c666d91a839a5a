'use strict';
// A short run of every fuzz target (fuzz/, `npm run fuzz`): each runs its
// seeds and a few seconds of mutations in its own process, in a fresh
// corpus directory, and finds nothing: no unexpected error, no hang, no crash.
const test = require('tape');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const targets = require('../fuzz/targets');

test('every fuzz target runs its seeds and mutations with no finding', (t) => {
  const json = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-fuzz-test-')), 'figures.json');
  const names = Object.keys(targets);
  const run = spawnSync(process.execPath, [path.join(__dirname, '..', 'fuzz', 'run.js'), '--smoke', '--seed', '1', '--seconds', String(3 * names.length), '--json', json], {
    encoding: 'utf8',
    timeout: 600_000,
  });
  t.equal(run.signal, null, 'the runner was not killed');
  const figures = fs.existsSync(json) ? JSON.parse(fs.readFileSync(json, 'utf8')) : { rows: [], findings: [] };
  t.deepEqual(figures.rows.map((r) => r.target), names, 'every target ran');
  for (const row of figures.rows) {
    t.ok(row.execs > row.seeds, `${row.target}: ${row.execs} executions (${row.seeds} seeds), corpus ${row.corpus}, ${row.blocks} blocks`);
    t.ok(row.blocks > 0, `${row.target}: coverage feedback works (${row.blocks} blocks reached)`);
  }
  t.deepEqual(figures.findings, [], 'no findings');
  t.equal(run.status, 0, `runner exit status 0${run.status ? `\n${run.stdout.slice(-3000)}` : ''}`);
  fs.rmSync(path.dirname(json), { recursive: true, force: true });
  t.end();
});
