'use strict';
// The random checkpoints of npm run bench's models section (scripts/bench/lib/random-model.js;
// docs/performance.md, "By model"), at full size without writing them: each preset's config.json
// builds, in transformers' own model classes (on the meta device: no memory), a model whose
// state_dict has exactly the tensors the preset writes, with their shapes (the tied head aside);
// and our loader reads each config as the preset's dims.
const test = require('tape');
const path = require('node:path');
const { PRESETS, hfConfig, hfTensors } = require('../scripts/bench/lib/random-model');
const { pipTargetDir, python } = require('../scripts/lib/pip-target');
const { configFromHf } = require('../dist/model/config');

const META_MODELS = `
import json, sys
import torch
from transformers import AutoConfig, AutoModelForCausalLM
out = {}
for name, config in json.load(sys.stdin).items():
    cfg = AutoConfig.for_model(**config)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    out[name] = {"class": type(model).__name__, "tied": model.lm_head.weight is model.model.embed_tokens.weight,
                 "tensors": {k: list(v.shape) for k, v in model.state_dict().items()}}
print(json.dumps(out))
`;

test("every preset's tensors are the ones transformers' model of its config holds", (t) => {
  const pythonPath = [
    pipTargetDir('torch==2.15.0', 'torch/__init__.py'),
    pipTargetDir('transformers==5.24.0', 'transformers/__init__.py'),
  ].join(path.delimiter);
  const configs = Object.fromEntries(Object.entries(PRESETS).map(([name, dims]) => [name, hfConfig(dims)]));
  const r = python(['-c', META_MODELS], { PYTHONPATH: pythonPath, PYTHONNOUSERSITE: '1' }, JSON.stringify(configs));
  t.equal(
    r.status,
    0,
    `transformers built every preset on the meta device${r.status ? `: ${r.stderr.trim().split('\n').slice(-5).join(' ')}` : ''}`,
  );
  const models = JSON.parse(r.stdout);
  for (const [name, dims] of Object.entries(PRESETS)) {
    const m = models[name];
    t.equal(m.class, configs[name].architectures[0], `${name}: transformers builds ${configs[name].architectures[0]}`);
    t.ok(m.tied, `${name}: the head is the embedding (tied)`);
    const theirs = Object.entries(m.tensors)
      .filter(([k]) => k !== 'lm_head.weight')
      .sort(([a], [b]) => a.localeCompare(b));
    const ours = hfTensors(dims)
      .map((x) => [x.name, x.dims])
      .sort(([a], [b]) => a.localeCompare(b));
    t.deepEqual(ours, theirs, `${name}: ${ours.length} tensors, names and shapes as transformers' state_dict`);
  }
  t.end();
});

test("our loader reads every preset's config as its dims", (t) => {
  for (const [name, dims] of Object.entries(PRESETS)) {
    const c = configFromHf(hfConfig(dims));
    t.deepEqual(
      [
        c.architecture,
        c.vocabSize,
        c.hiddenSize,
        c.intermediateSize,
        c.numLayers,
        c.numHeads,
        c.numKvHeads,
        c.headDim,
        c.tiedEmbeddings,
        c.attentionBias,
        c.qkNorm,
        c.gemma !== undefined,
      ],
      [
        dims.arch,
        dims.vocab,
        dims.hidden,
        dims.mlp,
        dims.layers,
        dims.heads,
        dims.kvHeads,
        dims.headDim,
        true,
        dims.arch === 'qwen2',
        dims.arch === 'qwen3',
        dims.arch === 'gemma',
      ],
      `${name}: ${dims.arch}, ${dims.layers} layers of ${dims.hidden}, ${dims.heads} / ${dims.kvHeads} heads of ${dims.headDim}, MLP ${dims.mlp}, vocab ${dims.vocab}`,
    );
  }
  t.end();
});

test('--models-merge: a shape run again replaces its rows, the others keep their run and roofs; another machine is refused', (t) => {
  const { mergeModelsRuns, compareModelsTable } = require('../scripts/bench/lib/models-table');
  const machine = { cpu: 'Xeon', cpuGeneration: 'family 6 model 207', cores: 2, memoryGiB: 24 };
  const ours = (seconds) => ({
    auto: { seconds, gflops: 100, precision: 'highest' },
    highest: { seconds, gflops: 100 },
  });
  const peers = (seconds) => ({ openvino: { f32: { seconds }, bf16: { error: 'gate' } } });
  const row = (model, request, seconds) => ({ model, request, ours: ours(seconds), peers: peers(2 * seconds) });
  const first = {
    machine: { ...machine, date: '2026-11-29T17:50:03.795Z' },
    roofs: { f32: 300, bf16: 150 },
    command: 'npm run bench -- --models-only',
    rows: [
      row('qwen3_0_6b', 'pr', 1),
      row('gemma_2b', 'pr', 7),
      row('gemma_2b', '20x128', 35),
      row('qwen3_4b', 'pr', 12),
    ],
  };
  const again = {
    machine: { ...machine, date: '2026-11-29T19:20:00.000Z' },
    roofs: { f32: 200, bf16: 100 },
    command: 'npm run bench -- --models-only --models gemma_2b --models-merge',
    rows: [row('gemma_2b', '20x128', 30), row('gemma_2b', 'pr', 5)],
  };
  const merged = mergeModelsRuns(first, again);
  t.deepEqual(
    merged.rows.map((r) => [r.model, r.request, r.ours.auto.seconds, r.run.date]),
    [
      ['qwen3_0_6b', 'pr', 1, first.machine.date],
      ['gemma_2b', 'pr', 5, again.machine.date],
      ['gemma_2b', '20x128', 30, again.machine.date],
      ['qwen3_4b', 'pr', 12, first.machine.date],
    ],
    "the run's rows replace the same model and request, in the table's order; the others stay",
  );
  t.deepEqual(
    merged.runs.map((r) => r.date),
    [first.machine.date, again.machine.date],
    'both runs listed, oldest first',
  );
  compareModelsTable(merged.rows, merged.roofs);
  t.deepEqual(
    merged.rows.map((r) => [r.ours.auto.roof, r.ours.auto.ratioToFasterPeer]),
    [
      [300, 2],
      [200, 2],
      [200, 2],
      [300, 2],
    ],
    "each row against its own run's roof and its own peers",
  );
  const third = mergeModelsRuns(merged, { ...again, machine: { ...again.machine, date: '2026-11-29T20:00:00.000Z' } });
  t.deepEqual(
    third.runs.map((r) => r.date),
    [first.machine.date, '2026-11-29T20:00:00.000Z'],
    'a run none of whose rows is left is dropped from the list',
  );
  t.throws(
    () => mergeModelsRuns(first, { ...again, machine: { ...again.machine, cores: 16 } }),
    /ran on Xeon \(family 6 model 207\), 2 cores, 24 GiB, this run on Xeon \(family 6 model 207\), 16 cores/,
    'a run on another machine is refused, both named',
  );
  t.end();
});
