'use strict';
// The rerank case of `npm run bench`, in its own process:
//   node scripts/bench/rerank.js
// One query of about 30 tokens against (a) 100 documents of about 200 tokens
// and (b) 20 documents of about 1,000 tokens, through the default model's
// rerank template. Two ways, on the same normalized request, in one run:
// our rerank (auto plan: the prompt up to the document is the shared prefix)
// and each document as its own sequence (the serial plan: what servers that
// score query-document pairs one by one do). Each runs once; the seconds
// its compiles took (the JIT cache counts them) are subtracted. Prints one
// JSON line.
const { Scorer } = require('../../dist/scoring/scorer');
const { readRerankBody } = require('../../dist/wire');

const { documentText: text } = require('./lib/workloads');

/** Wall seconds of one run, less the seconds spent compiling during it. */
async function timed(scorer, fn) {
  const compiled = scorer.stats().jit.compileSeconds;
  const t0 = performance.now();
  const result = await fn();
  const wall = (performance.now() - t0) / 1000;
  const compileSeconds = scorer.stats().jit.compileSeconds - compiled;
  return { seconds: wall - compileSeconds, compileSeconds, result };
}

async function main() {
  const scorer = await Scorer.load({ prefixCacheBytes: 0, maxItems: 100000, maxRequestTokens: 1e7, diskCache: false });
  const query = text(scorer, 30, 7);
  const cases = [];
  for (const [count, length] of [
    [100, 200],
    [20, 1000],
  ]) {
    const documents = Array.from({ length: count }, (_, i) => text(scorer, length, 1000 + i));
    const request = scorer.normalizeWith(readRerankBody({ query, documents }));
    const ours = await timed(scorer, () => scorer.scoreNormalized(request.score));
    const serial = await timed(scorer, () => scorer.scoreNormalized(request.score, { algorithm: 'serial' }));
    let worst = 0;
    ours.result.scores.forEach((row, i) => (worst = Math.max(worst, Math.abs(row[1] - serial.result.scores[i][1]))));
    cases.push({
      documents: count,
      documentTokens: length,
      promptTokens: request.score.queryTokens.length,
      itemTokensMean: request.score.itemTokens.reduce((n, t) => n + t.length, 0) / count,
      plan: ours.result.algorithm,
      seconds: ours.seconds,
      serialSeconds: serial.seconds,
      compileSeconds: ours.compileSeconds + serial.compileSeconds,
      speedup: serial.seconds / ours.seconds,
      maxRelevanceDiff: worst,
    });
  }
  const template = scorer.rerankTemplate().template.name;
  scorer.dispose();
  process.stdout.write(`${JSON.stringify({ template, queryTokens: 30, cases })}\n`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
