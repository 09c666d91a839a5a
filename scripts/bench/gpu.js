'use strict';
/**
 * npm run bench:gpu -- pjrt-score against its PyTorch and JAX peers on one
 * machine, in one run, one table. Meant for an NVIDIA GPU with the
 * CUDA plugin; runs anywhere (the suite runs it on the CPU plugin with a tiny
 * model and no peers, so the script cannot rot).
 *
 *   node scripts/bench/gpu.js [--preset qwen3_0_6b|qwen3_tiny] [--scale full|tiny]
 *        [--plugin SO|cuda] [--configs highest/f32,default/bf16,bf16/bf16/ones_own/qc4,bf16/bf16+cross-request,...]
 *        [--peers torch,jax|none] [--peer-dtypes bf16,f32] [--dir DIR] [--out FILE] [--repeats N]
 *        [--emit-only 1] [--restart 0] [--peer-methods flexfull,batch8full] [--breakdown 1]
 *        [--methods packed,prefix,serial,one-at-a-time,8-concurrent]
 *
 * --emit-only 1: no device run and no peers; each configuration's programs are
 * built for the workloads' shapes and the custom calls they would emit are
 * printed (the `cudnn` forms' cuDNN calls, on any machine). --restart 0 skips
 * the warm-disk-cache rerun; --peer-methods narrows the peers' bf16 methods
 * (the f32 reference always runs PyTorch's sdpa). --breakdown 1 prints, for
 * the 8-concurrent rounds, the time inside uploads, executions and downloads
 * against the round's wall time; every run prints where its resident memory
 * is after the load (/proc/self/smaps by mapping). --methods narrows
 * pjrt-score's timed rows (all five by default).
 *
 * 1. Writes a random model of the preset's shape (scripts/bench/lib/random-model.js,
 *    bf16 safetensors) and the workloads' token ids (scripts/lab/gpu/inputs.js)
 *    into DIR (default: <cache>/bench-gpu/<preset>), once.
 * 2. Runs pjrt-score once per configuration (precision/weights, optionally
 *    /prefix-attention/causal-attention forms by their tags: joint, ones_own,
 *    cudnn, cudnn_ownhlo, cudnnsim; square, qc4, cudnn; unset: the platform's; `+cross-request` for the
 *    Scorer's cross-request batching, which the 8-concurrent row measures),
 *    each in its
 *    own process (scripts/lab/gpu/pjrt-run.js), then the first
 *    configuration again with the disk cache now warm (its first request is
 *    the restart figure).
 * 3. Runs the Python peers (scripts/lab/gpu/peer_torch.py, peer_jax.py) when
 *    asked and importable.
 * 4. Prints the machine, the versions, a speed table with each figure's ratio
 *    to the best peer of its row, and parity: every plan against the
 *    reference (PyTorch in f32 with TF32 off when it ran, else pjrt-score's
 *    own serial plan in f32 `highest`), max and mean |diff| of label
 *    probabilities.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { describeMachine } = require('../lib/machine');
const { PRESETS, writeRandomModel } = require('./lib/random-model');
const { makeInputs } = require('../lab/gpu/inputs');

function parseArgs(argv) {
  const a = {
    preset: 'qwen3_0_6b',
    configs: 'bf16/bf16,bf16/bf16+cross-request,highest/f32,default/f32',
    peers: 'torch,jax',
    'peer-dtypes': 'bf16,f32',
    repeats: '5',
  };
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || argv[i + 1] === undefined)
      throw new Error(`bad argument ${argv[i]}: options take a value (--name value)`);
    a[argv[i].slice(2)] = argv[i + 1];
  }
  if (!PRESETS[a.preset]) throw new Error(`--preset is one of ${Object.keys(PRESETS).join(', ')}`);
  a.scale ??= a.preset.endsWith('tiny') ? 'tiny' : 'full';
  return a;
}

function run(command, args, label) {
  const started = Date.now();
  process.stderr.write(`\n== ${label}\n`);
  const r = spawnSync(command, args, {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, PYTHONUNBUFFERED: '1' },
  });
  process.stderr.write(`== ${label}: exit ${r.status} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  return r.status === 0;
}

const readJson = (file) => (fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : undefined);

/** Label probabilities (softmax over the labels) from log-probabilities over the vocabulary. */
function labelSoftmax(logprobs) {
  const m = Math.max(...logprobs);
  const e = logprobs.map((x) => Math.exp(x - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / s);
}

/** max and mean |a - b| over the items both have, as [request][item][label]. */
function diff(a, b) {
  let max = 0;
  let sum = 0;
  let n = 0;
  for (let q = 0; q < Math.min(a.length, b.length); q++) {
    for (let i = 0; i < Math.min(a[q].length, b[q].length); i++) {
      for (let l = 0; l < a[q][i].length; l++) {
        const d = Math.abs(a[q][i][l] - b[q][i][l]);
        max = Math.max(max, d);
        sum += d;
        n++;
      }
    }
  }
  return n ? { max, mean: sum / n, n } : undefined;
}

const fmt = (x, digits = 1) => (x === undefined || x === null || Number.isNaN(x) ? '-' : x.toFixed(digits));
const sci = (x) => (x === undefined ? '-' : x.toExponential(1));

function main() {
  const a = parseArgs(process.argv.slice(2));
  const cache = process.env.PJRT_SCORE_CACHE || path.join(os.homedir(), '.cache', 'pjrt-score');
  const dir = path.resolve(a.dir ?? path.join(cache, 'bench-gpu', a.preset));
  const out = path.resolve(a.out ?? path.join(dir, 'results.json'));
  const modelDir = path.join(dir, 'model');
  const inputsFile = path.join(dir, `inputs-${a.scale}.json`);
  const dims = PRESETS[a.preset];

  if (!fs.existsSync(path.join(modelDir, 'model.safetensors'))) {
    const t0 = Date.now();
    const { params, fileBytes } = writeRandomModel(modelDir, dims, { seed: 7 });
    process.stderr.write(
      `wrote a random ${a.preset} model: ${(params / 1e9).toFixed(3)}B parameters, ${(fileBytes / 1e9).toFixed(2)} GB bf16, in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`,
    );
  }
  if (!fs.existsSync(inputsFile)) fs.writeFileSync(inputsFile, JSON.stringify(makeInputs(dims.vocab, a.scale)));
  const plugin = a.plugin; // a path, or `cuda`: the library finds an installed jax CUDA plugin

  // pjrt-score, one process per configuration, then the first again with a warm disk cache.
  const diskCache = path.join(dir, 'executables');
  const configs = a.configs.split(',').map((c) => {
    const [forms, batching, ...rest] = c.split('+');
    const [precision, weights, prefixAttention, causalAttention] = forms.split('/');
    if (!precision || !weights || rest.length || (batching !== undefined && batching !== 'cross-request')) {
      throw new Error(
        `--configs: ${JSON.stringify(c)} is not precision/weights[/prefix-form[/causal-form]][+cross-request]`,
      );
    }
    return { precision, weights, prefixAttention, causalAttention, batching, name: c };
  });
  const runs = [];
  const runConfig = (c, suffix) => {
    const file = path.join(dir, `pjrt-${c.name.replace(/\//g, '-')}${suffix}.json`);
    fs.rmSync(file, { force: true });
    const argv = [
      path.join(__dirname, '..', 'lab', 'gpu', 'pjrt-run.js'),
      '--model',
      modelDir,
      '--inputs',
      inputsFile,
      '--out',
      file,
    ];
    argv.push('--precision', c.precision, '--weights', c.weights, '--repeats', a.repeats, '--disk-cache', diskCache);
    if (c.batching) argv.push('--batching', c.batching);
    if (c.prefixAttention) argv.push('--prefix-attention', c.prefixAttention);
    if (c.causalAttention) argv.push('--causal-attention', c.causalAttention);
    if (plugin) argv.push('--plugin', plugin);
    if (a.options) argv.push('--options', a.options);
    if (a.breakdown) argv.push('--breakdown', a.breakdown);
    if (a.methods) argv.push('--methods', a.methods);
    run(process.execPath, argv, `pjrt-score ${c.name}${suffix}`);
    return readJson(file);
  };
  if (a['emit-only']) {
    let ok = true;
    for (const c of configs) {
      const argv = [
        path.join(__dirname, '..', 'lab', 'gpu', 'pjrt-run.js'),
        '--model',
        modelDir,
        '--inputs',
        inputsFile,
        '--out',
        '-',
        '--emit-only',
        '1',
      ];
      argv.push('--precision', c.precision, '--weights', c.weights);
      if (c.prefixAttention) argv.push('--prefix-attention', c.prefixAttention);
      if (c.causalAttention) argv.push('--causal-attention', c.causalAttention);
      ok = run(process.execPath, argv, `pjrt-score ${c.name} (emit only)`) && ok;
    }
    if (!ok) process.exitCode = 1;
    return;
  }
  fs.rmSync(diskCache, { recursive: true, force: true });
  for (const c of configs) runs.push({ config: c, result: runConfig(c, '') });
  const restart = a.restart === '0' ? undefined : runConfig(configs[0], '-restart');

  // The peers.
  const peerResults = [];
  const wanted = a.peers === 'none' ? [] : a.peers.split(',');
  for (const peer of wanted) {
    const script = path.join(__dirname, '..', 'lab', 'gpu', `peer_${peer}.py`);
    for (const [dtype, precision] of [
      ['bf16', 'default'],
      ['f32', 'highest'],
    ].filter(([dt]) => a['peer-dtypes'].split(',').includes(dt))) {
      const file = path.join(dir, `peer-${peer}-${dtype}.json`);
      fs.rmSync(file, { force: true });
      const argv = [
        script,
        '--model',
        modelDir,
        '--inputs',
        inputsFile,
        '--out',
        file,
        '--dtype',
        dtype,
        '--precision',
        precision,
        '--repeats',
        a.repeats,
      ];
      // The f32 run is the parity reference: PyTorch's exact path only (TF32 off).
      if (dtype === 'f32') {
        if (peer !== 'torch') continue;
        argv.push('--methods', 'sdpa');
      } else if (a['peer-methods']) {
        argv.push('--methods', a['peer-methods']);
      }
      run('python3', argv, `${peer} ${dtype}`);
      const r = readJson(file);
      if (r) peerResults.push(...(Array.isArray(r) ? r : (r.rows ?? [])).map((row) => ({ ...row, peer, dtype })));
    }
  }

  // The table.
  const lines = [];
  const say = (s = '') => lines.push(s);
  const first = runs.find((r) => r.result)?.result;
  say(`bench:gpu, ${new Date().toISOString()}`);
  say(`host: ${describeMachine()}`);
  if (first)
    say(
      `device: platform ${first.platform}, ${first.device || 'unknown device'}; model ${a.preset} (random weights), ${a.scale} workloads`,
    );
  const versions = peerResults.find((r) => r.versions)?.versions;
  if (versions)
    say(
      `peers: ${Object.entries(versions)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
    );
  say();
  const bestPeer = {};
  for (const r of peerResults) {
    if (r.error || r.dtype !== 'bf16') continue;
    const key = `${r.workload}:${r.requests_per_call > 1 ? 'batch' : 'single'}`;
    if (!bestPeer[key] || r.items_per_s > bestPeer[key].items_per_s) bestPeer[key] = r;
  }
  const peerKey = (r) => `${r.workload}:${/concurrent/.test(r.method) ? 'batch' : 'single'}`;
  say('| workload | contender | method | items/s | p50 ms | p99 ms | vs best peer |');
  say('| --- | --- | --- | --- | --- | --- | --- |');
  for (const { config, result } of runs) {
    if (!result) {
      say(`| - | pjrt-score ${config.name} | failed | - | - | - | - |`);
      continue;
    }
    for (const r of result.rows.filter((x) => x.items_per_s !== undefined)) {
      const best = bestPeer[peerKey(r)];
      const ratio = best ? `${(r.items_per_s / best.items_per_s).toFixed(2)}x ${best.peer} ${best.method}` : '-';
      say(
        `| ${r.workload} | pjrt-score ${config.name} | ${r.method} | ${fmt(r.items_per_s)} | ${fmt(r.p50_ms)} | ${fmt(r.p99_ms)} | ${ratio} |`,
      );
    }
  }
  for (const r of peerResults) {
    if (r.error)
      say(
        `| ${r.workload ?? '-'} | ${r.peer} ${r.dtype} | ${r.method} | error: ${String(r.error).slice(0, 80)} | | | |`,
      );
    else
      say(
        `| ${r.workload} | ${r.peer} ${r.dtype} | ${r.method} | ${fmt(r.items_per_s)} | ${fmt(r.p50_ms)} | ${fmt(r.p99_ms)} | |`,
      );
  }
  say();
  for (const { config, result } of [
    ...runs,
    { config: { name: `${configs[0].name}, restarted (warm disk cache)` }, result: restart },
  ]) {
    if (!result) continue;
    const f = result.rows.find((r) => r.method === 'first-request');
    const gb = (x) => (x / 1e9).toFixed(2);
    say(
      `pjrt-score ${config.name}: load ${fmt(result.load_ms / 1000, 2)} s; first target request ${fmt(f.ms / 1000, 2)} s (${f.compiles} compiles, ${fmt(f.compile_s, 1)} s compiling, ${f.disk_hits} from disk); ` +
        `peak RSS ${gb(result.peak_rss)} GB (${gb(result.load_peak_rss)} after the load), ${gb(result.peak_rss - result.client_peak_rss)} GB above a client-only process`,
    );
  }

  // Parity: label probabilities of every contender against the reference.
  const scoresOf = (row) => row.scores ?? (row.logprobs ? row.logprobs.map((q) => q.map(labelSoftmax)) : undefined);
  const torchRef = peerResults.find(
    (r) => r.peer === 'torch' && r.dtype === 'f32' && !r.error && r.workload === 'target',
  );
  const pjrtRef = runs
    .find((r) => r.config.name === 'highest/f32')
    ?.result?.rows.find((r) => r.workload === 'target' && r.method === 'serial');
  const reference = torchRef
    ? {
        name: 'PyTorch f32 (TF32 off)',
        rows: peerResults.filter((r) => r === torchRef || (r.peer === 'torch' && r.dtype === 'f32' && !r.error)),
      }
    : pjrtRef
      ? { name: 'pjrt-score serial highest/f32', rows: [pjrtRef] }
      : undefined;
  const parity = [];
  if (reference) {
    say();
    say(`parity against ${reference.name} (label probabilities; target: the items the reference ran):`);
    const refFor = (workload) => reference.rows.find((r) => r.workload === workload && scoresOf(r));
    const contenders = [
      ...runs.flatMap(({ config, result }) =>
        result ? result.rows.map((r) => ({ name: `pjrt-score ${config.name}`, row: r })) : [],
      ),
      ...peerResults.map((r) => ({ name: `${r.peer} ${r.dtype}`, row: r })),
    ];
    for (const { name, row } of contenders) {
      const ref = refFor(row.workload);
      const mine = scoresOf(row);
      if (!ref || !mine || row === ref) continue;
      const d = diff(mine, scoresOf(ref));
      if (!d) continue;
      parity.push({ name, workload: row.workload, method: row.method, ...d });
      say(`  ${name} ${row.workload} ${row.method}: max ${sci(d.max)}, mean ${sci(d.mean)} over ${d.n} values`);
    }
  }
  const text = lines.join('\n');
  process.stdout.write(`\n${text}\n`);
  fs.writeFileSync(
    out,
    JSON.stringify(
      {
        preset: a.preset,
        scale: a.scale,
        plugin: plugin ?? 'default',
        runs,
        restart,
        peers: peerResults,
        parity,
        table: text,
      },
      null,
      1,
    ),
  );
  process.stderr.write(`results: ${out}\n`);
  if (runs.some((r) => !r.result)) process.exitCode = 1;
}

main();
