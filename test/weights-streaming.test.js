'use strict';
// Loading streams (docs/design.md): a random Qwen2-shaped model of about 1.5B
// parameters (Qwen2-1.5B's dims, tied embeddings), written here as bf16
// safetensors (3.1 GB in a temp dir, deleted after), is loaded in bf16 by a
// child process whose peak RSS (VmHWM) must stay under 1.3x the bf16 size
// plus a stated allowance. The same model through f32 host copies would peak
// above twice that. Cost: about 3 GB of temp disk, ~4 GB of memory, and a
// minute or two of wall time on a shared 2-core machine.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { makeTinyModel, writeTinyHfDir, tensorTable } = require('./helpers/tiny-model');
const { writeRandomBf16Safetensors } = require('../scripts/bench/lib/random-model');

// Qwen2-1.5B: 28 layers, Dm 1536, F 8960, 12 q heads, 2 kv heads of 128, V 151936.
const DIMS = {
  vocabSize: 151936,
  hiddenSize: 1536,
  intermediateSize: 8960,
  numLayers: 28,
  numHeads: 12,
  numKvHeads: 2,
  headDim: 128,
};
// Besides the process's own baseline (Node and the plugin, measured in the
// child before the load): one layer's tensors in flight (host slice, the
// addon's staging copy, an f32 read) during the load; for the first request,
// compiling and running its program (the whole f32 LM head is added apart).
const IN_FLIGHT_BYTES = 0.15e9;
const FIRST_PROGRAM_BYTES = 0.5e9;

// The child: load in bf16, report peak RSS after the load, then score one small request.
const CHILD = `
const { Scorer, Client } = require(${JSON.stringify(path.join(__dirname, '..'))});
const hwm = () => Number(/VmHWM:\\s+(\\d+) kB/.exec(require('fs').readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;
(async () => {
  const probe = await Client.create();
  const baseline = hwm();
  probe.dispose();
  let loaded;
  const scorer = await Scorer.load({ model: process.argv[1], weights: 'bf16', diskCache: false, log: (e) => { if (e.event === 'model_loaded') loaded = e; } });
  const afterLoad = hwm();
  const r = await scorer.score({ query: [1, 2, 3, 4], items: [[5, 6], [7]], labelTokenIds: [8, 9] });
  const out = { baseline, afterLoad, afterScore: hwm(), weightBytes: scorer.stats && loaded.weightBytes, steps: loaded.steps, seconds: loaded.seconds, scores: r.scores };
  scorer.dispose();
  process.stdout.write(JSON.stringify(out) + '\\n');
})().catch((e) => { console.error(e); process.exit(1); });
`;

test('a 1.5B-parameter bf16 model loads in bf16 with peak RSS under 1.3x its size plus an allowance', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-1b5-'));
  try {
    const tiny = makeTinyModel('qwen2', 5);
    writeTinyHfDir(tiny, dir, { dtype: 'BF16' }); // tokenizer files and a config to patch
    const configFile = path.join(dir, 'config.json');
    const hf = JSON.parse(fs.readFileSync(configFile, 'utf8'));
    Object.assign(hf, {
      vocab_size: DIMS.vocabSize,
      hidden_size: DIMS.hiddenSize,
      intermediate_size: DIMS.intermediateSize,
      num_hidden_layers: DIMS.numLayers,
      num_attention_heads: DIMS.numHeads,
      num_key_value_heads: DIMS.numKvHeads,
      head_dim: DIMS.headDim,
      tie_word_embeddings: true,
      torch_dtype: 'bfloat16',
    });
    fs.writeFileSync(configFile, JSON.stringify(hf, null, 2));
    const config = { ...tiny.config, ...DIMS, tiedEmbeddings: true };
    const tensors = tensorTable(config).map((e) => ({ name: e.hf, dims: e.dims, norm: /norm\.weight$/.test(e.hf) }));
    const params = tensors.reduce((n, e) => n + e.dims.reduce((a, b) => a * b, 1), 0);
    const started = Date.now();
    const fileBytes = writeRandomBf16Safetensors(path.join(dir, 'model.safetensors'), tensors);
    t.comment(
      `wrote ${(params / 1e9).toFixed(2)}B parameters, ${(fileBytes / 1e9).toFixed(2)} GB of bf16 safetensors in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    t.ok(params > 1.4e9 && params < 1.7e9, 'about 1.5B parameters');

    const loadStarted = Date.now();
    const child = spawnSync(process.execPath, ['-e', CHILD, dir], { encoding: 'utf8', maxBuffer: 1 << 24 });
    t.equal(
      child.status,
      0,
      `the child loaded and scored (${((Date.now() - loadStarted) / 1000).toFixed(1)} s)${child.status ? `: ${child.stderr.slice(-2000)}` : ''}`,
    );
    if (child.status !== 0) return;
    const r = JSON.parse(child.stdout.trim().split('\n').pop());
    const bf16Bytes = params * 2;
    const allowance = r.baseline + IN_FLIGHT_BYTES;
    const limit = 1.3 * bf16Bytes + allowance;
    const gb = (x) => `${(x / 1e9).toFixed(2)} GB`;
    t.comment(`load ${r.seconds.toFixed(1)} s (${JSON.stringify(r.steps)}); device weights ${gb(r.weightBytes)}`);
    const vectorParams = tensors.filter((e) => e.dims.length === 1).reduce((n, e) => n + e.dims[0], 0);
    t.equal(
      r.weightBytes,
      2 * (params - vectorParams) + 4 * vectorParams,
      'device weights: bf16 matrices, f32 norms and biases',
    );
    t.comment(`peak RSS before the load (Node, plugin, client): ${gb(r.baseline)}`);
    t.ok(
      r.afterLoad <= limit,
      `peak RSS after the load ${gb(r.afterLoad)} <= 1.3 x ${gb(bf16Bytes)} + ${gb(allowance)} = ${gb(limit)} (f32 host copies alone would be ${gb(2 * bf16Bytes)})`,
    );
    // Scoring converts the whole [V, Dm] LM head to f32 for its logsumexp: that temporary is the activation allowance here.
    const lmHeadF32 = DIMS.vocabSize * DIMS.hiddenSize * 4;
    const scoreLimit = limit + lmHeadF32 + FIRST_PROGRAM_BYTES;
    t.ok(
      r.afterScore <= scoreLimit,
      `peak RSS after one small request ${gb(r.afterScore)} <= ${gb(scoreLimit)} (adds the f32 LM head temporary, ${gb(lmHeadF32)}, and ${gb(FIRST_PROGRAM_BYTES)} for compiling and running the program)`,
    );
    t.ok(
      r.scores.flat().every((x) => Number.isFinite(x) && x >= 0 && x <= 1),
      'the scores are probabilities',
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  t.end();
});
