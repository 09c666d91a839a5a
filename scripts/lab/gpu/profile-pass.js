'use strict';
/**
 * One configuration's target pass (or, --workload pr, one cross-request pass
 * of the PR workload's 8 requests), run three times after the load, for a
 * kernel profiler to time (scripts/lab/gpu/h100-run.sh runs it under Nsight
 * Compute with one metric, gpu__time_duration, and
 * scripts/lab/gpu/kernel-table.py splits the last pass out of the trace):
 *
 *   node scripts/lab/gpu/profile-pass.js --model DIR --inputs FILE [--plugin SO]
 *        [--precision bf16] [--weights bf16] [--prefix-attention cudnn]
 *        [--causal-attention cudnn] [--algorithm packed|prefix] [--workload target|pr] [--disk-cache DIR]
 *
 * With the disk cache of a bench:gpu run, the programs load without
 * compiling (no autotuning kernels in the trace). Prints the wall time of
 * each pass (under a profiler, the profiler's time, not the pass's).
 */
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..', '..', '..');
const { Scorer } = require(path.join(root, 'dist'));
const { parseCausalAttentionTag, parsePrefixAttentionTag } = require(path.join(root, 'dist', 'hlo'));
const { benchScorerOptions } = require(path.join(__dirname, 'scorer-options'));

function args(argv) {
  const out = { precision: 'bf16', weights: 'bf16', algorithm: 'packed', workload: 'target' };
  for (let i = 0; i < argv.length; i += 2)
    out[argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase())] = argv[i + 1];
  for (const k of ['model', 'inputs']) if (!out[k]) throw new Error(`--${k} is required`);
  return out;
}

async function main() {
  const a = args(process.argv.slice(2));
  const inputs = JSON.parse(fs.readFileSync(a.inputs, 'utf8'));
  if (!['target', 'pr'].includes(a.workload)) throw new Error(`--workload is target or pr, got ${a.workload}`);
  const scorer = await Scorer.load({
    ...benchScorerOptions(a),
    ...(a.workload === 'pr' ? { batching: 'cross-request' } : {}),
    ...(a.prefixAttention ? { prefixAttention: parsePrefixAttentionTag(a.prefixAttention) } : {}),
    ...(a.causalAttention ? { causalAttention: parseCausalAttentionTag(a.causalAttention) } : {}),
  });
  const request = (q) => ({
    query: q.query,
    items: q.items,
    labelTokenIds: inputs.labels,
    applySoftmax: true,
    algorithm: a.algorithm,
  });
  // The PR workload's requests made together share one cross-request pass (the admission queue's turn).
  const pass =
    a.workload === 'pr'
      ? () => Promise.all(inputs.workloads.pr.requests.map((q) => scorer.score(request(q))))
      : () => scorer.score(request(inputs.workloads.target.requests[0]));
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    await pass();
    process.stdout.write(`pass ${i + 1}: ${(performance.now() - t0).toFixed(1)} ms\n`);
  }
  scorer.dispose();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
