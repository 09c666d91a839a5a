'use strict';
// The Gemma family (docs/models.md) on tiny random models the helpers write (GGUF
// with F32/F16 matrices, and Hugging Face directories), on the real CPU
// plugin:
// - Gemma 3 (q/k norms, five local layers with a window of 3 and RoPE base
//   10,000, one global layer with base 1e6 and linear RoPE scaling) and
//   Gemma 2 (local/global alternating with a window of 4, attention and final
//   soft caps), and a Mistral directory with a window on every layer: every
//   plan (serial, packed, prefix) in the CPU's attention forms, the GPU's
//   (joint, square), and the rows form with 3 query chunks or the square, within
//   1e-4 of a float64 numpy forward pass of the same weights that runs each
//   item alone as query + item (test/helpers/decoder_reference.py), the
//   query longer than the windows; serial within 1e-4 of packed and prefix;
//   cross-request passes (a group axis) the same;
// - Gemma (1) (no post norms, caps or windows; hidden_act, head_dim^-0.5):
//   a Hugging Face directory and an F16 GGUF, every plan within 1e-4 of the
//   same reference;
// - Gemma 3 with items after a 2,100-token query (positions past 2,000, RoPE
//   angles where f32 loses 1e-4 radians) and large q/k norms, every plan
//   within 1e-4 of the reference;
// - the config facts: the query scale from query_pre_attn_scalar, the layer
//   pattern, mistral as the Llama family, refusals that list what is supported;
// - the Gemma rerank template, chosen from the vocabulary.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Scorer } = require('..');
const M = require('../dist/model');
const { chooseTemplate, resolveTemplate } = require('../dist/scoring/requests/rerank-template');
const { makeTinyModel, writeTinyGguf, writeTinyHfDir } = require('./helpers/tiny-model');
const { referenceLabelLogprobs } = require('./helpers/numpy-reference');

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-gemma-'));
const TOL = 1e-4;

// 9 query tokens (longer than the windows), items of 1 to 6 tokens (some longer than a window).
const QUERY = [5, 9, 11, 3, 40, 17, 22, 30, 12];
const ITEMS = [[7, 8], [60, 61, 62, 1, 2, 3], [4], [33, 34, 35, 36], [50, 51, 52]];
const LABELS = [0, 5, 63, 31];

// Beside the CPU's forms (the Hugging Face directory's run), each model runs the GPU's and one more.
const JOINT_SQUARE = { prefixAttention: { kind: 'joint' }, causalAttention: { kind: 'square' } };
const FORMS = {
  gemma3: {
    'joint+square': JOINT_SQUARE,
    'ones_own+qc3': { prefixAttention: { kind: 'rows' }, causalAttention: { kind: 'chunked', queryChunks: 3 } },
  },
  gemma2: {
    'joint+square': JOINT_SQUARE,
    'ones_own+square': { prefixAttention: { kind: 'rows' }, causalAttention: { kind: 'square' } },
  },
};

function maxDiff(a, b) {
  let max = 0;
  a.forEach((row, i) => row.forEach((x, j) => (max = Math.max(max, Math.abs(x - b[i][j])))));
  return max;
}

const logprobs = (result) => result.scores.map((row) => row.map((p) => Math.log(p)));

/** Scores `request` (default QUERY/ITEMS) with every plan on a Scorer over `model`, each against `reference`. */
async function checkPlans(
  t,
  model,
  reference,
  options,
  what,
  request = { query: QUERY, items: ITEMS, labelTokenIds: LABELS },
) {
  // True f32 (an F16 file runs in bf16 by default where the CPU has bf16 dot units): the float64 reference's gate.
  const scorer = await Scorer.load({ model, diskCache: false, precision: 'highest', ...options });
  try {
    const out = {};
    for (const algorithm of ['serial', 'packed', 'prefix']) {
      const result = await scorer.score(request, { algorithm });
      t.equal(result.algorithm, algorithm, `${what}: ran ${algorithm}`);
      out[algorithm] = logprobs(result);
      const d = maxDiff(out[algorithm], reference);
      t.ok(d <= TOL, `${what} ${algorithm}: within ${TOL} of the float64 reference (max |diff| ${d.toExponential(2)})`);
    }
    for (const plan of ['packed', 'prefix']) {
      const d = maxDiff(out.serial, out[plan]);
      t.ok(d <= TOL, `${what}: serial within ${TOL} of ${plan} (${d.toExponential(2)})`);
    }
    return scorer;
  } catch (err) {
    scorer.dispose();
    throw err;
  }
}

function referenceFor(dir) {
  return referenceLabelLogprobs(
    dir,
    ITEMS.map((item) => [...QUERY, ...item]),
    LABELS,
  );
}

for (const arch of ['gemma3', 'gemma2']) {
  test(`${arch}: every plan and attention form within ${TOL} of the numpy reference, windows${arch === 'gemma2' ? ' and soft caps' : ''} included`, async (t) => {
    const tiny = makeTinyModel(arch, 5);
    const dir = writeTinyHfDir(tiny, path.join(work, `${arch}-hf`), { dtype: 'F32' });
    const gguf = writeTinyGguf(tiny, path.join(work, `${arch}.gguf`), { matrixType: 'F16', embeddingType: 'F16' });
    const reference = referenceFor(dir);
    // The reference must see the windows: without them its scores differ.
    const noWindow = path.join(work, `${arch}-hf-nowindow`);
    writeTinyHfDir(tiny, noWindow, { dtype: 'F32', config: { sliding_window: null } });
    t.ok(
      maxDiff(
        referenceLabelLogprobs(
          noWindow,
          ITEMS.map((item) => [...QUERY, ...item]),
          LABELS,
        ),
        reference,
      ) > 1e-3,
      'the windows change the reference scores',
    );

    const events = [];
    const hf = await checkPlans(t, dir, reference, { log: (e) => events.push(e) }, `${arch} safetensors, CPU forms`);
    const loadedEvent = events.find((e) => e.event === 'model_loaded');
    t.equal(loadedEvent.family, arch, 'the load log names the family');
    t.equal(
      loadedEvent.quantization,
      `F32 (${tiny.config.numLayers * (arch === 'gemma3' ? 13 : 11) + 2})`,
      `... the stored types (${loadedEvent.quantization})`,
    );
    t.equal(loadedEvent.contextLength, tiny.config.contextLength, '... and the context');
    const loaded = M.loadModelInfo(dir);
    t.equal(loaded.config.architecture, arch, 'family');
    t.deepEqual(loaded.config.slidingWindow, tiny.config.slidingWindow, 'window and layer pattern from config.json');
    const explained = hf.explain({ query: QUERY, items: ITEMS, labelTokenIds: LABELS });
    t.ok(
      explained.attention && typeof explained.attention.prefixAttention === 'string',
      `explain() names the attention forms (${JSON.stringify(explained.attention)})`,
    );
    if (hf.client.prefixAttentionKernel) {
      t.ok(
        /fused attention forms do not take/.test(explained.attention.note ?? ''),
        'explain() says why the kernels are not used',
      );
      t.equal(loadedEvent.attentionNote, explained.attention.note, 'so does the load log');
      t.notEqual(hf.prefixAttention.kind, 'kernel', 'the kernel form is replaced by a StableHLO form');
    }
    hf.dispose();
    for (const [name, options] of Object.entries(FORMS[arch])) {
      (await checkPlans(t, gguf, reference, options, `${arch} GGUF F16, ${name}`)).dispose();
    }

    if (arch !== 'gemma2') return;
    // Cross-request passes: two requests with different queries share passes (a group axis on every attention input).
    const scorer = await Scorer.load({
      model: gguf,
      diskCache: false,
      precision: 'highest',
      batching: 'cross-request',
    });
    const other = QUERY.slice(2);
    const requests = [QUERY, other].map((query) => scorer.normalize({ query, items: ITEMS, labelTokenIds: LABELS }));
    const outcomes = await scorer.scoreBatch(requests.map((request) => ({ request })));
    t.ok(scorer.stats().batchedPasses > 0, `the requests shared ${scorer.stats().batchedPasses} pass(es)`);
    const refOther = referenceLabelLogprobs(
      dir,
      ITEMS.map((item) => [...other, ...item]),
      LABELS,
    );
    t.ok(maxDiff(logprobs(outcomes[0].result), reference) <= TOL, `${arch} cross-request: request 1 within ${TOL}`);
    t.ok(maxDiff(logprobs(outcomes[1].result), refOther) <= TOL, `${arch} cross-request: request 2 within ${TOL}`);
    scorer.dispose();
  });
}

test('gemma (1): no post norms, caps or windows; every plan within 1e-4 of the numpy reference, from safetensors and GGUF', async (t) => {
  const tiny = makeTinyModel('gemma', 4);
  const dir = writeTinyHfDir(tiny, path.join(work, 'gemma-hf'), { dtype: 'F32' });
  const reference = referenceFor(dir);
  const config = M.loadModelInfo(dir).config;
  t.equal(config.architecture, 'gemma', 'model_type gemma loads as gemma');
  t.equal(config.gemma.postNorms, false, 'no post norms');
  t.equal(config.gemma.attentionScale, Math.fround(16 ** -0.5), 'scores scaled by head_dim^-0.5');
  t.equal(config.slidingWindow, undefined, 'no window');
  t.equal(config.gemma.finalSoftcap, undefined, 'no final soft cap');
  // transformers' GemmaConfig reads the legacy hidden_act "gelu" as the tanh approximation.
  const legacy = writeTinyHfDir(tiny, path.join(work, 'gemma-gelu'), { dtype: 'F32', config: { hidden_act: 'gelu' } });
  t.equal(M.loadModelInfo(legacy).config.architecture, 'gemma', 'hidden_act "gelu" loads');
  t.throws(
    () => M.loadModelInfo(writeTinyHfDir(tiny, path.join(work, 'gemma-silu'), { config: { hidden_act: 'silu' } })),
    /hidden_act "silu" is not supported for gemma/,
    'another activation is refused',
  );
  const events = [];
  (await checkPlans(t, dir, reference, { log: (e) => events.push(e) }, 'gemma safetensors, CPU forms')).dispose();
  const loadedEvent = events.find((e) => e.event === 'model_loaded');
  t.equal(
    loadedEvent.quantization,
    `F32 (${tiny.config.numLayers * 9 + 2})`,
    `the stored types (${loadedEvent.quantization}): no post-norm tensors`,
  );
  const gguf = writeTinyGguf(tiny, path.join(work, 'gemma.gguf'), { matrixType: 'F16', embeddingType: 'F16' });
  t.equal(M.loadModelInfo(gguf).config.gemma.postNorms, false, 'GGUF architecture gemma: no post norms');
  (await checkPlans(t, gguf, reference, JOINT_SQUARE, 'gemma GGUF F16, joint+square')).dispose();
});

test('gemma3: items after a 2,100-token query (positions past 2,000), every plan within 1e-4 of the reference', async (t) => {
  // An RoPE angle formed in f32 at position p is off by up to p * 2^-24
  // radians (1.2e-4 at 2,000). Gemma 3 270M's q/k norm multipliers reach
  // 24 (rms 2 to 4), so its scores reach tens to hundreds, where such angles
  // moved the target shape's logprobs by 2.9e-4. Here the tiny model's
  // multipliers (about 1) times 8: with angles formed in f32 this case is
  // 1.4e-4 from the reference, with the tables formed in f64
  // (lib/hlo/nn/functions.ts, rotaryTables) 1.6e-5.
  const tiny = makeTinyModel('gemma3', 7);
  for (const layer of tiny.weights.layers) for (const n of ['qNorm', 'kNorm']) layer[n] = layer[n].map((v) => 8 * v);
  const dir = writeTinyHfDir(tiny, path.join(work, 'gemma3-long'), {
    dtype: 'F32',
    config: { max_position_embeddings: 4096 },
  });
  const query = Array.from({ length: 2100 }, (_, i) => 3 + ((i * 37 + (i >> 3)) % 61));
  const items = [
    [7, 8, 9],
    [60, 61],
    [4, 5, 6, 12, 13],
  ];
  const reference = referenceLabelLogprobs(
    dir,
    items.map((item) => [...query, ...item]),
    LABELS,
  );
  (
    await checkPlans(t, dir, reference, { maxRequestTokens: 1e5 }, 'gemma3 at positions past 2,000', {
      query,
      items,
      labelTokenIds: LABELS,
    })
  ).dispose();
});

test('mistral: a Hugging Face directory with model_type mistral loads as the Llama family, its window on every layer', async (t) => {
  const tiny = makeTinyModel('llama', 9);
  const dir = writeTinyHfDir(tiny, path.join(work, 'mistral'), {
    dtype: 'F32',
    config: { model_type: 'mistral', architectures: ['MistralForCausalLM'], sliding_window: 4 },
  });
  const info = M.loadModelInfo(dir);
  t.equal(info.config.architecture, 'llama', 'architecture llama');
  t.deepEqual(info.config.slidingWindow, { window: 4, layers: [true, true] }, 'sliding_window 4 on both layers');
  (await checkPlans(t, dir, referenceFor(dir), {}, 'mistral window 4')).dispose();
  const open = path.join(work, 'mistral-null');
  writeTinyHfDir(tiny, open, { dtype: 'F32', config: { model_type: 'mistral', sliding_window: null } });
  t.equal(M.loadModelInfo(open).config.slidingWindow, undefined, 'sliding_window null: no window');
});

test('config: query_pre_attn_scalar, layer patterns, refusals that list what is supported', (t) => {
  const tiny = makeTinyModel('gemma3', 2);
  const dir = writeTinyHfDir(tiny, path.join(work, 'gemma3-scalar'), {
    dtype: 'F32',
    config: { query_pre_attn_scalar: 24, layer_types: undefined, sliding_window_pattern: 3 },
  });
  const config = M.loadModelInfo(dir).config;
  t.equal(config.gemma.attentionScale, Math.fround(24 ** -0.5), 'attention scale query_pre_attn_scalar^-0.5');
  t.deepEqual(
    config.slidingWindow.layers,
    [true, true, false, true, true, false],
    'sliding_window_pattern 3: every third layer global',
  );
  t.equal(
    M.loadModelInfo(
      writeTinyHfDir(tiny, path.join(work, 'gemma3-default'), { config: { layer_types: undefined } }),
    ).config.slidingWindow.layers.join(),
    'true,true,true,true,true,false',
    'Gemma 3 default: 5 local, 1 global',
  );
  // sqrt(hidden) in the embedding's dtype, as transformers rounds it (the helper's bf16 rounding, not lib's).
  const { f32ToBf16Bits } = require('./helpers/tiny-model');
  const bf16 = M.loadModelInfo(writeTinyHfDir(tiny, path.join(work, 'gemma3-bf16'), { dtype: 'BF16' })).config.gemma
    .embeddingScale;
  t.equal(
    bf16,
    new Float32Array(new Uint32Array([f32ToBf16Bits(Math.sqrt(32)) << 16]).buffer)[0],
    `BF16 directory: embedding scale ${bf16} (sqrt(32) rounded to bf16)`,
  );
  t.equal(config.gemma.embeddingScale, Math.fround(Math.sqrt(32)), 'F32 directory: embedding scale sqrt(32) in f32');
  const g2 = makeTinyModel('gemma2', 2);
  const g2config = M.loadModelInfo(writeTinyGguf(g2, path.join(work, 'g2-pattern.gguf'))).config;
  t.deepEqual(g2config.slidingWindow.layers, [true, false, true], 'Gemma 2 GGUF: even layers local (llama.cpp)');
  t.equal(g2config.gemma.attentionSoftcap, 2, 'attn_logit_softcapping from GGUF');
  t.equal(g2config.gemma.finalSoftcap, 3, 'final_logit_softcapping from GGUF');
  // transformers' Gemma2Config defaults for an absent key; null means none.
  const g2hf = M.loadModelInfo(
    writeTinyHfDir(g2, path.join(work, 'g2-defaults'), {
      config: { attn_logit_softcapping: undefined, final_logit_softcapping: null, sliding_window: null },
    }),
  ).config;
  t.equal(g2hf.gemma.attentionSoftcap, 50, 'attn_logit_softcapping absent: 50 (Gemma2Config default)');
  t.equal(g2hf.gemma.finalSoftcap, undefined, 'final_logit_softcapping null: no cap');
  t.equal(g2hf.slidingWindow, undefined, 'sliding_window null: no window');

  const phi = writeTinyHfDir(makeTinyModel('llama', 1), path.join(work, 'phi'), { config: { model_type: 'phi3' } });
  t.throws(
    () => M.loadModelInfo(phi),
    /model_type "phi3" is not supported by pjrt-score \(supported: llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3, gemma3_text\)/,
    'HF: unsupported model_type lists the supported ones',
  );
  const g = writeTinyGguf(makeTinyModel('llama', 1), path.join(work, 'phi.gguf'), { metadata: [] });
  const bytes = fs.readFileSync(g);
  bytes.write('phi3 ', bytes.indexOf('llama', 0, 'latin1'), 'latin1');
  fs.writeFileSync(g, bytes);
  t.throws(
    () => M.loadModelInfo(g),
    /GGUF architecture "phi3 " is not supported by pjrt-score \(supported: llama, qwen2, qwen3, gemma, gemma2, gemma3\)/,
    'GGUF: unsupported architecture lists the supported ones',
  );
  const multimodal = writeTinyHfDir(tiny, path.join(work, 'gemma3-mm'), {
    config: { model_type: 'gemma3', text_config: {} },
  });
  t.throws(
    () => M.loadModelInfo(multimodal),
    /text_config\) is not supported/,
    'a multimodal gemma3 config is refused by name',
  );
  t.end();
});

test('rerank: the Gemma template is chosen from the vocabulary', (t) => {
  const vocab = new Map([
    ['<start_of_turn>', 105],
    ['<end_of_turn>', 106],
  ]);
  const tokenizer = {
    tokenToId: (s) => vocab.get(s),
    encode: (s) => Array.from(s, (c) => c.charCodeAt(0)).map((c) => (c === 121 ? 1000 : c === 110 ? 1001 : c)),
  };
  const template = chooseTemplate({ name: 'gemma-3-270m', architecture: 'gemma3' }, tokenizer);
  t.equal(template.name, 'gemma-yes-no', 'Gemma turn tokens -> gemma-yes-no');
  const yesNo = {
    ...tokenizer,
    encode: (s) => (s === 'yes' ? [1000] : s === 'no' ? [1001] : Array.from(s, (c) => c.charCodeAt(0))),
  };
  const resolved = resolveTemplate(template, yesNo);
  const prefix = resolved.prefixTokens('q', 'i');
  t.equal(prefix[0], 105, 'the prompt opens a <start_of_turn>');
  t.equal(String.fromCharCode(...prefix.slice(1, 6)), 'user\n', '... user turn');
  const doc = resolved.documentTokens('d', 'i');
  const tail = doc.slice(-9);
  t.deepEqual(tail.slice(0, 3), [106, 10, 105], 'the document is followed by <end_of_turn>\\n<start_of_turn>');
  t.equal(String.fromCharCode(...tail.slice(3)), 'model\n', '... model\\n, where the answer is read');
  t.end();
});

test('teardown', (t) => {
  fs.rmSync(work, { recursive: true, force: true });
  t.end();
});
