// A token-id request scored by node-llama-cpp as a user would: the query
// evaluated once, then each item after it (reusing the query's KV cache),
// the label probabilities read at the item's last token.
//   node llama-cpp-score.mjs <node_modules dir> < {"model", "query", "items", "labelTokenIds"}
// prints {"scores": [[p(label) ...] ...], "querySeconds", "itemSeconds", "peakRssBytes"}
import fs from 'node:fs';
import { scoreWithLlamaCpp } from './llama-cpp-eval.mjs';

const [modulesDir] = process.argv.slice(2);
const req = JSON.parse(fs.readFileSync(0, 'utf8'));
const r = await scoreWithLlamaCpp(modulesDir, req.model, req);
process.stdout.write(`${JSON.stringify({ items: req.items.length, ...r })}\n`);
process.exit(0);
