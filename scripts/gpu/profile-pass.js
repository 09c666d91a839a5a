'use strict';
/**
 * One configuration's target pass, run three times after the load, for a
 * kernel profiler to time (scripts/gpu/h100-run.sh runs it under Nsight
 * Compute with one metric, gpu__time_duration, and
 * scripts/gpu/kernel-table.py splits the last pass out of the trace):
 *
 *   node scripts/gpu/profile-pass.js --model DIR --inputs FILE [--plugin SO]
 *        [--precision bf16] [--weights bf16] [--prefix-attention cudnn]
 *        [--causal-attention cudnn] [--algorithm packed|prefix] [--disk-cache DIR]
 *
 * With the disk cache of a bench:gpu run, the programs load without
 * compiling (no autotuning kernels in the trace). Prints the wall time of
 * each pass (under a profiler, the profiler's time, not the pass's).
 */
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..', '..');
const { Scorer } = require(path.join(root, 'dist'));
const { parseCausalAttentionTag, parsePrefixAttentionTag } = require(path.join(root, 'dist', 'hlo'));
const { benchScorerOptions } = require(path.join(root, 'scripts', 'bench', 'gpu', 'scorer-options'));

function args(argv) {
  const out = { precision: 'bf16', weights: 'bf16', algorithm: 'packed' };
  for (let i = 0; i < argv.length; i += 2) out[argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase())] = argv[i + 1];
  for (const k of ['model', 'inputs']) if (!out[k]) throw new Error(`--${k} is required`);
  return out;
}

async function main() {
  const a = args(process.argv.slice(2));
  const inputs = JSON.parse(fs.readFileSync(a.inputs, 'utf8'));
  const scorer = await Scorer.load({
    ...benchScorerOptions(a),
    ...(a.prefixAttention ? { prefixAttention: parsePrefixAttentionTag(a.prefixAttention) } : {}),
    ...(a.causalAttention ? { causalAttention: parseCausalAttentionTag(a.causalAttention) } : {}),
  });
  const target = inputs.workloads.target.requests[0];
  const request = { query: target.query, items: target.items, labelTokenIds: inputs.labels, applySoftmax: true, algorithm: a.algorithm };
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    await scorer.score(request);
    process.stdout.write(`pass ${i + 1}: ${(performance.now() - t0).toFixed(1)} ms\n`);
  }
  scorer.dispose();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
