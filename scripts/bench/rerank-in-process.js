'use strict';
// In-process reranking, the figure to set beside Transformers.js's
// (docs/performance.md "In-process reranking"): `npm run bench:in-process`.
// One query of about 30 tokens against 20 documents of 200 tokens through
// the AI SDK adapter (pjrt-score/ai-sdk, what an app calls) on the default
// model, in a fresh process: one untimed call compiles the programs, then
// RUNS timed calls; prints documents per second (the median call), the
// process's peak RSS and the machine. A report, not a verdict.
const os = require('node:os');
const fs = require('node:fs');
const { Scorer } = require('pjrt-score');
const { PjrtScoreRerankingModel } = require('pjrt-score/ai-sdk');

const RUNS = Number(process.env.RUNS || 7);
const { documentText: text } = require('./lib/workloads');
const { upperMedian } = require('../lib/median');

function cpuModel() {
  const line = fs
    .readFileSync('/proc/cpuinfo', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('model name'));
  return line ? line.split(':')[1].trim() : os.cpus()[0]?.model;
}

async function main() {
  const { rerank } = await import('ai'); // an ES module package
  const scorer = await Scorer.load();
  const model = PjrtScoreRerankingModel.fromScorer(scorer);
  const query = text(scorer, 30, 7);
  const documents = Array.from({ length: 20 }, (_, i) => text(scorer, 200, 1000 + i));
  const first = await rerank({ model, query, documents });
  const seconds = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    await rerank({ model, query, documents });
    seconds.push((performance.now() - t0) / 1000);
  }
  const median = upperMedian(seconds);
  const meta = first.providerMetadata.pjrtScore;
  const report = {
    reranker: `pjrt-score ${meta.model} (${meta.template}, plan ${meta.algorithm}, precision ${scorer.precision})`,
    documents: documents.length,
    documentTokens: documents.map((d) => scorer.tokenize(d).length).reduce((a, b) => a + b) / documents.length,
    promptTokens: meta.promptTokens,
    runs: RUNS,
    medianSeconds: median,
    documentsPerSecond: documents.length / median,
    peakRssMiB: process.resourceUsage().maxRSS / 1024,
    machine: `${cpuModel()}, ${os.cpus().length} CPUs, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, load average ${os.loadavg()[0].toFixed(1)} at the end`,
  };
  scorer.dispose();
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
