// The same workload through node-llama-cpp, as a user would: evaluate the
// query once, then each item after it (reusing the query's KV cache), reading
// the label probabilities at the item's last token.
//   node llama-cpp-worker.mjs <node_modules dir> <model.gguf> <workload> [itemLimit]
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const [modulesDir, modelPath, workloadName, limitArg] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const { WORKLOADS, request } = require('./workloads.js');
const { getLlama } = await import(path.join(modulesDir, 'node-llama-cpp', 'dist', 'index.js'));

const workload = WORKLOADS[workloadName];
const itemLimit = limitArg ? Number(limitArg) : workload.items;
const req = request(workload, 1, itemLimit);
const llama = await getLlama({ gpu: false });
const model = await llama.loadModel({ modelPath });
const context = await model.createContext({ contextSize: workload.queryTokens + workload.itemTokens + 64, batchSize: 2048, threads: 2, sequences: 1 });
const sequence = context.getSequence();
const t0 = performance.now();
await sequence.evaluateWithoutGeneratingNewTokens(req.query);
const querySeconds = (performance.now() - t0) / 1000;
const t1 = performance.now();
const scores = [];
for (const item of req.items) {
  const input = item.map((t, j) => (j === item.length - 1 ? [t, { generateNext: { probabilities: true } }] : t));
  const out = await sequence.controlledEvaluate(input);
  const probabilities = out[item.length - 1].next.probabilities;
  scores.push(req.labelTokenIds.map((l) => probabilities.get(l) ?? 0));
  await sequence.eraseContextTokenRanges([{ start: req.query.length, end: req.query.length + item.length }]);
}
const itemSeconds = (performance.now() - t1) / 1000;
const status = fs.readFileSync('/proc/self/status', 'utf8');
const peak = Number(/VmHWM:\s+(\d+) kB/.exec(status)[1]) * 1024;
process.stdout.write(`${JSON.stringify({ workload: workloadName, items: req.items.length, querySeconds, itemSeconds, peakRssBytes: peak, firstScores: scores[0] })}\n`);
process.exit(0);
