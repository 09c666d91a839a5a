'use strict';
// One case of npm run bench's models section in its own process (so its peak RSS is its own):
//   node model-worker.js <model dir> <request> <precision>
// Loads the Hugging Face directory (Scorer.load, auto plan, the given precision, the prefix cache
// off), scores one warm-up request (untimed but reported: the first answer, compiles included), then
// TIMED_CALLS fresh requests of the same shape, each timed. Writes one JSON line: load seconds,
// first-answer seconds, each timed call and their median, peak RSS, the config, and the label
// probabilities of the first timed request (the peers are checked against them).
const fs = require('node:fs');
const { Scorer } = require('../../../dist');
const { median } = require('../../lib/median');
const { MODEL_REQUESTS, TIMED_CALLS, modelRequest } = require('./model-requests');

function peakRssBytes() {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) * 1024 : process.resourceUsage().maxRSS * 1024;
}

async function main() {
  const [dir, requestName, precision] = process.argv.slice(2);
  const shape = MODEL_REQUESTS[requestName];
  if (!dir || !shape || !precision)
    throw new Error(`usage: model-worker.js <model dir> <${Object.keys(MODEL_REQUESTS).join('|')}> <precision>`);
  const t0 = performance.now();
  const scorer = await Scorer.load({
    model: dir,
    precision,
    prefixCacheBytes: 0,
    maxItems: 100000,
    maxRequestTokens: 1e7,
  });
  const loadSeconds = (performance.now() - t0) / 1000;
  const vocab = scorer.config.vocabSize;
  const t1 = performance.now();
  await scorer.score(modelRequest(shape, 0, vocab));
  const firstSeconds = (performance.now() - t1) / 1000;
  const seconds = [];
  let first;
  let algorithm;
  for (let v = 1; v <= TIMED_CALLS; v++) {
    const request = modelRequest(shape, v, vocab);
    const t = performance.now();
    const result = await scorer.score(request);
    seconds.push((performance.now() - t) / 1000);
    if (v === 1) first = result.scores;
    algorithm = result.algorithm;
  }
  const out = {
    request: requestName,
    loadSeconds,
    firstSeconds,
    seconds: median(seconds),
    allSeconds: seconds,
    peakRssBytes: peakRssBytes(),
    config: scorer.config,
    algorithm,
    precision: scorer.precision,
    precisionReason: scorer.precisionChoice.reason,
    weights: scorer.weightType,
    scores: first,
  };
  scorer.dispose();
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
