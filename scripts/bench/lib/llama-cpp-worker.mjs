// The same workload through node-llama-cpp, as a user would: evaluate the
// query once, then each item after it (reusing the query's KV cache), reading
// the label probabilities at the item's last token.
//   node llama-cpp-worker.mjs <node_modules dir> <model.gguf> <workload> [itemLimit]
import { createRequire } from 'node:module';
import { scoreWithLlamaCpp } from './llama-cpp-eval.mjs';

const [modulesDir, modelPath, workloadName, limitArg] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const { WORKLOADS, request } = require('./workloads.js');

const workload = WORKLOADS[workloadName];
const itemLimit = limitArg ? Number(limitArg) : workload.items;
const req = request(workload, 1, itemLimit);
const r = await scoreWithLlamaCpp(modulesDir, modelPath, req);
process.stdout.write(
  `${JSON.stringify({ workload: workloadName, items: req.items.length, querySeconds: r.querySeconds, itemSeconds: r.itemSeconds, peakRssBytes: r.peakRssBytes, firstScores: r.scores[0] })}\n`,
);
process.exit(0);
