// One token-id request through node-llama-cpp as a user would score it: the
// query evaluated once, then each item after it (reusing the query's KV
// cache, erased again after the item), the label probabilities read at the
// item's last token. Shared by llama-cpp-worker.mjs (the bench workloads) and
// llama-cpp-score.mjs (any request on stdin).
import fs from 'node:fs';
import path from 'node:path';

/**
 * req: { query: ids, items: ids[], labelTokenIds }. Returns
 * { querySeconds, itemSeconds, peakRssBytes, scores: [[p(label) ...] ...] }.
 */
export async function scoreWithLlamaCpp(modulesDir, modelPath, req) {
  const { getLlama } = await import(path.join(modulesDir, 'node-llama-cpp', 'dist', 'index.js'));
  const llama = await getLlama({ gpu: false });
  const model = await llama.loadModel({ modelPath });
  const longest = Math.max(...req.items.map((i) => i.length));
  const context = await model.createContext({
    contextSize: req.query.length + longest + 64,
    batchSize: 2048,
    threads: 2,
    sequences: 1,
  });
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
  return { querySeconds, itemSeconds, peakRssBytes, scores };
}
