#!/usr/bin/env node
'use strict';
// Fits the auto selector's cost model to this machine: scores requests of
// several shapes with each plan, then least-squares fits
//   seconds = a * (row FLOPs) + b * (key FLOPs) + c * (passes)
// over the passes each request ran (its plan, from scorer.explain()). The
// selector compares plans by a * rowFLOPs + b * keyFLOPs + c * passes, so only
// the ratios b/a and c/a matter: they are printed as the CostModel weights to
// put in lib/scoring/planning/selector.ts, and written to bench-results/cost-model.json.
//   node scripts/bench/fit-cost-model.js [--model DIR] [--plugin SO|cuda] [--precision P] [--weights W] [--out FILE]
// (the platform's constants belong in lib/scoring/platform/profiles.ts with where they were measured).
const fs = require('node:fs');
const path = require('node:path');
const { Scorer } = require('../../dist');
const { describeMachine, machine } = require('../lib/machine');

const SHAPES = [
  { P: 48, N: 8, L: 12 },
  { P: 64, N: 32, L: 16 },
  { P: 300, N: 10, L: 10 },
  { P: 300, N: 100, L: 10 },
  { P: 512, N: 24, L: 40 },
  { P: 1000, N: 64, L: 20 },
  { P: 2000, N: 64, L: 20 },
  { P: 2000, N: 128, L: 24 },
];
const ids = (count, seed) => Array.from({ length: count }, (_, i) => 100 + ((seed * 7919 + i * 104729) % 48000));

/** Solves the 3x3 normal equations of a least-squares fit. */
function fit(rows) {
  const A = [
    [0, 0, 0],
    [0, 0, 0],
    [0, 0, 0],
  ];
  const y = [0, 0, 0];
  for (const { x, t } of rows) {
    for (let i = 0; i < 3; i++) {
      y[i] += x[i] * t;
      for (let j = 0; j < 3; j++) A[i][j] += x[i] * x[j];
    }
  }
  // Gaussian elimination.
  for (let i = 0; i < 3; i++) {
    const p = A[i][i];
    for (let k = i + 1; k < 3; k++) {
      const f = A[k][i] / p;
      for (let j = i; j < 3; j++) A[k][j] -= f * A[i][j];
      y[k] -= f * y[i];
    }
  }
  const b = [0, 0, 0];
  for (let i = 2; i >= 0; i--) b[i] = (y[i] - A[i].slice(i + 1).reduce((s, a, j) => s + a * b[i + 1 + j], 0)) / A[i][i];
  return b;
}

function options(argv) {
  const o = {};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!['model', 'plugin', 'precision', 'weights', 'out'].includes(key) || argv[i + 1] === undefined)
      throw new Error(`unknown or empty option ${argv[i]}`);
    o[key] = argv[i + 1];
  }
  return o;
}

async function main() {
  const { out: outArg, ...load } = options(process.argv.slice(2));
  console.log(`machine: ${describeMachine()}`);
  const scorer = await Scorer.load({ ...load, prefixCacheBytes: 0, maxItems: 100000, maxRequestTokens: 1e7 });
  console.log(
    `platform ${scorer.client.platformName}; model ${scorer.config.numLayers} layers, hidden ${scorer.config.hiddenSize}; ${JSON.stringify(load)}`,
  );
  // Analytic FLOPs per token row (projections + MLP) and per visible (row, key) pair.
  const {
    hiddenSize: Dm,
    intermediateSize: F,
    numLayers: Ly,
    numHeads: Hq,
    numKvHeads: Hkv,
    headDim: D,
  } = scorer.config;
  const unit = {
    flopsPerRow: 2 * Ly * (Dm * (Hq + 2 * Hkv) * D + Hq * D * Dm + 3 * Dm * F),
    flopsPerKey: 4 * Hq * D * Ly,
  };
  const samples = [];
  for (const s of SHAPES) {
    for (const algorithm of ['packed', 'prefix', ...(s.P + s.L <= 600 && s.N <= 32 ? ['serial'] : [])]) {
      const make = (v) => ({
        query: ids(s.P, v),
        items: Array.from({ length: s.N }, (_, i) => ids(s.L, v * 1000 + i)),
        labelTokenIds: [9454, 2753],
        algorithm,
      });
      await scorer.score(make(1)); // compile
      const timed = make(2);
      // The median of 3 (one is enough where a request takes seconds, as on a 2-core CPU).
      const times = [];
      for (let r = 0; r < 3; r++) {
        const t0 = performance.now();
        await scorer.score(timed);
        times.push((performance.now() - t0) / 1000);
        if (times[0] > 1) break;
      }
      const seconds = times.sort((p, q) => p - q)[Math.floor(times.length / 2)];
      const x = [0, 0, 0];
      for (const { program } of scorer.explain(timed).passes) {
        const P = program.prefix;
        const N = program.items ?? 0;
        const L = program.itemLength ?? 0;
        const rows =
          program.program === 'decoder_prefill' ? P : program.program === 'decoder_extend' ? N * L : P + N * L;
        const keys =
          program.program === 'decoder_prefill'
            ? P * P
            : program.program === 'decoder_extend'
              ? N * L * (P + L)
              : P * P + N * L * (P + L);
        x[0] += rows * unit.flopsPerRow;
        x[1] += keys * unit.flopsPerKey;
        x[2] += 1;
      }
      samples.push({ shape: s, algorithm, seconds, x, t: seconds });
      console.log(`P=${s.P} N=${s.N} L=${s.L} ${algorithm}: ${seconds.toFixed(3)} s over ${x[2]} passes`);
    }
  }
  scorer.dispose();
  const [a, b, c] = fit(samples);
  const model = { flopsPerRow: unit.flopsPerRow, flopsPerKey: (unit.flopsPerKey * b) / a, flopsPerPass: c / a };
  console.log(
    `\nfit: seconds = ${a.toExponential(3)} * rowFLOPs + ${b.toExponential(3)} * keyFLOPs + ${c.toExponential(3)} * passes`,
  );
  console.log(
    `  (row work at ${(1 / a / 1e9).toFixed(0)} GFLOP/s, attention work at ${(1 / b / 1e9).toFixed(0)} GFLOP/s, ${(c * 1000).toFixed(1)} ms per pass)`,
  );
  console.log(
    `CostModel for selector.ts: key weight ${(b / a).toFixed(3)} x analytic, flopsPerPass ${model.flopsPerPass.toExponential(2)}`,
  );
  const worst = Math.max(...samples.map((s) => Math.abs(a * s.x[0] + b * s.x[1] + c * s.x[2] - s.t) / s.t));
  console.log(`largest relative error of the fit over ${samples.length} samples: ${(100 * worst).toFixed(0)}%`);
  const out = outArg ? path.resolve(outArg) : path.join(__dirname, '..', '..', 'bench-results', 'cost-model.json');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(
    out,
    `${JSON.stringify({ machine: machine(), options: load, coefficients: { a, b, c }, keyWeight: b / a, flopsPerPass: c / a, samples }, null, 2)}\n`,
  );
  console.log(`wrote ${path.relative(process.cwd(), out)}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
