'use strict';
// One benchmark case in its own process (so peak RSS is its own):
//   node pjrt-worker.js <workload> <algorithm> [itemLimit] [weights] [prefixAttention] [causalAttention]
// weights: f32 (default), bf16, int8 or auto (the Scorer's `weights` option).
// prefixAttention: joint, ones_own (the rows form, lib/hlo/attention/prefix-rows.ts) or ffi (the
// addon's kernel); causalAttention: square, qc<chunks> or ffi (the
// addon's kernel) (default, or '-': the platform's).
// BENCH_PRECISION: the Scorer's `precision` option (highest by default; bf16, auto).
// Scores one request to compile (untimed), then a fresh request of the same
// shape (timed). The prefix cache is off, so every request pays its query.
// BENCH_ALL_SCORES=1: also every score of the timed request, and the scores
// of the 50 yes/no statements of test/fixtures/yes-no.json (real text, for
// accuracy between weight types; untimed, after the timed request).
// BENCH_TIMED_SCORES=1: also every score of the timed request (the PyTorch peer's check).
const { Scorer } = require('../../../dist');
const { parseCausalAttentionTag, parsePrefixAttentionTag } = require('../../../dist/hlo');
const { WORKLOADS, request } = require('./workloads');

function peakRssBytes() {
  const status = require('node:fs').readFileSync('/proc/self/status', 'utf8');
  const m = /VmHWM:\s+(\d+) kB/.exec(status);
  return m ? Number(m[1]) * 1024 : process.resourceUsage().maxRSS * 1024;
}

async function main() {
  const [workloadName, algorithm, limitArg] = process.argv.slice(2);
  const workload = WORKLOADS[workloadName];
  const itemLimit = limitArg ? Number(limitArg) : workload.items;
  const weights = process.argv[5] || 'f32';
  const [prefixForm, causalForm] = [process.argv[6], process.argv[7]].map((x) => (x === '-' ? undefined : x));
  const attention = {
    ...(prefixForm ? { prefixAttention: parsePrefixAttentionTag(prefixForm) } : {}),
    ...(causalForm ? { causalAttention: parseCausalAttentionTag(causalForm) } : {}),
  };
  let loaded = {};
  const precision = process.env.BENCH_PRECISION || 'highest';
  const scorer = await Scorer.load({
    algorithm,
    weights,
    precision,
    ...attention,
    prefixCacheBytes: 0,
    maxItems: 100000,
    maxRequestTokens: 1e7,
    log: (e) => e.event === 'model_loaded' && (loaded = e),
  });
  const warm = request(workload, 0, itemLimit);
  const t0 = performance.now();
  await scorer.score(warm);
  const firstSeconds = (performance.now() - t0) / 1000;
  const timed = request(workload, 1, itemLimit);
  const chosen = scorer.explain(timed);
  const t1 = performance.now();
  const cpu0 = process.cpuUsage();
  const result = await scorer.score(timed);
  const seconds = (performance.now() - t1) / 1000;
  const cpu = process.cpuUsage(cpu0);
  // Read before the yes/no request, so the peak is the workload's own.
  const peak = peakRssBytes();
  const yesNo = process.env.BENCH_ALL_SCORES
    ? (await scorer.score(require('../../../test/helpers/yes-no').yesNoRequest())).scores
    : undefined;
  const out = {
    workload: workloadName,
    algorithm: result.algorithm,
    requested: algorithm,
    autoReason: algorithm === 'auto' ? chosen.reason : undefined,
    items: timed.items.length,
    seconds,
    // CPU seconds of this process (all threads) for the timed request: comparable on a shared machine.
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    firstSeconds,
    peakRssBytes: peak,
    config: scorer.config,
    firstScores: result.scores[0],
    scores: process.env.BENCH_ALL_SCORES || process.env.BENCH_TIMED_SCORES ? result.scores : undefined,
    yesNoScores: yesNo,
    weights: scorer.weightType,
    precision: scorer.precision,
    precisionReason: scorer.precisionChoice.reason,
    attentionKernel: scorer.attentionKernel(),
    prefixAttention: scorer.prefixAttention,
    causalAttention: scorer.causalAttention,
    weightsReason: scorer.weightChoice.reason,
    weightBytes: loaded.weightBytes,
    loadSeconds: loaded.seconds,
    jit: scorer.stats().jit,
  };
  scorer.dispose();
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
