#!/usr/bin/env node
'use strict';
// npm run bench:scale — shapes that only complete because every plan chunks
// under a memory budget: 5,000 items of 20 tokens, and 50 items of 1,000
// tokens. Prints time and peak RSS per case (each in its own process).
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { describeMachine } = require('../lib/machine');

const CASES = [
  { name: '5000 items x 20 tokens, 64-token query', queryTokens: 64, items: 5000, itemTokens: 20, algorithm: 'auto' },
  { name: '50 items x 1000 tokens, 64-token query', queryTokens: 64, items: 50, itemTokens: 1000, algorithm: 'auto' },
];

const child = `
  const { Scorer } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'dist'))});
  const [q, n, l, algorithm] = process.argv.slice(1);
  const ids = (count, seed) => Array.from({ length: count }, (_, i) => 100 + ((seed * 7919 + i * 104729) % 48000));
  (async () => {
    const scorer = await Scorer.load({ maxItems: 100000, maxRequestTokens: 1e7, prefixCacheBytes: 0 });
    const request = { query: ids(+q, 1), items: Array.from({ length: +n }, (_, i) => ids(+l, i + 2)), labelTokenIds: [9454, 2753], algorithm };
    const t0 = performance.now();
    const r = await scorer.score(request);
    const seconds = (performance.now() - t0) / 1000;
    const hwm = Number(/VmHWM:\\s+(\\d+) kB/.exec(require('node:fs').readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;
    const finite = r.scores.every((row) => row.every(Number.isFinite));
    console.log(JSON.stringify({ seconds, algorithm: r.algorithm, rows: r.scores.length, finite, peakRssGB: hwm / 1e9, compiles: scorer.stats().jit.compiles }));
    scorer.dispose();
  })().catch((e) => { console.error(e); process.exit(1); });`;

console.log(`machine: ${describeMachine()}`);
let failed = false;
for (const c of CASES) {
  const r = spawnSync(
    process.execPath,
    ['-e', child, String(c.queryTokens), String(c.items), String(c.itemTokens), c.algorithm],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) {
    console.log(`${c.name}: FAILED (exit ${r.status})\n${r.stderr.slice(-2000)}`);
    failed = true;
    continue;
  }
  const out = JSON.parse(r.stdout.trim().split('\n').pop());
  console.log(
    `${c.name}: ${out.rows} rows, all finite: ${out.finite}, plan ${out.algorithm}, ${out.seconds.toFixed(1)} s ` +
      `(includes ${out.compiles} compiles), ${(out.rows / out.seconds).toFixed(1)} items/s, peak RSS ${out.peakRssGB.toFixed(2)} GB`,
  );
}
process.exit(failed ? 1 : 0);
