'use strict';
/**
 * Where the host memory of a GPU process goes, step by step (the host
 * RSS line of docs/gpu.md): the resident memory by mapping (scripts/lab/gpu/memory.js)
 * after creating a client alone, after loading the model, and after the
 * first request (its compile), for one set of client options.
 *
 *   node scripts/lab/gpu/memory-probe.js --model DIR --inputs FILE [--plugin cuda]
 *        [--client-options '{"preallocate":false}'] [--weights bf16] [--precision bf16]
 *
 * One JSON line per step on stdout; run it once per option set, each in its
 * own process (scripts/lab/gpu/h100-run.sh does).
 */
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..', '..', '..');
const { Client, Scorer } = require(path.join(root, 'dist'));
const { rssBreakdown } = require(path.join(__dirname, 'memory'));

function args(argv) {
  const out = { precision: 'bf16', weights: 'bf16', clientOptions: '{}' };
  for (let i = 0; i < argv.length; i += 2)
    out[argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase())] = argv[i + 1];
  for (const k of ['model', 'inputs']) if (!out[k]) throw new Error(`--${k} is required`);
  return out;
}

async function main() {
  const a = args(process.argv.slice(2));
  const clientOptions = JSON.parse(a.clientOptions);
  const step = (name, extra = {}) =>
    process.stdout.write(`${JSON.stringify({ step: name, clientOptions, ...extra, ...rssBreakdown() })}\n`);
  step('start');
  const client = await Client.create({ plugin: a.plugin, options: clientOptions });
  step('client');
  client.dispose();
  const t0 = performance.now();
  const scorer = await Scorer.load({
    model: a.model,
    plugin: a.plugin,
    clientOptions,
    precision: a.precision,
    weights: a.weights,
    diskCache: false,
  });
  step('loaded', { seconds: (performance.now() - t0) / 1000 });
  const inputs = JSON.parse(fs.readFileSync(a.inputs, 'utf8'));
  const pr = inputs.workloads.pr.requests[0];
  await scorer.score({ query: pr.query, items: pr.items, labelTokenIds: inputs.labels });
  step('first request');
  scorer.dispose();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
