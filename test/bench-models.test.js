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
