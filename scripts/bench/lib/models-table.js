'use strict';
// npm run bench's models section (docs/performance.md, "By model"): the rerankers' model shapes as
// random checkpoints (scripts/bench/lib/random-model.js, written once into <cache>/bench-models/<preset>),
// each rerank request of scripts/bench/lib/model-requests.js through pjrt-score ('auto' and 'highest',
// each in its own process) and the two CPU peers on the same directory (scripts/bench/lib/model-peers.js:
// PyTorch and OpenVINO, f32 and bf16, one process each), the peers checked against our 'highest'
// probabilities before they are timed. Each of our rows is compared with the faster peer in its
// precision (f32 for 'highest'; bf16 or f32 for 'auto', as it chose), with its useful GFLOP/s
// (workloads.js's usefulFlops) and its share of that precision's roof; load seconds and peak RSS of
// every process.
const fs = require('node:fs');
const path = require('node:path');
const { cacheDir } = require('../../../dist/util/cache-dir');
const { PRESETS, writeRandomModel } = require('./random-model');
const { MODEL_REQUESTS, TIMED_CALLS, modelRequest } = require('./model-requests');
const { usefulFlops } = require('./workloads');

/** The models and requests of the full table (the rerankers of docs/performance.md, "By model"). */
const MODEL_TABLE = ['qwen3_0_6b', 'qwen2_0_5b', 'qwen2_1_5b', 'gemma_2b', 'qwen3_4b'];
const PEERS = ['torch', 'openvino'];
const PEER_PRECISIONS = ['f32', 'bf16'];
const OURS = ['auto', 'highest'];

/** The random checkpoint of a preset, written once (staged, then renamed into place): its directory. */
function benchModelDir(preset, log = () => {}) {
  const dims = PRESETS[preset];
  if (!dims) throw new Error(`unknown model preset ${preset}; known: ${Object.keys(PRESETS).join(', ')}`);
  const dir = path.join(cacheDir(), 'bench-models', preset);
  if (fs.existsSync(path.join(dir, 'model.safetensors'))) return dir;
  const staging = `${dir}.partial-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  log(`writing the random ${preset} checkpoint into ${dir} (once)`);
  writeRandomModel(staging, dims);
  try {
    fs.renameSync(staging, dir);
  } catch (err) {
    fs.rmSync(staging, { recursive: true, force: true });
    if (!fs.existsSync(path.join(dir, 'model.safetensors'))) throw err;
  }
  return dir;
}

/**
 * opts: { presets, requests (names of MODEL_REQUESTS), peers (of PEERS), runJson, worker (model-worker.js),
 *   runPeer: (peer, { dir, precision, warm, timed, reference }) => peer result, log,
 *   onRow: (rows so far) => void, after each (model, request): a long run keeps what it finished }
 * Returns [{ model, request, description, items, ours: { auto, highest }, peers: { torch: { f32, bf16 }, openvino: ... } }];
 * a peer that fails (its gate, or memory) is { error } and the run goes on.
 */
function runModelsTable(opts) {
  const rows = [];
  for (const preset of opts.presets) {
    const dir = benchModelDir(preset, opts.log);
    for (const name of opts.requests) {
      const shape = MODEL_REQUESTS[name];
      if (!shape) throw new Error(`unknown model request ${name}; known: ${Object.keys(MODEL_REQUESTS).join(', ')}`);
      const ours = {};
      for (const precision of OURS) {
        const r = opts.runJson(
          process.execPath,
          [opts.worker, dir, name, precision],
          `models: ${preset} ${name} pjrt-score ${precision}`,
        );
        const gflops = usefulFlops(r.config, shape) / r.seconds / 1e9;
        ours[precision] = { ...r, gflops };
      }
      const vocab = ours.highest.config.vocabSize;
      // The peers: the check on the first timed request is their warm-up (warm: null), then the timed calls.
      const job = {
        dir,
        warm: null,
        timed: Array.from({ length: TIMED_CALLS }, (_, i) => modelRequest(shape, i + 1, vocab)),
        reference: ours.highest.scores,
      };
      const peers = {};
      for (const peer of opts.peers) {
        peers[peer] = {};
        for (const precision of PEER_PRECISIONS) {
          try {
            peers[peer][precision] = opts.runPeer(peer, { ...job, precision });
            opts.log(`models: ${preset} ${name} ${peer} ${precision}: ${peers[peer][precision].seconds.toFixed(3)} s`);
          } catch (err) {
            peers[peer][precision] = {
              error: String(err.message || err)
                .split('\n')
                .slice(-4)
                .join(' '),
            };
            opts.log(`models: ${preset} ${name} ${peer} ${precision} failed: ${peers[peer][precision].error}`);
          }
        }
      }
      for (const r of Object.values(ours)) delete r.scores;
      rows.push({
        model: preset,
        dir,
        request: name,
        description: shape.description,
        items: shape.items,
        config: ours.highest.config,
        ours,
        peers,
      });
      if (opts.onRow) opts.onRow(rows);
    }
  }
  return rows;
}

/** The precision a run of ours took, as the peers' precisions and the roofs name them. */
const precisionOf = (r) => (r.precision === 'bf16' ? 'bf16' : 'f32');

/** The faster peer in a precision: { peer, seconds } or null (none ran). */
function fasterPeer(row, precision) {
  let best = null;
  for (const [peer, byPrecision] of Object.entries(row.peers)) {
    const p = byPrecision[precision];
    if (p && Number.isFinite(p.seconds) && (!best || p.seconds < best.seconds)) best = { peer, seconds: p.seconds };
  }
  return best;
}

/**
 * Each of our rows against the faster peer of its precision and the roof of that precision (in place): the roofs
 * of the run the row came from (a merged table's row.run), else `roofs`.
 */
function compareModelsTable(rows, roofs) {
  for (const row of rows) {
    const runRoofs = row.run ? row.run.roofs : roofs;
    for (const r of Object.values(row.ours)) {
      const precision = precisionOf(r);
      const best = fasterPeer(row, precision);
      r.fasterPeer = best ? { ...best, precision } : null;
      r.ratioToFasterPeer = best ? best.seconds / r.seconds : null;
      r.roof = precision === 'bf16' ? runRoofs.bf16 : runRoofs.f32;
      r.roofFraction = r.roof ? r.gflops / r.roof : null;
    }
  }
}

function printModelsTable(rows, roofs, fmt, info) {
  const gb = (bytes) => `${fmt(bytes / 1e9, 2)} GB`;
  const s = (p) => (!p ? '-' : p.error ? 'failed' : fmt(p.seconds, 3));
  console.log('');
  console.log(
    `by model (random checkpoints of the rerankers' shapes; ${info.cpu}, ${info.cores} cores, ${info.memoryGiB} GiB; roofs: f32 ${fmt(roofs.f32)} GFLOP/s, bf16 ${roofs.bf16 ? `${fmt(roofs.bf16)} GFLOP/s` : 'not measured'}); seconds: median of ${TIMED_CALLS} fresh requests:`,
  );
  console.log(
    '| model | request | ours auto s (precision) | ours highest s | PyTorch f32 / bf16 s | OpenVINO f32 / bf16 s | auto x faster peer | highest x faster f32 peer | GFLOP/s auto / highest | of roof auto / highest |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  const ratio = (r) =>
    r.ratioToFasterPeer ? `${fmt(r.ratioToFasterPeer, 2)}x (${r.fasterPeer.peer} ${r.fasterPeer.precision})` : '-';
  const pct = (r) => (r.roofFraction ? `${fmt(100 * r.roofFraction, 0)}%` : '-');
  for (const row of rows) {
    const { auto, highest } = row.ours;
    const peer = (name) => (row.peers[name] ? `${s(row.peers[name].f32)} / ${s(row.peers[name].bf16)}` : '-');
    console.log(
      `| ${row.model} | ${row.request} (${row.description}) | ${fmt(auto.seconds, 3)} (${auto.precision}) | ${fmt(highest.seconds, 3)} | ${peer('torch')} | ${peer('openvino')} | ${ratio(auto)} | ${ratio(highest)} | ${fmt(auto.gflops, 0)} / ${fmt(highest.gflops, 0)} | ${pct(auto)} / ${pct(highest)} |`,
    );
  }
  console.log('');
  console.log('load seconds / peak RSS of each process (ours: load, then first answer with its compiles):');
  console.log(
    '| model | request | ours auto | ours highest | PyTorch f32 | PyTorch bf16 | OpenVINO f32 | OpenVINO bf16 |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  const mem = (p) => (!p ? '-' : p.error ? 'failed' : `${fmt(p.loadSeconds, 1)} s / ${gb(p.peakRssBytes)}`);
  for (const row of rows) {
    const ours = (r) => `${fmt(r.loadSeconds, 1)} s + ${fmt(r.firstSeconds, 1)} s / ${gb(r.peakRssBytes)}`;
    const peers = PEERS.flatMap((p) => PEER_PRECISIONS.map((q) => mem(row.peers[p] && row.peers[p][q])));
    console.log(
      `| ${row.model} | ${row.request} | ${ours(row.ours.auto)} | ${ours(row.ours.highest)} | ${peers.join(' | ')} |`,
    );
  }
  console.log('');
  console.log(
    "the peers' label probabilities against ours ('highest') on the first timed request, checked before they were timed (max / mean / max relative |diff|):",
  );
  console.log('| model | request | PyTorch f32 | PyTorch bf16 | OpenVINO f32 | OpenVINO bf16 |');
  console.log('| --- | --- | --- | --- | --- | --- |');
  const acc = (p) =>
    !p
      ? '-'
      : p.error
        ? `failed: ${p.error.slice(0, 160)}`
        : `${p.maxDiff.toExponential(1)} / ${p.meanDiff.toExponential(1)} / ${p.maxRelativeDiff.toExponential(1)}`;
  for (const row of rows)
    console.log(
      `| ${row.model} | ${row.request} | ${PEERS.flatMap((p) => PEER_PRECISIONS.map((q) => acc(row.peers[p] && row.peers[p][q]))).join(' | ')} |`,
    );
  const versions = new Set(
    rows.flatMap((row) =>
      Object.values(row.peers).flatMap((b) =>
        Object.values(b)
          .filter((p) => p.version)
          .map((p) => `${p.version} (${p.threads} threads)`),
      ),
    ),
  );
  if (versions.size) console.log(`peers: ${[...versions].join('; ')}`);
  const reasons = new Set(rows.map((row) => row.ours.auto.precisionReason));
  for (const reason of reasons) console.log(`precision auto: ${reason}`);
}

/** A run of the models section as a merged table names it: when, how, and the roofs it measured. */
const runOf = (report) => ({ date: report.machine.date, command: report.command, roofs: report.roofs });

/**
 * A models-only run merged into the last one (--models-merge: a shape run again after a change): its rows
 * replace the last run's rows of the same model and request, the others stay. Every row keeps the run it came
 * from (`run`: date, command, roofs; each compared with its own run's roofs), and `runs` lists the runs the
 * rows come from, oldest first. Runs on another machine (CPU, generation, cores, memory) are refused.
 */
function mergeModelsRuns(previous, current) {
  const machine = (m) => `${m.cpu} (${m.cpuGeneration}), ${m.cores} cores, ${m.memoryGiB} GiB`;
  if (machine(previous.machine) !== machine(current.machine))
    throw new Error(
      `--models-merge: bench-results/models.json ran on ${machine(previous.machine)}, this run on ` +
        `${machine(current.machine)}: a table compares one machine's runs; run the whole table here instead`,
    );
  const key = (r) => `${r.model} ${r.request}`;
  const replaced = new Set(current.rows.map(key));
  const run = runOf(current);
  const rows = [
    ...previous.rows.filter((r) => !replaced.has(key(r))).map((r) => ({ ...r, run: r.run ?? runOf(previous) })),
    ...current.rows.map((r) => ({ ...r, run })),
  ];
  const rank = (r) => [MODEL_TABLE.indexOf(r.model), Object.keys(MODEL_REQUESTS).indexOf(r.request)];
  rows.sort((a, b) => rank(a)[0] - rank(b)[0] || rank(a)[1] - rank(b)[1]);
  const runs = [...(previous.runs ?? [runOf(previous)]), run].filter((x) => rows.some((r) => r.run.date === x.date));
  return { ...current, rows, runs };
}

module.exports = {
  MODEL_TABLE,
  mergeModelsRuns,
  PEERS,
  benchModelDir,
  runModelsTable,
  compareModelsTable,
  printModelsTable,
  workerPath: path.join(__dirname, 'model-worker.js'),
};
