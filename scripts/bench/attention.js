#!/usr/bin/env node
'use strict';
// Dense vs factored masked attention: time and peak memory.
//
//   npm run bench:attention                      # default shapes
//   node scripts/bench/attention.js --shape 2000,500,21 [--heads 8,8,64]
//   node scripts/bench/attention.js --malloc default|tuned|both   (default: both)
//   BENCH_MEM_CAP_MB=8000 npm run bench:attention
//
// --malloc tuned runs the child with MALLOC_MMAP_MAX_=0 and a huge
// MALLOC_TRIM_THRESHOLD_: glibc then keeps freed memory in the heap instead of
// returning every large (> 32 MB) XLA temporary to the OS with munmap, so the
// next execution does not page-fault it in again.
//
// Each (layout, shape) runs in its own child process so its peak RSS (VmHWM)
// is its own. The parent samples the child's RSS and kills it above the
// memory cap (default: the smaller of 75% of RAM and available memory - 1 GB);
// a dense case whose [Hq, T, T] score tensors alone (two live f32 copies)
// would pass the cap is skipped and reported as such, never attempted.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { upperMedian } = require('../lib/median');

const ROOT = path.join(__dirname, '..', '..');
const MB = 1024 * 1024;

function parseArgs(argv) {
  const out = { shapes: [], heads: [8, 8, 64], malloc: 'both' };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--shape') out.shapes.push(argv[++i].split(',').map(Number));
    else if (argv[i] === '--heads') out.heads = argv[++i].split(',').map(Number);
    else if (argv[i] === '--child') out.child = JSON.parse(argv[++i]);
    else if (argv[i] === '--malloc') out.malloc = argv[++i];
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  if (!out.shapes.length)
    out.shapes = [
      [200, 50, 21],
      [1000, 200, 21],
      [2000, 500, 21],
    ];
  if (!['default', 'tuned', 'both'].includes(out.malloc))
    throw new Error(`--malloc must be default, tuned or both, got ${out.malloc}`);
  return out;
}

function readStatusKb(pid, field) {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

// ---- child: one program, compiled and run a few times ----------------------

async function child({ layout, P, N, L, Hq, Hkv, D }) {
  const { Client } = require(path.join(ROOT, 'dist', 'runtime'));
  const { programs } = require(path.join(ROOT, 'dist', 'hlo'));
  let seed = 12345;
  const random = (n) => {
    const a = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      a[i] = seed / 2 ** 31 - 1;
    }
    return a;
  };
  const client = await Client.create();
  const baselineMb = readStatusKb(process.pid, 'VmRSS') / 1024;
  let program;
  let inputs;
  if (layout === 'dense') {
    const T = P + N * L;
    program = programs.maskedAttention({ layout, tokens: T, queryHeads: Hq, kvHeads: Hkv, headDim: D });
    const segmentIds = new Int32Array(T);
    for (let n = 0; n < N; n++) segmentIds.fill(n + 1, P + n * L, P + (n + 1) * L);
    inputs = [random(T * Hq * D), random(T * Hkv * D), random(T * Hkv * D), segmentIds];
  } else {
    program = programs.maskedAttention({
      layout,
      queryTokens: P,
      itemCount: N,
      itemTokens: L,
      queryHeads: Hq,
      kvHeads: Hkv,
      headDim: D,
    });
    inputs = [
      random(P * Hq * D),
      random(P * Hkv * D),
      random(P * Hkv * D),
      new Int32Array([P]),
      random(N * L * Hq * D),
      random(N * L * Hkv * D),
      random(N * L * Hkv * D),
      new Int32Array(N).fill(L),
    ];
  }
  let t0 = performance.now();
  const exe = await client.compile(program.text);
  const compileMs = performance.now() - t0;
  const buffers = await Promise.all(program.inputs.map((s, i) => client.upload(inputs[i], s.dims, s.dtype)));
  const runs = [];
  const started = performance.now();
  while (runs.length < 2 || (runs.length < 6 && performance.now() - started < 4000)) {
    t0 = performance.now();
    const outs = await exe.execute(buffers);
    await Promise.all(outs.map((o) => o.toHost()));
    runs.push(performance.now() - t0);
    outs.forEach((o) => o.dispose());
  }
  const result = {
    compileMs,
    firstRunMs: runs[0],
    runMs: upperMedian(runs.slice(1)),
    runs: runs.length,
    baselineMb,
    peakMb: readStatusKb(process.pid, 'VmHWM') / 1024,
  };
  buffers.forEach((b) => b.dispose());
  exe.dispose();
  client.dispose();
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

// ---- parent: machine, cases, watchdog, table -------------------------------

const TUNED_MALLOC = { MALLOC_MMAP_MAX_: '0', MALLOC_TRIM_THRESHOLD_: String(2 ** 46) };

function runChild(spec, capMb, malloc) {
  return new Promise((resolve) => {
    const env = malloc === 'tuned' ? { ...process.env, ...TUNED_MALLOC } : process.env;
    const proc = spawn(process.execPath, [__filename, '--child', JSON.stringify(spec)], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env,
    });
    let out = '';
    let err = '';
    let sampledPeakMb = 0;
    let killed = false;
    proc.stdout.on('data', (c) => (out += c));
    proc.stderr.on('data', (c) => (err += c));
    const timer = setInterval(() => {
      const rss = readStatusKb(proc.pid, 'VmRSS');
      if (rss === undefined) return;
      sampledPeakMb = Math.max(sampledPeakMb, rss / 1024);
      if (rss / 1024 > capMb && !killed) {
        killed = true;
        proc.kill('SIGKILL');
      }
    }, 50);
    proc.on('close', (code, signal) => {
      clearInterval(timer);
      if (killed)
        return resolve({
          error: `killed above the ${Math.round(capMb)} MB cap (RSS reached ${Math.round(sampledPeakMb)} MB)`,
        });
      const line = out.trim().split('\n').pop();
      try {
        resolve(JSON.parse(line));
      } catch {
        const lastErr = err
          .trim()
          .split('\n')
          .filter((l) => !/^(I0000|WARNING: All log)/.test(l))
          .slice(-3)
          .join(' | ');
        resolve({ error: `exit ${code ?? signal}: ${lastErr}` });
      }
    });
  });
}

/** MemAvailable (Linux), else free memory: the cap must leave room for whatever else runs here. */
function availableMb() {
  try {
    const m = /^MemAvailable:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/meminfo', 'utf8'));
    if (m) return Number(m[1]) / 1024;
  } catch {
    // not Linux
  }
  return os.freemem() / MB;
}

function fmtMs(ms) {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.child) return child(args.child);
  if (!fs.existsSync(path.join(ROOT, 'dist', 'hlo', 'index.js')))
    throw new Error('dist/ is missing: run `npx tsc -p tsconfig.json` first');
  const [Hq, Hkv, D] = args.heads;
  const totalMb = os.totalmem() / MB;
  const capMb = Number(process.env.BENCH_MEM_CAP_MB) || Math.min(0.75 * totalMb, availableMb() - 1024);
  const cpus = os.cpus();
  console.log(
    `# machine: ${cpus[0].model}, ${cpus.length} cores, ${(totalMb / 1024).toFixed(1)} GB RAM, ${os.platform()} ${os.release()}, node ${process.version}`,
  );
  console.log(
    `# load average at start: ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(', ')} (other work on the machine skews times)`,
  );
  console.log(`# heads: Hq=${Hq}, Hkv=${Hkv}, D=${D}; memory cap per case ${Math.round(capMb)} MB (BENCH_MEM_CAP_MB)`);
  console.log(
    '# time = median steady-state execute + copy back; peak = child VmHWM (baseline = RSS after client create)',
  );
  const modes = args.malloc === 'both' ? ['default', 'tuned'] : [args.malloc];
  const rows = [];
  const line = (name, r) =>
    r.error
      ? `  ${name.padEnd(18)} ${r.error}`
      : `  ${name.padEnd(18)} run ${fmtMs(r.runMs).padStart(9)}  first ${fmtMs(r.firstRunMs).padStart(9)}  compile ${fmtMs(r.compileMs).padStart(9)}  peak ${Math.round(r.peakMb)} MB (baseline ${Math.round(r.baselineMb)} MB)`;
  for (const [P, N, L] of args.shapes) {
    const T = P + N * L;
    console.log(`\nP=${P} N=${N} L=${L} (dense T=${T})`);
    for (const malloc of modes) {
      const result = { P, N, L, T, malloc };
      for (const layout of ['factored', 'dense']) {
        // Dense keeps at least two [Hq, T, T] f32 tensors alive (scores, weights).
        const denseEstimateMb = (2 * Hq * T * T * 4) / MB;
        if (layout === 'dense' && denseEstimateMb > capMb) {
          result.dense = {
            error: `skipped: 2 x [${Hq}, ${T}, ${T}] f32 = ${Math.round(denseEstimateMb)} MB > cap ${Math.round(capMb)} MB`,
          };
          continue;
        }
        process.stderr.write(`running ${layout} P=${P} N=${N} L=${L} (T=${T}), ${malloc} malloc ...\n`);
        result[layout] = await runChild({ layout, P, N, L, Hq, Hkv, D }, capMb, malloc);
      }
      rows.push(result);
      console.log(line(`factored ${malloc}`, result.factored));
      console.log(line(`dense    ${malloc}`, result.dense));
      const f = result.factored;
      const d = result.dense;
      if (!d.error && !f.error) {
        console.log(
          `  ${'ratio d/f'.padEnd(18)} time ${(d.runMs / f.runMs).toFixed(1)}x, peak ${(d.peakMb / f.peakMb).toFixed(1)}x, ` +
            `peak above baseline ${((d.peakMb - d.baselineMb) / Math.max(1, f.peakMb - f.baselineMb)).toFixed(1)}x`,
        );
      }
    }
  }
  console.log(
    `\n${JSON.stringify({ machine: { cpu: cpus[0].model, cores: cpus.length, ramGb: +(totalMb / 1024).toFixed(1) }, heads: { Hq, Hkv, D }, capMb: Math.round(capMb), rows })}`,
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
