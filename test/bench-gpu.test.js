'use strict';
// bench:gpu's pjrt-score half runs here on the CPU plugin with a tiny random
// Qwen3-shaped model and no peers, so the script cannot rot: every
// method runs, the plans agree with the serial plan, concurrent callers get
// what each gets alone, and a restart with a warm disk cache compiles nothing.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const SCRIPT = path.join(__dirname, '..', 'scripts', 'bench', 'gpu.js');
const GPU_SCRIPTS = path.join(__dirname, '..', 'scripts', 'lab', 'gpu');

test('bench:gpu runs pjrt-score on a tiny random model and prints one table', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-bench-gpu-'));
  try {
    const r = spawnSync(
      process.execPath,
      [
        SCRIPT,
        '--preset',
        'qwen3_tiny',
        '--peers',
        'none',
        '--configs',
        'highest/f32,highest/f32/ones_own/qc2+cross-request',
        '--repeats',
        '1',
        '--dir',
        dir,
      ],
      {
        encoding: 'utf8',
        maxBuffer: 1 << 24,
      },
    );
    t.equal(r.status, 0, `the script exits 0${r.status ? `: ${r.stderr.slice(-2000)}` : ''}`);
    if (r.status !== 0) return;
    t.match(r.stdout, /\| workload \| contender \| method \| items\/s/, 'prints the table');
    t.match(r.stdout, /host: .*cores/, 'names the machine');
    const results = JSON.parse(fs.readFileSync(path.join(dir, 'results.json'), 'utf8'));
    const rows = results.runs[0].result.rows;
    const row = (workload, method) => rows.find((x) => x.workload === workload && x.method === method);
    for (const [w, m] of [
      ['target', 'packed'],
      ['target', 'prefix'],
      ['target', 'serial'],
      ['pr', 'one-at-a-time'],
      ['pr', '8-concurrent'],
    ]) {
      t.ok(row(w, m) && row(w, m).items_per_s > 0, `${w} ${m} ran`);
    }
    const inputs = JSON.parse(fs.readFileSync(path.join(dir, 'inputs-tiny.json'), 'utf8'));
    const sums = row('target', 'packed').scores[0].map((s) => s.reduce((a, b) => a + b, 0));
    t.equal(sums.length, inputs.workloads.target.requests[0].items.length, 'one score row per item');
    t.ok(
      sums.every((s) => Math.abs(s - 1) < 1e-6),
      'label probabilities sum to 1',
    );

    // Plans against the serial plan, computed here (independent of the script's own parity table).
    const serial = row('target', 'serial').scores[0];
    for (const plan of ['packed', 'prefix']) {
      let max = 0;
      serial.forEach((s, i) =>
        s.forEach((v, l) => (max = Math.max(max, Math.abs(v - row('target', plan).scores[0][i][l])))),
      );
      t.ok(max <= 1e-4, `${plan} equals serial within 1e-4 (max ${max.toExponential(1)})`);
    }
    // The second configuration names attention forms by tag (the rows form, 2 query chunks):
    // its plans against the first configuration's serial plan.
    t.equal(
      results.runs[1].config.name,
      'highest/f32/ones_own/qc2+cross-request',
      'a configuration may name its attention forms and batching',
    );
    const formRows = results.runs[1].result.rows;
    for (const plan of ['packed', 'prefix']) {
      const other = formRows.find((x) => x.workload === 'target' && x.method === plan).scores[0];
      let max = 0;
      serial.forEach((s, i) => s.forEach((v, l) => (max = Math.max(max, Math.abs(v - other[i][l])))));
      t.ok(
        max <= 1e-4,
        `ones_own/qc2 ${plan} equals the joint/square serial within 1e-4 (max ${max.toExponential(1)})`,
      );
    }
    t.deepEqual(
      [formRows[0].prefixAttention, formRows[0].causalAttention],
      [{ kind: 'rows' }, { kind: 'chunked', queryChunks: 2 }],
      'the run used the forms it was given',
    );
    // Its 8 concurrent callers ran with cross-request batching: fewer passes than requests, each request's
    // scores those of the first configuration's one-at-a-time run.
    const batched = formRows.find((x) => x.workload === 'pr' && x.method === '8-concurrent');
    t.equal(formRows[0].batching, 'cross-request', 'the second configuration batches across requests');
    t.ok(
      batched.runs.devicePasses < batched.runs.requests,
      `cross-request: ${batched.runs.devicePasses} device passes for ${batched.runs.requests} requests`,
    );
    let maxBatched = 0;
    row('pr', 'one-at-a-time').scores.forEach((q, i) =>
      q.forEach((s, j) =>
        s.forEach((v, l) => (maxBatched = Math.max(maxBatched, Math.abs(v - batched.scores[i][j][l])))),
      ),
    );
    t.ok(
      maxBatched <= 1e-4,
      `batched callers get their own results within 1e-4 (max |diff| ${maxBatched.toExponential(1)})`,
    );
    let maxConcurrent = 0;
    row('pr', 'one-at-a-time').scores.forEach((q, i) =>
      q.forEach((s, j) =>
        s.forEach(
          (v, l) => (maxConcurrent = Math.max(maxConcurrent, Math.abs(v - row('pr', '8-concurrent').scores[i][j][l]))),
        ),
      ),
    );
    t.ok(
      maxConcurrent <= 1e-5,
      `8 concurrent callers get their own results (max |diff| ${maxConcurrent.toExponential(1)})`,
    );

    const restart = results.restart.rows.find((x) => x.method === 'first-request');
    t.equal(restart.compiles, 0, 'a restart with a warm disk cache compiles nothing');
    t.ok(restart.disk_hits >= 1, 'and loads its executables from disk');
    const memory = results.runs[0].result.load_memory;
    t.ok(
      memory.rss > 0 && memory.anon > 0 && memory.top.length > 0,
      `every run says where its memory is after the load (RSS ${memory.rss} GB)`,
    );

    // The GPU call's other two scripts, on the same model (the cuDNN forms' CPU stand-in for the profiled pass).
    const model = path.join(dir, 'model');
    const inputsFile = path.join(dir, 'inputs-tiny.json');
    const pass = spawnSync(
      process.execPath,
      [
        path.join(GPU_SCRIPTS, 'profile-pass.js'),
        '--model',
        model,
        '--inputs',
        inputsFile,
        '--prefix-attention',
        'cudnnsim',
        '--causal-attention',
        'cudnnsim',
      ],
      { encoding: 'utf8' },
    );
    t.equal(pass.status, 0, `profile-pass.js exits 0${pass.status ? `: ${pass.stderr.slice(-1000)}` : ''}`);
    t.equal(
      (pass.stdout.match(/^pass \d: [\d.]+ ms$/gm) ?? []).length,
      3,
      'profile-pass.js runs the target pass three times',
    );
    const probe = spawnSync(
      process.execPath,
      [path.join(GPU_SCRIPTS, 'memory-probe.js'), '--model', model, '--inputs', inputsFile],
      { encoding: 'utf8' },
    );
    t.equal(probe.status, 0, `memory-probe.js exits 0${probe.status ? `: ${probe.stderr.slice(-1000)}` : ''}`);
    const steps = probe.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    t.deepEqual(
      steps.map((x) => x.step),
      ['start', 'client', 'loaded', 'first request'],
      'memory-probe.js reports each step',
    );
    t.ok(
      steps.every((x) => x.rss > 0 && x.peak >= x.rss),
      'with its resident and peak memory',
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  t.end();
});

test('kernel-table.py splits the last of the repeated passes out of a profiler trace and sums it by kind', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-kernel-table-'));
  try {
    // A load (two kernels), then the same pass of four kernels three times; times in ns, the last pass's known.
    const pass = ['nvjet_sm90_gemm', 'loop_convert_fusion', 'cudnn_flash_fprop', 'input_reduce_fusion'];
    const names = ['load_join', 'load_copy', ...pass, ...pass, ...pass];
    const ns = names.map((_, i) => 1000 * (i + 1));
    const header =
      '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"';
    const rows = names.map(
      (n, i) =>
        `"${i}","1","node","h","${n}","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","${ns[i].toLocaleString('en-US')}"`,
    );
    const trace = path.join(dir, 'trace.csv');
    fs.writeFileSync(trace, ['==PROF== Connected to process', header, ...rows].join('\n') + '\n');
    const r = spawnSync('python3', [path.join(GPU_SCRIPTS, 'kernel-table.py'), trace], { encoding: 'utf8' });
    t.equal(r.status, 0, `exits 0${r.status ? `: ${r.stderr}` : ''}`);
    const lastMs = ns.slice(-4).reduce((a, b) => a + b, 0) / 1e6;
    t.match(
      r.stdout,
      new RegExp(`the last pass: 4 launches, ${lastMs.toFixed(2)} ms`),
      `the last pass: 4 launches, ${lastMs.toFixed(2)} ms`,
    );
    t.match(
      r.stdout,
      new RegExp(`\\| cudnn attention \\| 1 \\| ${(ns[names.length - 2] / 1e6).toFixed(2)} \\|`),
      'cuDNN attention summed as its own kind',
    );
    t.match(r.stdout, /\| matrix product \| 1 \|/, 'matrix products as theirs');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  t.end();
});
