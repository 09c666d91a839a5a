'use strict';
// bench:gpu's pjrt-score half runs here on the CPU plugin with a tiny random
// Qwen3-shaped model and no peers, so the script cannot rot (issue 17): every
// method runs, the plans agree with the serial plan, concurrent callers get
// what each gets alone, and a restart with a warm disk cache compiles nothing.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const SCRIPT = path.join(__dirname, '..', 'scripts', 'bench-gpu.js');

test('bench:gpu runs pjrt-score on a tiny random model and prints one table', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-bench-gpu-'));
  try {
    const r = spawnSync(process.execPath, [SCRIPT, '--preset', 'qwen3_tiny', '--peers', 'none', '--configs', 'highest/f32,highest/f32/kb8w/qc2+cross-request', '--repeats', '1', '--dir', dir], {
      encoding: 'utf8',
      maxBuffer: 1 << 24,
    });
    t.equal(r.status, 0, `the script exits 0${r.status ? `: ${r.stderr.slice(-2000)}` : ''}`);
    if (r.status !== 0) return;
    t.match(r.stdout, /\| workload \| contender \| method \| items\/s/, 'prints the table');
    t.match(r.stdout, /host: .*cores/, 'names the machine');
    const results = JSON.parse(fs.readFileSync(path.join(dir, 'results.json'), 'utf8'));
    const rows = results.runs[0].result.rows;
    const row = (workload, method) => rows.find((x) => x.workload === workload && x.method === method);
    for (const [w, m] of [['target', 'packed'], ['target', 'prefix'], ['target', 'serial'], ['pr', 'one-at-a-time'], ['pr', '8-concurrent']]) {
      t.ok(row(w, m) && row(w, m).items_per_s > 0, `${w} ${m} ran`);
    }
    const inputs = JSON.parse(fs.readFileSync(path.join(dir, 'inputs-tiny.json'), 'utf8'));
    const sums = row('target', 'packed').scores[0].map((s) => s.reduce((a, b) => a + b, 0));
    t.equal(sums.length, inputs.workloads.target.requests[0].items.length, 'one score row per item');
    t.ok(sums.every((s) => Math.abs(s - 1) < 1e-6), 'label probabilities sum to 1');

    // Plans against the serial plan, computed here (independent of the script's own parity table).
    const serial = row('target', 'serial').scores[0];
    for (const plan of ['packed', 'prefix']) {
      let max = 0;
      serial.forEach((s, i) => s.forEach((v, l) => (max = Math.max(max, Math.abs(v - row('target', plan).scores[0][i][l])))));
      t.ok(max <= 1e-4, `${plan} equals serial within 1e-4 (max ${max.toExponential(1)})`);
    }
    // The second configuration names attention forms by tag (key blocks of 8 in a while loop, 2 query chunks):
    // its plans against the first configuration's serial plan.
    t.equal(results.runs[1].config.name, 'highest/f32/kb8w/qc2+cross-request', 'a configuration may name its attention forms and batching');
    const formRows = results.runs[1].result.rows;
    for (const plan of ['packed', 'prefix']) {
      const other = formRows.find((x) => x.workload === 'target' && x.method === plan).scores[0];
      let max = 0;
      serial.forEach((s, i) => s.forEach((v, l) => (max = Math.max(max, Math.abs(v - other[i][l])))));
      t.ok(max <= 1e-4, `kb8w/qc2 ${plan} equals the joint/square serial within 1e-4 (max ${max.toExponential(1)})`);
    }
    t.deepEqual([formRows[0].prefixAttention, formRows[0].causalAttention], [{ kind: 'blocked', keyBlock: 8, loop: 'while' }, { kind: 'chunked', queryChunks: 2 }], 'the run used the forms it was given');
    // Its 8 concurrent callers ran with cross-request batching: fewer passes than requests, each request's
    // scores those of the first configuration's one-at-a-time run.
    const batched = formRows.find((x) => x.workload === 'pr' && x.method === '8-concurrent');
    t.equal(formRows[0].batching, 'cross-request', 'the second configuration batches across requests');
    t.ok(batched.runs.devicePasses < batched.runs.requests, `cross-request: ${batched.runs.devicePasses} device passes for ${batched.runs.requests} requests`);
    let maxBatched = 0;
    row('pr', 'one-at-a-time').scores.forEach((q, i) => q.forEach((s, j) => s.forEach((v, l) => (maxBatched = Math.max(maxBatched, Math.abs(v - batched.scores[i][j][l]))))));
    t.ok(maxBatched <= 1e-4, `batched callers get their own results within 1e-4 (max |diff| ${maxBatched.toExponential(1)})`);
    let maxConcurrent = 0;
    row('pr', 'one-at-a-time').scores.forEach((q, i) => q.forEach((s, j) => s.forEach((v, l) => (maxConcurrent = Math.max(maxConcurrent, Math.abs(v - row('pr', '8-concurrent').scores[i][j][l]))))));
    t.ok(maxConcurrent <= 1e-5, `8 concurrent callers get their own results (max |diff| ${maxConcurrent.toExponential(1)})`);

    const restart = results.restart.rows.find((x) => x.method === 'first-request');
    t.equal(restart.compiles, 0, 'a restart with a warm disk cache compiles nothing');
    t.ok(restart.disk_hits >= 1, 'and loads its executables from disk');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  t.end();
});
