// A token-id request scored by node-llama-cpp as a user would: the query
// evaluated once, then each item after it (reusing the query's KV cache),
// the label probabilities read at the item's last token.
//   node llama-cpp-score.mjs <node_modules dir> < {"model", "query", "items", "labelTokenIds"}
// prints {"scores": [[p(label) ...] ...], "querySeconds", "itemSeconds", "peakRssBytes"}
import fs from 'node:fs';
import path from 'node:path';

const [modulesDir] = process.argv.slice(2);
const req = JSON.parse(fs.readFileSync(0, 'utf8'));
const { getLlama } = await import(path.join(modulesDir, 'node-llama-cpp', 'dist', 'index.js'));
const llama = await getLlama({ gpu: false });
const model = await llama.loadModel({ modelPath: req.model });
const longest = Math.max(...req.items.map((i) => i.length));
const context = await model.createContext({ contextSize: req.query.length + longest + 64, batchSize: 2048, threads: 2, sequences: 1 });
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
const peakRssBytes = Number(/VmHWM:\s+(\d+) kB/.exec(status)[1]) * 1024;
process.stdout.write(`${JSON.stringify({ items: req.items.length, querySeconds, itemSeconds, peakRssBytes, scores })}\n`);
process.exit(0);
