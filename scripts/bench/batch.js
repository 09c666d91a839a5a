#!/usr/bin/env node
'use strict';
// npm run bench:batch — `pjrt-score run-batch` against `npm run bench`'s figure
// for the same shape, and its peak RSS as the input grows.
//
//   node scripts/bench/batch.js [--lines 2000] [--shape pr] [--precision auto]
//        [--batching invariant,cross-request] [--concurrency 16]
//        [--rss-lines 2000,20000] [--rss-shape empty] [--bench-rounds 3] [--skip-throughput] [--skip-rss]
//
// Throughput: --lines lines of the shape (distinct queries, token ids, as
// scripts/bench/lib/workloads.js makes them) through run-batch, once per
// --batching, between two runs of npm run bench's worker on the same shape
// and precision (scripts/bench/lib/pjrt-worker.js: one warm request, timed),
// --bench-rounds processes of it before and as many after, the median of
// each. The ratio is run-batch's items/s (from its first line to its last,
// the model's load left out) over the worker's (its items over the mean of
// the two medians); the same ratio in CPU seconds per item, which a shared
// machine's load disturbs less, beside it.
//
// Memory: run-batch over --rss-lines lines of --rss-shape (default empty:
// a 300-token query and no items, which every route step but the device
// takes, so 20,000 lines take a minute; tiny: an 8-token query and one
// 4-token item; the lines stream through the same reader, window and writer
// whatever their shape): its peak RSS (the kernel's maxRSS) at each count.
//
// Prints the machine; writes bench-results/batch.json (a skipped section keeps the last run's, and its
// machine as throughputMachine or rssMachine).
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { parseArgs } = require('node:util');
const { describeMachine, machine, loadAverage } = require('../lib/machine');
const { WORKLOADS, request } = require('./lib/workloads');

const root = path.join(__dirname, '..', '..');
const BIN = path.join(root, 'bin', 'pjrt-score.js');
const WORKER = path.join(__dirname, 'lib', 'pjrt-worker.js');
const SHAPES = {
  ...WORKLOADS,
  tiny: { name: 'tiny', description: '8-token query, 1 item x 4 tokens', queryTokens: 8, items: 1, itemTokens: 4 },
  // Validated, tokenized, queued and answered like any line, with nothing for the device: the stream's own cost.
  empty: {
    name: 'empty',
    description: '300-token query, no items (nothing on the device)',
    queryTokens: 300,
    items: 0,
    itemTokens: 0,
  },
};

const { values: args } = parseArgs({
  options: {
    lines: { type: 'string', default: '2000' },
    shape: { type: 'string', default: 'pr' },
    precision: { type: 'string', default: 'auto' },
    batching: { type: 'string', default: 'invariant,cross-request' },
    concurrency: { type: 'string', default: '16' },
    'rss-lines': { type: 'string', default: '2000,20000' },
    'rss-shape': { type: 'string', default: 'empty' },
    'skip-throughput': { type: 'boolean', default: false },
    'skip-rss': { type: 'boolean', default: false },
    'bench-rounds': { type: 'string', default: '3' },
  },
});

function shapeOf(name) {
  const shape = SHAPES[name];
  if (!shape) throw new Error(`unknown shape ${name}; known: ${Object.keys(SHAPES).join(', ')}`);
  return shape;
}

/** Writes `count` lines of the shape to a file, a line at a time; distinct queries (variant = line). */
function writeInput(file, shape, count) {
  const fd = fs.openSync(file, 'w');
  try {
    for (let i = 0; i < count; i++) {
      const r = request(shape, i + 2); // variants 0 and 1 are the worker's
      const body = { query: r.query, items: r.items, label_token_ids: r.labelTokenIds };
      fs.writeSync(fd, `${JSON.stringify({ custom_id: `req-${i}`, method: 'POST', url: '/v1/score', body })}\n`);
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** Runs run-batch; resolves its summary (the last stderr line), after checking every line was answered 200. */
function runBatch(input, output, extra) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [BIN, 'run-batch', '-i', input, '-o', output, '--progress-every', '60', ...extra],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (c) => {
      stderr += c;
      if (stderr.length > 1e6) stderr = stderr.slice(-1e5);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const last = stderr.trim().split('\n').pop();
      if (code !== 0) reject(new Error(`run-batch exited ${code}:\n${stderr.slice(-3000)}`));
      else resolve(JSON.parse(last));
    });
  });
}

function worker(shape, precision) {
  const r = spawnSync(process.execPath, [WORKER, shape, 'auto'], {
    encoding: 'utf8',
    env: { ...process.env, BENCH_PRECISION: precision },
    maxBuffer: 1 << 26,
  });
  if (r.status !== 0) throw new Error(`bench worker failed (exit ${r.status}):\n${r.stderr.slice(-3000)}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

async function main() {
  console.log(`machine: ${describeMachine()}`);
  console.log(`load average at start: ${loadAverage()}`);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-bench-batch-'));
  const result = { machine: machine(), throughput: [], rss: [] };
  try {
    if (!args['skip-throughput']) {
      const shape = shapeOf(args.shape);
      const lines = Number(args.lines);
      const input = path.join(tmp, 'throughput.jsonl');
      writeInput(input, shape, lines);
      // The worker times one request: a few processes before and after, their median each.
      const rounds = Number(args['bench-rounds']);
      const workers = () => Array.from({ length: rounds }, () => worker(shape.name, args.precision));
      const middle = (list) => [...list].sort((a, b) => a.seconds - b.seconds)[Math.floor(list.length / 2)];
      const beforeRuns = workers();
      const before = middle(beforeRuns);
      const runs = [];
      for (const batching of args.batching.split(',')) {
        const output = path.join(tmp, `out-${batching}.jsonl`);
        const summary = await runBatch(input, output, [
          '--precision',
          args.precision,
          '--batching',
          batching,
          '--concurrency',
          args.concurrency,
        ]);
        runs.push({ batching, summary });
        fs.rmSync(output);
      }
      const afterRuns = workers();
      const after = middle(afterRuns);
      const benchItemsPerSecond = shape.items / ((before.seconds + after.seconds) / 2);
      const cpuMedian = (list) => [...list].map((r) => r.cpuSeconds).sort((a, b) => a - b)[Math.floor(list.length / 2)];
      const benchCpuPerItem = (cpuMedian(beforeRuns) + cpuMedian(afterRuns)) / 2 / shape.items;
      console.log('');
      console.log(
        `run-batch, ${lines} lines of ${shape.name} (${shape.description}), precision ${args.precision} (${before.precision}), concurrency ${args.concurrency}`,
      );
      const all = [...beforeRuns, ...afterRuns].map((r) => r.seconds.toFixed(3)).join(', ');
      console.log(
        `npm run bench's worker on the same shape (${rounds} processes before, ${rounds} after: ${all} s): median ${before.seconds.toFixed(3)} s before, ${after.seconds.toFixed(3)} s after (${benchItemsPerSecond.toFixed(1)} items/s; ${(benchCpuPerItem * 1000).toFixed(1)} CPU ms per item; plan ${before.algorithm})`,
      );
      console.log(
        '| batching | lines | items | seconds | items/s | of bench items/s | CPU ms per item | of bench CPU per item (lower is better) | peak RSS MiB |',
      );
      console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
      for (const { batching, summary } of runs) {
        const cpuPerItem = summary.cpu_seconds / summary.items;
        const row = {
          shape: shape.name,
          precision: args.precision,
          batching,
          lines: summary.lines,
          items: summary.items,
          seconds: summary.seconds,
          itemsPerSecond: summary.items_per_s,
          ofBench: summary.items_per_s / benchItemsPerSecond,
          cpuMsPerItem: cpuPerItem * 1000,
          cpuOfBench: cpuPerItem / benchCpuPerItem,
          maxRssBytes: summary.max_rss_bytes,
          bench: { before, after, itemsPerSecond: benchItemsPerSecond },
        };
        result.throughput.push(row);
        console.log(
          `| ${batching} | ${row.lines} | ${row.items} | ${row.seconds.toFixed(1)} | ${row.itemsPerSecond.toFixed(1)} | ${(row.ofBench * 100).toFixed(0)}% | ${row.cpuMsPerItem.toFixed(1)} | ${(row.cpuOfBench * 100).toFixed(0)}% | ${(row.maxRssBytes / 2 ** 20).toFixed(0)} |`,
        );
      }
    }
    if (!args['skip-rss']) {
      const shape = shapeOf(args['rss-shape']);
      console.log('');
      console.log(
        `peak RSS of run-batch by input length (${shape.name}: ${shape.description}; precision ${args.precision}, batching invariant, concurrency ${args.concurrency})`,
      );
      console.log('| lines | input MiB | seconds | lines/s | peak RSS MiB |');
      console.log('| --- | --- | --- | --- | --- |');
      for (const count of args['rss-lines'].split(',').map(Number)) {
        const input = path.join(tmp, `rss-${count}.jsonl`);
        writeInput(input, shape, count);
        const output = path.join(tmp, `rss-${count}.out.jsonl`);
        const summary = await runBatch(input, output, [
          '--precision',
          args.precision,
          '--batching',
          'invariant',
          '--concurrency',
          args.concurrency,
        ]);
        const row = {
          shape: shape.name,
          lines: summary.lines,
          inputBytes: fs.statSync(input).size,
          seconds: summary.seconds,
          linesPerSecond: summary.lines / summary.seconds,
          maxRssBytes: summary.max_rss_bytes,
        };
        result.rss.push(row);
        fs.rmSync(input);
        fs.rmSync(output);
        console.log(
          `| ${row.lines} | ${(row.inputBytes / 2 ** 20).toFixed(1)} | ${row.seconds.toFixed(1)} | ${row.linesPerSecond.toFixed(1)} | ${(row.maxRssBytes / 2 ** 20).toFixed(0)} |`,
        );
      }
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  console.log(`load average at end: ${loadAverage()}`);
  const dir = path.join(root, 'bench-results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'batch.json');
  // A section this run skipped keeps the last run's (with that run's machine and date beside it).
  const last = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : null;
  for (const section of ['throughput', 'rss']) {
    if (args[`skip-${section}`] && last?.[section]?.length) {
      result[section] = last[section];
      result[`${section}Machine`] = last[`${section}Machine`] ?? last.machine;
    }
  }
  fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  console.log('wrote bench-results/batch.json');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
