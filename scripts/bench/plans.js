#!/usr/bin/env node
'use strict';
// npm run bench — every scoring plan and the auto choice on the benchmark
// workloads, against the serial plan (same run) and node-llama-cpp (same GGUF,
// same machine). Writes bench-results/bench.json and bench-results/bench.svg.
//
//   node scripts/bench/plans.js [--skip-llama-cpp] [--skip-torch] [--skip-rerank] [--workloads small-10,small-100,target,gemma3-target]
//                         [--workloads-only]
//                         [--weights f32,bf16,int8,auto] [--weights-only] [--quick] [--target-items N]
//                         [--roof-rounds 3] [--roof-paths default,joint] [--roof-only]
//                         [--shapes target,pr,rag,items-100,doc] [--shapes-precision bf16,highest]
//                         [--shapes-items N] [--shapes-only]
//                         [--models qwen3_0_6b,qwen2_0_5b,qwen2_1_5b,gemma_2b,qwen3_4b] [--model-requests pr,20x128,20x512,100x128]
//                         [--model-peers torch,openvino|none] [--models-only] [--with-models] [--models-merge]
//
// The roofs: bench:runtime measures the f32 matmul roof and, where the CPU has
// bf16 matrix units (AMX, AVX512_BF16), the bf16 x bf16 -> f32 roof, before
// and after the workloads; a run in bf16 is compared with the bf16 roof.
//
// The shapes table (--shapes, default all five): the auto plan of each
// workload in each precision of --shapes-precision (default bf16 and highest: the default model is
// quantized, so 'auto' runs it in highest: docs/design.md, 'The default precision') with node-llama-cpp on each
// (scripts/bench/lib/shapes-table.js): the ratio to node-llama-cpp and the share of
// the roof of the precision it ran in. --shapes-items N cuts every workload to
// N items (a smoke run, labelled); --shapes-only runs just that table.
//
// The models section (--models, default the rerankers' five shapes; scripts/bench/lib/models-table.js):
// random checkpoints of Qwen3-0.6B, Qwen2-0.5B, Qwen2-1.5B, Gemma-2B and Qwen3-4B (written once into
// <cache>/bench-models/), each request of --model-requests through our 'auto' and 'highest' and the
// PyTorch and OpenVINO peers (f32 and bf16) on the same directory, the peers checked against ours
// first; each of ours against the faster peer of its precision, its share of the roof, load seconds
// and peak RSS. --models-only runs just that and writes bench-results/models.json (each finished row
// also to bench-results/models.partial.json as it goes); with --models-merge its rows replace those of
// the same model and request in the models.json already there, the others kept, each row with the run
// it came from (a shape run again after a change); --with-models adds it to the full run (a day
// and more on 2 cores at full size: 'pr,20x128' of --model-requests is about 3 hours there).
//
// The target workload's share of the f32 matmul roof: --roof-rounds rounds of
// its prefix plan, one process per code path of --roof-paths in each round,
// each process between two roof measurements (roof, request, roof, request,
// ..., roof; the paths' order turns round by round); each request against the
// higher roof around it, and each path's median round printed. The paths:
//   default  the platform's attention forms (on the CPU, the addon's kernels)
//   joint    the StableHLO forms the plans ran before the fused kernels (joint prefix
//            attention, square causal attention; what the CUDA plugin runs)
//   rows     the CPU's pure StableHLO forms, the kernels off (ones_own, qc4)
// so one run gives the figure before and after. --roof-only runs just that
// (with the roof before it) and skips the plans' table, rerank, start and weights.
//
// Weight precision: the auto plan with the weights in f32, bf16, int8 and
// 'auto' (which says what it chose and why), each in its own process: items/s,
// peak RSS, load time and accuracy against the f32 run (max and mean |diff| of
// the label probabilities), on the workload's random tokens and on 50 yes/no
// statements (test/fixtures/yes-no.json). --weights-only runs just that section.
//
// gemma3-target is the target shape on Gemma 3 270M Q4_K_M (the optional
// asset, fetched on first use; its query is longer than the model's 512-token
// sliding window, which the FLOP count of "of roof" takes into account):
// the same plans and node-llama-cpp on the same file. --workloads-only runs
// just the plans' table of --workloads (with the roof before and after) and
// writes bench-results/bench-workloads.json, e.g.
//   npm run bench -- --workloads gemma3-target --workloads-only
//
// --quick (or --target-items N) cuts the target workloads to 64 (N) of their
// 500 items, everywhere they run: a smoke test, labelled as such.
//
// Each case runs in its own process so its peak RSS is its own. Serial on the
// target workload and node-llama-cpp on the target workload are timed on a
// subset of the items and scaled linearly (printed as such).
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { describeMachine, machine, loadAverage } = require('../lib/machine');
const { WORKLOADS, SHAPE_TABLE, usefulFlops, serialFlopsPerItem } = require('./lib/workloads');
const { runShapesTable, printShapesTable } = require('./lib/shapes-table');
const { median } = require('../lib/median');
const { scoreDiffs: diffs } = require('../../test/helpers/yes-no');
const { llamaCppModules } = require('./lib/llama-cpp-modules');
const {
  MODEL_TABLE,
  PEERS,
  mergeModelsRuns,
  runModelsTable,
  compareModelsTable,
  printModelsTable,
  workerPath: modelWorker,
} = require('./lib/models-table');
const { MODEL_REQUESTS } = require('./lib/model-requests');
const { PRESETS } = require('./lib/random-model');

const root = path.join(__dirname, '..', '..');
const resultsDir = path.join(root, 'bench-results');
const { values: args } = parseArgs({
  options: {
    'skip-llama-cpp': { type: 'boolean', default: false },
    'skip-torch': { type: 'boolean', default: false },
    workloads: { type: 'string', default: 'small-10,small-100,target,gemma3-target' },
    'workloads-only': { type: 'boolean', default: false },
    'serial-subset': { type: 'string', default: '8' },
    'llama-cpp-subset': { type: 'string', default: '40' },
    'chart-only': { type: 'boolean', default: false },
    'skip-rerank': { type: 'boolean', default: false },
    weights: { type: 'string', default: 'f32,bf16,int8,auto' },
    'weights-only': { type: 'boolean', default: false },
    quick: { type: 'boolean', default: false },
    'target-items': { type: 'string' },
    'roof-rounds': { type: 'string', default: '3' },
    'roof-paths': { type: 'string', default: 'default,joint' },
    'roof-only': { type: 'boolean', default: false },
    shapes: { type: 'string', default: SHAPE_TABLE.join(',') },
    'shapes-precision': { type: 'string', default: 'bf16,highest' },
    'shapes-items': { type: 'string' },
    'shapes-only': { type: 'boolean', default: false },
    models: { type: 'string', default: MODEL_TABLE.join(',') },
    'model-requests': { type: 'string', default: Object.keys(MODEL_REQUESTS).join(',') },
    'model-peers': { type: 'string', default: PEERS.join(',') },
    'models-only': { type: 'boolean', default: false },
    'with-models': { type: 'boolean', default: false },
    'models-merge': { type: 'boolean', default: false },
  },
});

/** Items of the target workload this run scores (all 500 unless --quick or --target-items). */
function targetItems() {
  const n =
    args['target-items'] !== undefined ? Number(args['target-items']) : args.quick ? 64 : WORKLOADS.target.items; // gemma3-target has the same 500
  if (!(Number.isInteger(n) && n >= 1 && n <= WORKLOADS.target.items))
    throw new Error(`--target-items must be an integer in [1, ${WORKLOADS.target.items}], got ${args['target-items']}`);
  return n;
}

function runJson(command, argv, label, env = {}) {
  process.stderr.write(`[bench] ${label} ...\n`);
  const started = Date.now();
  const r = spawnSync(command, argv, {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    maxBuffer: 1 << 26,
  });
  if (r.status !== 0) throw new Error(`${label} failed (exit ${r.status}):\n${r.stderr.slice(-3000)}`);
  const line = r.stdout.trim().split('\n').pop();
  process.stderr.write(`[bench] ${label}: done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  return JSON.parse(line);
}

/** The f32 and (where the CPU has bf16 matrix units) bf16 roofs, measured now by bench:runtime: { f32, bf16 | null }. */
function roofs() {
  const f32 = roof();
  const r = JSON.parse(fs.readFileSync(path.join(resultsDir, 'runtime.json'), 'utf8'));
  return { f32, bf16: r.bf16RoofGflops ?? null };
}

/** The f32 matmul roof, measured now by bench:runtime (never an older run's: the machine's load and CPU change). */
function roof() {
  const file = path.join(resultsDir, 'runtime.json');
  const r = spawnSync(process.execPath, [path.join(__dirname, 'runtime.js')], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`bench:runtime failed (exit ${r.status}): no roof to compare against`);
  return JSON.parse(fs.readFileSync(file, 'utf8')).roofGflops;
}

/** The model file a workload runs on: its own asset (fetched on first use) or the bench's model. */
async function workloadModel(w, modelPath) {
  if (w.model === 'gemma3-270m') return require('../../dist/assets').fetchGemma3Model();
  return modelPath;
}

/** The workloads table: each plan's items/s, against serial, node-llama-cpp and the roof. */
function printWorkloadRows(results) {
  console.log('| workload | method | items/s | seconds | x serial | x node-llama-cpp | peak RSS | GFLOP/s | of roof |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const r of results) {
    for (const [name, p] of Object.entries(r.plans)) {
      const label = name === 'auto' ? `auto (${p.algorithm})` : name;
      console.log(
        `| ${r.workload.name} | ${label}${p.scaled ? ` [${p.timedItems} items timed, scaled]` : ''} | ${fmt(p.itemsPerSecond)} | ${fmt(p.seconds)} | ${fmt(p.speedupOverSerial)} | ${p.ratioToLlamaCpp ? fmt(p.ratioToLlamaCpp, 2) : '-'} | ${fmt(p.peakRssGB, 2)} GB | ${fmt(p.gflops, 0)} | ${fmt(100 * p.roofFraction, 0)}% |`,
      );
    }
    if (r.llamaCpp) {
      const l = r.llamaCpp;
      console.log(
        `| ${r.workload.name} | node-llama-cpp${l.scaled ? ` [${l.timedItems} items timed, scaled]` : ''} | ${fmt(l.itemsPerSecond, 2)} | ${fmt(l.seconds)} | ${fmt(r.plans.serial.seconds / l.seconds)} | 1.00 | ${fmt(l.peakRssGB, 2)} GB | - | - |`,
      );
    }
  }
}

function fmt(x, digits = 1) {
  return Number.isFinite(x) ? x.toFixed(digits) : '-';
}

async function main() {
  const info = machine();
  const roofRounds = checkedRoofRounds();
  if (args['models-merge'] && !args['models-only'])
    throw new Error('--models-merge merges a --models-only run into bench-results/models.json: add --models-only');
  if (args['roof-only'] && !args.workloads.split(',').includes('target'))
    throw new Error('--roof-only times the target workload: leave it in --workloads');
  console.log(`machine: ${describeMachine()}`);
  const ownRoofs = args['weights-only'] || args['models-only']; // the models section measures its own, in both precisions
  const roofBefore = ownRoofs ? NaN : roof();
  if (!ownRoofs)
    console.log(
      `matmul roof (bench:runtime, measured in this run, before the workloads): ${roofBefore.toFixed(1)} GFLOP/s`,
    );
  const workloads = args.workloads.split(',').map((w) => {
    if (!WORKLOADS[w]) throw new Error(`unknown workload ${w}; known: ${Object.keys(WORKLOADS).join(', ')}`);
    // A cut target workload keeps its name (the worker's shapes) with fewer items; its description says so.
    const items = w === 'target' || w === 'gemma3-target' ? targetItems() : WORKLOADS[w].items;
    return items === WORKLOADS[w].items
      ? WORKLOADS[w]
      : { ...WORKLOADS[w], items, description: `${WORKLOADS[w].description}, cut to ${items} items (--quick)` };
  });
  for (const w of workloads) if (w.items < WORKLOADS[w.name].items) console.log(`note: ${w.description}`);
  const { DEFAULT_MODEL } = require('../../dist/model/default-model');
  const modelPath = process.env.PJRT_SCORE_MODEL || DEFAULT_MODEL.destination;
  const worker = path.join(__dirname, 'lib', 'pjrt-worker.js');
  if (args['roof-only']) {
    const target = workloads.find((w) => w.name === 'target');
    const share = roofShare(target, worker, roofRounds, roofBefore);
    printRoofShare(share);
    fs.mkdirSync(resultsDir, { recursive: true });
    fs.writeFileSync(
      path.join(resultsDir, 'roof-share.json'),
      `${JSON.stringify({ machine: info, roofShare: share, command: `npm run bench -- ${process.argv.slice(2).join(' ')}` }, null, 2)}\n`,
    );
    console.log('wrote bench-results/roof-share.json');
    return;
  }
  if (args['models-only']) {
    const plan = modelsPlan();
    console.log(`load average before the models: ${loadAverage()}`);
    const file = path.join(resultsDir, 'models.json');
    const command = `npm run bench -- ${process.argv.slice(2).join(' ')}`;
    // The run to merge into, read (and its machine checked) before anything slow runs.
    const previous = args['models-merge'] ? JSON.parse(fs.readFileSync(file, 'utf8')) : null;
    if (previous) mergeModelsRuns(previous, { machine: info, roofs: {}, rows: [], command });
    const table = modelsTable(plan, info);
    console.log(`load average after the models: ${loadAverage()}`);
    fs.mkdirSync(resultsDir, { recursive: true });
    const report = { machine: info, ...table, command };
    const merged = previous ? mergeModelsRuns(previous, report) : report;
    fs.writeFileSync(file, `${JSON.stringify(merged, null, 2)}\n`);
    console.log(`wrote bench-results/models.json${args['models-merge'] ? ' (merged into the last run)' : ''}`);
    return;
  }
  if (args['shapes-only']) {
    const table = shapesTable(worker, modelPath);
    fs.mkdirSync(resultsDir, { recursive: true });
    fs.writeFileSync(
      path.join(resultsDir, 'shapes.json'),
      `${JSON.stringify({ machine: info, ...table, command: `npm run bench -- ${process.argv.slice(2).join(' ')}` }, null, 2)}\n`,
    );
    console.log('wrote bench-results/shapes.json');
    return;
  }
  const models = args['workloads-only'] || args['weights-only'] || !args['with-models'] ? null : modelsPlan(); // checked before anything slow runs
  const weightRows = args['workloads-only']
    ? []
    : weightPrecision(
        workloads.filter((w) => !w.model),
        worker,
      );
  const results = [];
  for (const w of args['weights-only'] ? [] : workloads) {
    const rows = {};
    const wModel = await workloadModel(w, modelPath);
    const modelEnv = w.model ? { PJRT_SCORE_MODEL: wModel } : {};
    for (const algorithm of ['serial', 'packed', 'prefix', 'auto']) {
      const subset =
        algorithm === 'serial' && w.items > 50 ? Math.min(w.items, Number(args['serial-subset'])) : w.items;
      const r = runJson(
        process.execPath,
        [worker, w.name, algorithm, String(subset)],
        `${w.name} ${algorithm}${subset < w.items ? ` (${subset} of ${w.items} items)` : ''}`,
        modelEnv,
      );
      const perItem = r.seconds / r.items;
      const seconds = perItem * w.items; // linear scaling when timed on a subset
      const flops = algorithm === 'serial' ? serialFlopsPerItem(r.config, w) * w.items : usefulFlops(r.config, w);
      rows[algorithm] = {
        algorithm: r.algorithm,
        weights: r.weights,
        autoReason: r.autoReason,
        timedItems: r.items,
        scaled: r.items < w.items,
        seconds,
        itemsPerSecond: w.items / seconds,
        peakRssGB: r.peakRssBytes / 1e9,
        gflops: flops / seconds / 1e9,
        compileAndFirstSeconds: r.firstSeconds,
      };
    }
    let llama;
    if (!args['skip-llama-cpp']) {
      const subset = w.items > 50 ? Math.min(w.items, Number(args['llama-cpp-subset'])) : w.items;
      const r = runJson(
        process.execPath,
        [path.join(__dirname, 'lib', 'llama-cpp-worker.mjs'), llamaCppModules(), wModel, w.name, String(subset)],
        `${w.name} node-llama-cpp${subset < w.items ? ` (${subset} of ${w.items} items)` : ''}`,
      );
      const seconds = r.querySeconds + (r.itemSeconds / r.items) * w.items;
      llama = {
        timedItems: r.items,
        scaled: r.items < w.items,
        seconds,
        itemsPerSecond: w.items / seconds,
        peakRssGB: r.peakRssBytes / 1e9,
      };
    }
    const serialSeconds = rows.serial.seconds;
    for (const row of Object.values(rows)) row.speedupOverSerial = serialSeconds / row.seconds;
    for (const row of Object.values(rows)) row.ratioToLlamaCpp = llama ? llama.seconds / row.seconds : undefined;
    results.push({ workload: w, plans: rows, llamaCpp: llama });
  }

  if (args['weights-only']) {
    printWeightRows(weightRows, info);
    return;
  }

  // The roof again after the workloads: "of roof" is against the higher of the two, so a slow moment
  // of a shared machine during one roof measurement cannot flatter the plans.
  const roofAfter = roof();
  const roofGflops = Math.max(roofBefore, roofAfter);
  console.log(
    `matmul roof after the workloads: ${roofAfter.toFixed(1)} GFLOP/s; "of roof" below is against ${roofGflops.toFixed(1)}`,
  );
  for (const r of results) for (const p of Object.values(r.plans)) p.roofFraction = p.gflops / roofGflops;
  if (args['workloads-only']) {
    console.log('');
    printWorkloadRows(results);
    console.log(
      'serial and node-llama-cpp on 500-item workloads are timed on a subset of the items and scaled linearly.',
    );
    fs.mkdirSync(resultsDir, { recursive: true });
    const report = {
      machine: info,
      roofGflops,
      roofMeasurements: { before: roofBefore, after: roofAfter },
      results,
      command: `npm run bench -- ${process.argv.slice(2).join(' ')}`,
    };
    fs.writeFileSync(
      path.join(resultsDir, 'bench-workloads.json'),
      `${JSON.stringify(report, null, 2)}
`,
    );
    console.log('wrote bench-results/bench-workloads.json');
    return;
  }
  const target = workloads.find((w) => w.name === 'target');
  const share = target ? roofShare(target, worker, roofRounds, roofAfter) : null;

  const shapes = args.shapes ? shapesTable(worker, modelPath) : null;
  const modelRows = models ? modelsTable(models, info) : null;

  // Rerank: our one-plan rerank against each document as its own sequence, in one run.
  const rerank = args['skip-rerank']
    ? null
    : runJson(
        process.execPath,
        [path.join(__dirname, 'rerank.js')],
        'rerank: 30-token query, 100 x 200 and 20 x 1000-token documents',
      );

  // Cold and warm start: a restarted service, from `serve` to the answer of its
  // first request (small-10), with an empty and then a filled executable cache.
  const os = require('node:os');
  const startCache = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-bench-start-'));
  const startWorker = path.join(__dirname, 'lib', 'service-start.js');
  const cold = runJson(process.execPath, [startWorker, startCache], 'service cold start (empty executable cache)');
  const warm = runJson(process.execPath, [startWorker, startCache], 'service warm start (executable cache filled)');
  fs.rmSync(startCache, { recursive: true, force: true });

  console.log('');
  printWorkloadRows(results);
  if (share) printRoofShare(share);
  if (shapes) printShapesTable(shapes.rows, shapes.roofs, fmt, shapes.peers);
  if (modelRows) printModelsTable(modelRows.rows, modelRows.roofs, fmt, info);
  if (rerank) {
    console.log('');
    console.log(`rerank (template ${rerank.template}; the same request both ways, one run):`);
    console.log(
      '| documents | prompt + document tokens | our rerank (plan) | each document alone (serial) | speed-up | max relevance diff |',
    );
    console.log('| --- | --- | --- | --- | --- | --- |');
    for (const c of rerank.cases) {
      console.log(
        `| ${c.documents} x ~${c.documentTokens} tokens | ${c.promptTokens} + ${fmt(c.itemTokensMean, 0)} | ${fmt(c.seconds, 2)} s (${c.plan}) | ${fmt(c.serialSeconds, 2)} s | ${fmt(c.speedup, 2)}x | ${c.maxRelevanceDiff.toExponential(1)} |`,
      );
    }
  }
  console.log('');
  console.log(
    `service start to first answered request (small-10): cold ${fmt(cold.seconds, 2)} s (${cold.compiles} compiles), warm ${fmt(warm.seconds, 2)} s (${warm.compiles} compiles)`,
  );
  for (const [name, r] of [
    ['cold', cold],
    ['warm', warm],
  ]) {
    if (r.steps)
      console.log(
        `  ${name} start, by step: ${Object.entries(r.steps)
          .map(([k, v]) => `${k} ${fmt(v, 2)} s`)
          .join(', ')}`,
      );
  }
  printWeightRows(weightRows, info);
  console.log(
    'serial on the target workload and node-llama-cpp on the target workload are timed on a subset of the items and scaled linearly.',
  );

  fs.mkdirSync(resultsDir, { recursive: true });
  const report = {
    machine: info,
    roofGflops,
    roofMeasurements: { before: roofBefore, after: roofAfter },
    results,
    roofShare: share,
    shapes,
    models: modelRows,
    rerank,
    start: { cold, warm },
    weights: weightRows,
    command: 'npm run bench',
  };
  fs.writeFileSync(path.join(resultsDir, 'bench.json'), `${JSON.stringify(report, null, 2)}\n`);
  writeChart(report);
  console.log('wrote bench-results/bench.json and bench-results/bench.svg');
}

/**
 * The shapes table: the roofs (f32, and bf16 where the CPU has bf16 matrix units) around it, each
 * workload of --shapes in each precision of --shapes-precision with node-llama-cpp on each; printed at
 * once with --shapes-only. Every fraction is against the higher roof of its precision.
 */
function shapesTable(worker, modelPath) {
  const names = args.shapes.split(',').filter(Boolean);
  for (const n of names)
    if (!WORKLOADS[n]) throw new Error(`--shapes: unknown workload ${n}; known: ${Object.keys(WORKLOADS).join(', ')}`);
  const precisions = args['shapes-precision'].split(',').filter(Boolean);
  for (const p of precisions)
    if (!['auto', 'highest', 'bf16', 'default'].includes(p))
      throw new Error(`--shapes-precision: ${p} is not a precision`);
  if (!args['skip-torch'] && !precisions.includes('highest'))
    throw new Error(
      '--shapes-precision must include highest: the PyTorch peer is checked against it before it is timed (or pass --skip-torch)',
    );
  const itemLimit = args['shapes-items'] !== undefined ? Number(args['shapes-items']) : null;
  if (itemLimit !== null && !(Number.isInteger(itemLimit) && itemLimit >= 1))
    throw new Error(`--shapes-items must be a positive integer, got ${args['shapes-items']}`);
  const before = roofs();
  console.log(
    `roofs before the shapes: f32 ${fmt(before.f32)} GFLOP/s, bf16 ${before.bf16 ? `${fmt(before.bf16)} GFLOP/s` : 'not measured (no bf16 matrix units)'}`,
  );
  // node-llama-cpp scores items one by one: over 50 items it is timed on --llama-cpp-subset of them and
  // its per-item time scaled linearly (as in the plans' table).
  const llama = (w, items) => {
    if (args['skip-llama-cpp']) return null;
    const timed = items > 50 ? Math.min(items, Number(args['llama-cpp-subset'])) : items;
    const r = runJson(
      process.execPath,
      [path.join(__dirname, 'lib', 'llama-cpp-worker.mjs'), llamaCppModules(), modelPath, w.name, String(timed)],
      `shapes: ${w.name} node-llama-cpp (${timed} of ${items} items)`,
    );
    return { ...r, itemSeconds: (r.itemSeconds / r.items) * items, timedItems: r.items, scaled: r.items < items };
  };
  // The PyTorch peer: one Python process per workload (f32 and bf16), checked against our 'highest' run first.
  const torch = (w, items, reference) => {
    if (args['skip-torch']) return null;
    const { runTorchPeer } = require('./lib/torch-peer');
    process.stderr.write(`[bench] shapes: ${w.name} PyTorch peer (f32, bf16; ${items} items) ...\n`);
    const r = runTorchPeer({ modelPath, workload: w, items, reference });
    process.stderr.write(
      `[bench] shapes: ${w.name} PyTorch peer: f32 ${fmt(r.f32.seconds, 3)} s, bf16 ${fmt(r.bf16.seconds, 3)} s\n`,
    );
    return r;
  };
  const { rows, peers } = runShapesTable({
    runJson,
    worker,
    llama,
    torch,
    roofs: before,
    shapes: names,
    precisions,
    itemLimit,
  });
  const after = roofs();
  const best = {
    f32: Math.max(before.f32, after.f32),
    bf16: before.bf16 && after.bf16 ? Math.max(before.bf16, after.bf16) : null,
  };
  for (const r of rows) {
    r.roof = r.precision === 'bf16' ? best.bf16 : best.f32;
    r.roofFraction = r.roof ? r.gflops / r.roof : null;
  }
  const table = { roofs: best, roofMeasurements: { before, after }, rows, peers, itemLimit };
  if (args['shapes-only']) printShapesTable(rows, best, fmt, peers);
  return table;
}

/** --models, --model-requests and --model-peers, checked: { presets, requests, peers }. */
function modelsPlan() {
  const list = (name) => args[name].split(',').filter(Boolean);
  const presets = list('models');
  for (const p of presets)
    if (!PRESETS[p]) throw new Error(`--models: unknown preset ${p}; known: ${Object.keys(PRESETS).join(', ')}`);
  const requests = list('model-requests');
  for (const r of requests)
    if (!MODEL_REQUESTS[r])
      throw new Error(`--model-requests: unknown request ${r}; known: ${Object.keys(MODEL_REQUESTS).join(', ')}`);
  const peers = args['model-peers'] === 'none' ? [] : list('model-peers');
  for (const p of peers)
    if (!PEERS.includes(p)) throw new Error(`--model-peers: unknown peer ${p}; known: ${PEERS.join(', ')} (or none)`);
  if (!presets.length || !requests.length) throw new Error('--models and --model-requests must each name at least one');
  return { presets, requests, peers };
}

/**
 * The models section between two roof measurements: every fraction against the higher roof of its
 * precision; printed at once with --models-only. The OpenVINO graph of each checkpoint is exported
 * (once, kept beside it) before its first OpenVINO run, its seconds recorded apart from the load.
 */
function modelsTable({ presets, requests, peers }, info) {
  const { runTorchModelPeer, runOpenvinoPeer, openvinoIr } = require('./lib/model-peers');
  const before = roofs();
  console.log(
    `roofs before the models: f32 ${fmt(before.f32)} GFLOP/s, bf16 ${before.bf16 ? `${fmt(before.bf16)} GFLOP/s` : 'not measured (no bf16 matrix units)'}`,
  );
  const openvinoExports = {};
  const runPeer = (peer, job) => {
    if (peer === 'torch') return runTorchModelPeer(job);
    if (!(job.dir in openvinoExports)) openvinoExports[job.dir] = openvinoIr(job.dir).exportSeconds;
    return runOpenvinoPeer(job);
  };
  const log = (m) => process.stderr.write(`[bench] ${m}\n`);
  // Each finished row goes to bench-results/models.partial.json at once (the whole section runs for hours).
  const partial = path.join(resultsDir, 'models.partial.json');
  const onRow = (done) => {
    fs.mkdirSync(resultsDir, { recursive: true });
    fs.writeFileSync(
      partial,
      `${JSON.stringify({ machine: info, roofsBefore: before, rows: done, openvinoExportSeconds: openvinoExports }, null, 2)}\n`,
    );
  };
  const rows = runModelsTable({ presets, requests, peers, runJson, worker: modelWorker, runPeer, log, onRow });
  fs.rmSync(partial, { force: true });
  const after = roofs();
  const best = {
    f32: Math.max(before.f32, after.f32),
    bf16: before.bf16 && after.bf16 ? Math.max(before.bf16, after.bf16) : null,
  };
  compareModelsTable(rows, best);
  if (args['models-only']) printModelsTable(rows, best, fmt, info);
  return { roofs: best, roofMeasurements: { before, after }, rows, openvinoExportSeconds: openvinoExports };
}

/** The code paths --roof-paths can name: the worker's attention-form arguments (prefix, causal; '-': the platform's). */
const ROOF_PATHS = {
  default: { forms: ['-', '-'], label: "the platform's forms (CPU: the addon's kernels)" },
  joint: { forms: ['joint', 'square'], label: 'StableHLO joint + square (the forms before the fused kernels)' },
  rows: { forms: ['ones_own', 'qc4'], label: "the CPU's pure StableHLO forms (kernels off)" },
};

/** --roof-rounds and --roof-paths, checked (before anything slow runs): { rounds, paths }. */
function checkedRoofRounds() {
  const rounds = Number(args['roof-rounds']);
  if (!(Number.isInteger(rounds) && rounds >= 1))
    throw new Error(`--roof-rounds must be a positive integer, got ${args['roof-rounds']}`);
  const paths = args['roof-paths'].split(',').filter(Boolean);
  for (const p of paths)
    if (!ROOF_PATHS[p])
      throw new Error(`unknown --roof-paths entry ${JSON.stringify(p)}; known: ${Object.keys(ROOF_PATHS).join(', ')}`);
  if (paths.length === 0 || new Set(paths).size !== paths.length)
    throw new Error(`--roof-paths must name one or more distinct paths, got ${JSON.stringify(args['roof-paths'])}`);
  return { rounds, paths };
}

/**
 * The target workload's prefix plan against the roof, interleaved: roof, request, roof, request,
 * ..., roof, each request in its own process, one per code path in each round (their order turning
 * round by round). A request's share is its useful GFLOP/s over the higher of the roofs measured
 * just before and just after it, so a slow stretch of a shared machine falls on the request and its
 * roofs alike; each path's median round is its figure.
 */
function roofShare(w, worker, { rounds, paths }, firstRoof) {
  let roofGflops = firstRoof;
  const rows = [];
  for (let i = 0; i < rounds; i++) {
    for (let j = 0; j < paths.length; j++) {
      const name = paths[(i + j) % paths.length];
      const r = runJson(
        process.execPath,
        [worker, w.name, 'prefix', String(w.items), 'f32', ...ROOF_PATHS[name].forms],
        `${w.name} prefix (${name}) against the roof, round ${i + 1} of ${rounds}`,
      );
      const roofBefore = roofGflops;
      roofGflops = roof();
      const gflops = usefulFlops(r.config, w) / r.seconds / 1e9;
      rows.push({
        round: i + 1,
        path: name,
        seconds: r.seconds,
        cpuSeconds: r.cpuSeconds,
        gflops,
        roofBefore,
        roofAfter: roofGflops,
        fraction: gflops / Math.max(roofBefore, roofGflops),
      });
    }
  }
  const byPath = paths.map((name) => {
    const own = rows.filter((r) => r.path === name);
    return {
      path: name,
      label: ROOF_PATHS[name].label,
      medianFraction: median(own.map((r) => r.fraction)),
      medianSeconds: median(own.map((r) => r.seconds)),
    };
  });
  return { workload: w, rounds: rows, paths: byPath };
}

function printRoofShare(share) {
  console.log('');
  console.log(
    `${share.workload.name} (${share.workload.description}), prefix plan, f32, against the matmul roof measured around each request:`,
  );
  console.log('| round | code path | seconds | useful GFLOP/s | roof before | roof after | of roof (the higher) |');
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const r of share.rounds)
    console.log(
      `| ${r.round} | ${r.path} | ${fmt(r.seconds, 2)} | ${fmt(r.gflops)} | ${fmt(r.roofBefore)} | ${fmt(r.roofAfter)} | ${fmt(100 * r.fraction)}% |`,
    );
  console.log('');
  console.log('| code path | what it runs | median seconds | median share of the roof |');
  console.log('| --- | --- | --- | --- |');
  for (const p of share.paths)
    console.log(`| ${p.path} | ${p.label} | ${fmt(p.medianSeconds, 2)} | ${fmt(100 * p.medianFraction)}% |`);
}

/** Each weight type on each workload (auto plan), in its own process; accuracy against the f32 run. */
function weightPrecision(workloads, worker) {
  const types = args.weights.split(',').filter(Boolean);
  const rows = [];
  for (const w of workloads) {
    let reference;
    for (const weights of types) {
      const r = runJson(
        process.execPath,
        [worker, w.name, 'auto', String(w.items), weights],
        `${w.name} weights ${weights}`,
        { BENCH_ALL_SCORES: '1' },
      );
      if (weights === 'f32') reference = r;
      const accuracy = reference && r.scores ? diffs(r.scores, reference.scores) : undefined;
      const yesNoAccuracy = reference && r.yesNoScores ? diffs(r.yesNoScores, reference.yesNoScores) : undefined;
      rows.push({
        workload: w.name,
        requested: weights,
        weights: r.weights,
        reason: r.weightsReason,
        items: r.items,
        seconds: r.seconds,
        itemsPerSecond: r.items / r.seconds,
        peakRssGB: r.peakRssBytes / 1e9,
        weightGB: r.weightBytes / 1e9,
        loadSeconds: r.loadSeconds,
        accuracyVsF32: accuracy,
        yesNoAccuracyVsF32: yesNoAccuracy,
      });
    }
  }
  return rows;
}

function printWeightRows(rows, info) {
  if (!rows.length) return;
  console.log('');
  console.log(
    `weight precision (auto plan; ${info.cpu} (${info.cpuFlags.join(' ')}); accuracy: max / mean |diff| of label probabilities against the f32 run, on the workload's random tokens and on 50 yes/no statements):`,
  );
  console.log(
    '| workload | weights | items/s | peak RSS | weights on device | load | vs f32 (workload) | vs f32 (yes/no) |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  const acc = (a) => (a ? `${a.max.toExponential(1)} / ${a.mean.toExponential(1)}` : '-');
  for (const r of rows) {
    const label = r.requested === 'auto' ? `auto -> ${r.weights}` : r.weights;
    console.log(
      `| ${r.workload} (${r.items} items) | ${label} | ${fmt(r.itemsPerSecond)} | ${fmt(r.peakRssGB, 2)} GB | ${fmt(r.weightGB, 2)} GB | ${fmt(r.loadSeconds, 2)} s | ${acc(r.accuracyVsF32)} | ${acc(r.yesNoAccuracyVsF32)} |`,
    );
  }
  const auto = rows.find((r) => r.requested === 'auto');
  if (auto) console.log(`auto chose ${auto.weights}: ${auto.reason}`);
}

/** The chart bench-results/README.md shows, from a bench.json report. */
function writeChart(report) {
  const { barChart } = require('./lib/chart');
  const { machine: info, results } = report;
  const colors = { serial: '#bbb', packed: '#6a9fd8', prefix: '#2f6db5', auto: '#14427a', llama: '#d9822b' };
  const svg = barChart({
    title: 'pjrt-score: items scored per second (SmolLM2-135M, XLA CPU plugin)',
    subtitle: `${info.cpu}, ${info.cores} cores, ${info.memoryGiB} GiB; ${info.date.slice(0, 10)}; npm run bench`,
    unit: 'items/s',
    groups: results.map((r) => ({
      label: `${r.workload.queryTokens}-token query\n${r.workload.items} items x ${r.workload.itemTokens} tokens`,
      bars: [
        ...Object.entries(r.plans).map(([name, p]) => ({
          label: name === 'auto' ? `auto (${p.algorithm})` : name,
          value: p.itemsPerSecond,
          color: colors[name],
        })),
        ...(r.llamaCpp ? [{ label: 'node-llama-cpp', value: r.llamaCpp.itemsPerSecond, color: colors.llama }] : []),
      ],
    })),
  });
  fs.writeFileSync(path.join(resultsDir, 'bench.svg'), svg);
}

if (process.argv.includes('--chart-only')) {
  writeChart(JSON.parse(fs.readFileSync(path.join(resultsDir, 'bench.json'), 'utf8')));
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
