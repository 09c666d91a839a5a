'use strict';
// Time from process start to the first scored request (cold or warm disk cache):
//   node start-worker.js <diskCacheDir>
const started = performance.timeOrigin;
const { Scorer } = require('../../dist');
const { WORKLOADS, request } = require('./workloads');

(async () => {
  const scorer = await Scorer.load({ diskCache: process.argv[2] });
  const result = await scorer.score(request(WORKLOADS['small-10'], 3));
  const seconds = (Date.now() - started) / 1000;
  process.stdout.write(`${JSON.stringify({ seconds, compiles: scorer.stats().jit.compiles, diskHits: scorer.stats().jit.diskHits, algorithm: result.algorithm })}\n`);
  scorer.dispose();
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
