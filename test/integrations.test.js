'use strict';
// The framework adapters (docs/design.md "Integrations") with the real
// packages and the real default model: each framework's own entry point (the
// AI SDK's rerank(), LangChain's ContextualCompressionRetriever, LlamaIndex's
// RetrieverQueryEngine with the adapter among its nodePostprocessors) returns
// the same order and the same scores, bit for bit, as a direct
// scorer.rerank() on the same documents (the reference). One Scorer is shared.
const test = require('tape');
const { Scorer } = require('..');
const { PjrtScoreRerankingModel } = require('pjrt-score/ai-sdk');
const langchain = require('pjrt-score/langchain');
const llamaindex = require('pjrt-score/llamaindex');
const { Document } = require('@langchain/core/documents');
const { BaseRetriever: LcRetriever } = require('@langchain/core/retrievers');
const { ContextualCompressionRetriever } = require('@langchain/classic/retrievers/contextual_compression');
const { TextNode, RetrieverQueryEngine, BaseRetriever: LiRetriever, EngineResponse } = require('llamaindex');

const QUERY = 'What is the capital of France?';
const TEXTS = [
  'Bananas are rich in potassium.',
  'Paris is the capital and largest city of France.',
  'The Eiffel Tower was completed in 1889.',
  'Berlin is the capital of Germany.',
  'Lyon is a city in France known for its food.',
];

let scorer;
let reference;
let rerank; // from 'ai', an ES module package
async function rejects(t, promise, pattern, what) {
  const error = await promise.then(
    () => null,
    (e) => e,
  );
  t.match(error ? error.message : 'resolved', pattern, `${what}: ${error ? error.message : 'resolved'}`);
}

test('setup: one Scorer, and the reference ranking from scorer.rerank()', async (t) => {
  ({ rerank } = await import('ai'));
  scorer = await Scorer.load({ diskCache: true });
  reference = await scorer.rerank({ query: QUERY, documents: TEXTS });
  t.equal(reference.results.length, TEXTS.length, 'every document ranked');
});

/** [index, score] pairs of the reference, best first, cut to n. */
const top = (response, n) => response.results.slice(0, n).map((r) => [r.index, r.relevanceScore]);

/** Bit-for-bit: same indices in the same order, and each score the same float (Object.is). */
function sameRanking(t, got, want, what) {
  t.deepEqual(
    got.map((g) => g[0]),
    want.map((w) => w[0]),
    `${what}: same order`,
  );
  t.ok(
    got.length === want.length && got.every((g, i) => Object.is(g[1], want[i][1])),
    `${what}: same scores bit for bit (${got.map((g) => g[1]).join(', ')})`,
  );
}

test("AI SDK: rerank() from 'ai' with the model: string documents, topN, provider metadata", async (t) => {
  const model = PjrtScoreRerankingModel.fromScorer(scorer);
  t.equal(model.specificationVersion, 'v4', 'the specification version @ai-sdk/provider 4 defines');
  const result = await rerank({ model, query: QUERY, documents: TEXTS, topN: 3 });
  sameRanking(
    t,
    result.ranking.map((r) => [r.originalIndex, r.score]),
    top(reference, 3),
    'rerank({ topN: 3 })',
  );
  t.deepEqual(
    result.rerankedDocuments,
    top(reference, 3).map(([i]) => TEXTS[i]),
    'rerankedDocuments are the documents in that order',
  );
  const meta = result.providerMetadata.pjrtScore;
  t.equal(meta.model, scorer.modelName, 'metadata: model');
  t.equal(meta.algorithm, reference.algorithm, `metadata: the plan (${meta.algorithm})`);
  t.ok(['serial', 'packed', 'prefix'].includes(meta.algorithm), 'metadata: a plan name');
  t.equal(meta.template, 'chatml-yes-no', 'metadata: template');
  t.equal(meta.promptTokens, reference.usage.promptTokens, `metadata: prompt tokens (${meta.promptTokens})`);
  t.equal(meta.totalTokens, reference.usage.totalTokens, 'metadata: total tokens');
  t.equal(result.response.modelId, scorer.modelName, 'response.modelId');
});

test('AI SDK: object documents through rankFields (providerOptions), and an instruction', async (t) => {
  const docs = TEXTS.map((text, i) => ({ title: `doc ${i}`, text }));
  const instruction = 'Does the document answer the query?';
  const want = await scorer.rerank({ query: QUERY, documents: docs, rankFields: ['title', 'text'], instruction });
  const model = PjrtScoreRerankingModel.fromScorer(scorer, { instruction });
  const result = await rerank({
    model,
    query: QUERY,
    documents: docs,
    providerOptions: { pjrtScore: { rankFields: ['title', 'text'] } },
  });
  // The first request runs the packed pass (RoPE inside its attention call), the repeat the plan the
  // prefix cache gives it (RoPE in XLA): other programs, so the same order and scores apart by rounding
  // alone (an f32 rounding of a rotation can move a bf16 rounding after it under bf16 dots).
  const got = result.ranking.map((r) => [r.originalIndex, r.score]);
  const expected = top(want, docs.length);
  t.deepEqual(
    got.map((g) => g[0]),
    expected.map((w) => w[0]),
    'object documents: same order',
  );
  const worst = Math.max(...got.map((g, i) => Math.abs(g[1] - expected[i][1])));
  t.ok(
    got.length === expected.length && worst <= 1e-4,
    `object documents: the same scores within 1e-4 (worst ${worst.toExponential(2)})`,
  );
  t.deepEqual(result.ranking[0].document, docs[want.results[0].index], 'each ranking entry carries its object');
});

test('AI SDK: an aborted signal rejects with an AbortError; bad options are clear errors', async (t) => {
  const model = PjrtScoreRerankingModel.fromScorer(scorer);
  const controller = new AbortController();
  controller.abort();
  const before = scorer.stats().itemsScored;
  const error = await rerank({ model, query: QUERY, documents: TEXTS, abortSignal: controller.signal }).then(
    () => null,
    (e) => e,
  );
  t.ok(error, 'rejects');
  t.equal(error && error.name, 'AbortError', `an AbortError: ${error && error.message}`);
  t.equal(scorer.stats().itemsScored, before, 'nothing was scored');
  const bad = await rerank({
    model,
    query: QUERY,
    documents: TEXTS,
    providerOptions: { pjrtScore: { rankfields: ['x'] } },
  }).then(
    () => null,
    (e) => e,
  );
  t.match(bad && bad.message, /unknown option "rankfields"/, `unknown provider option: ${bad && bad.message}`);
  t.throws(() => PjrtScoreRerankingModel.fromScorer({}), /expected a Scorer/, 'fromScorer of a non-Scorer');
  t.throws(
    () => PjrtScoreRerankingModel.fromScorer(scorer, { topn: 3 }),
    /unknown setting "topn"/,
    'an unknown setting',
  );
});

test('LangChain: ContextualCompressionRetriever with the compressor: order, metadata.relevanceScore, topN', async (t) => {
  class ListRetriever extends LcRetriever {
    lc_namespace = ['pjrt-score', 'test'];
    async _getRelevantDocuments() {
      return TEXTS.map((text, i) => new Document({ pageContent: text, metadata: { source: `s${i}` }, id: `d${i}` }));
    }
  }
  const compressor = langchain.fromScorer(scorer, { topN: 3 });
  const retriever = new ContextualCompressionRetriever({
    baseCompressor: compressor,
    baseRetriever: new ListRetriever(),
  });
  const docs = await retriever.invoke(QUERY);
  const got = docs.map((d) => [TEXTS.indexOf(d.pageContent), d.metadata.relevanceScore]);
  sameRanking(t, got, top(reference, 3), 'retriever.invoke()');
  t.deepEqual(
    docs.map((d) => d.metadata.source),
    top(reference, 3).map(([i]) => `s${i}`),
    'the documents keep their metadata',
  );
  t.deepEqual(
    docs.map((d) => d.id),
    top(reference, 3).map(([i]) => `d${i}`),
    'and their ids',
  );
  t.deepEqual(await compressor.compressDocuments([], QUERY), [], 'no documents: none back');
  const all = await langchain.PjrtScoreRerank.fromScorer(scorer).rerank(TEXTS, QUERY);
  sameRanking(
    t,
    all.map((r) => [r.index, r.relevanceScore]),
    top(reference, TEXTS.length),
    'rerank(): every document without topN',
  );
});

test("LlamaIndex: RetrieverQueryEngine's nodePostprocessors run the postprocessor; query() and retrieve()", async (t) => {
  const nodes = TEXTS.map((text, i) => new TextNode({ text, id_: `n${i}`, metadata: { source: `s${i}` } }));
  class ListRetriever extends LiRetriever {
    async _retrieve() {
      return nodes.map((node) => ({ node, score: 0 }));
    }
  }
  // The answer is the retrieved, postprocessed nodes (no LLM here): a synthesizer that only keeps them.
  const synthesizer = { synthesize: async ({ nodes: kept }) => EngineResponse.fromResponse('', false, kept) };
  const post = llamaindex.fromScorer(scorer, { topN: 3 });
  const engine = new RetrieverQueryEngine(new ListRetriever(), synthesizer, [post]);
  const response = await engine.query({ query: QUERY });
  const got = response.sourceNodes.map((n) => [nodes.indexOf(n.node), n.score]);
  sameRanking(t, got, top(reference, 3), 'engine.query()');
  const retrieved = await engine.retrieve(QUERY);
  sameRanking(
    t,
    retrieved.map((n) => [nodes.indexOf(n.node), n.score]),
    top(reference, 3),
    'engine.retrieve()',
  );
  const parts = await post.postprocessNodes(
    nodes.map((node) => ({ node, score: 0 })),
    [{ type: 'text', text: QUERY }],
  );
  sameRanking(
    t,
    parts.map((n) => [nodes.indexOf(n.node), n.score]),
    top(reference, 3),
    'a query in message parts',
  );
  await rejects(
    t,
    post.postprocessNodes(
      nodes.map((node) => ({ node })),
      undefined,
    ),
    /needs the query/,
    'no query: a clear error',
  );
});

test('LangChain and LlamaIndex: a fired signal in rerank() / postprocessNodes() options rejects with an AbortError', async (t) => {
  const controller = new AbortController();
  controller.abort();
  const before = scorer.stats().itemsScored;
  const lc = await langchain
    .fromScorer(scorer)
    .rerank(TEXTS, QUERY, { signal: controller.signal })
    .then(
      () => null,
      (e) => e,
    );
  t.equal(lc && lc.name, 'AbortError', `LangChain: ${lc && lc.message}`);
  const nodes = TEXTS.map((text) => new TextNode({ text }));
  const li = await llamaindex
    .fromScorer(scorer)
    .postprocessNodes(
      nodes.map((node) => ({ node })),
      QUERY,
      { signal: controller.signal },
    )
    .then(
      () => null,
      (e) => e,
    );
  t.equal(li && li.name, 'AbortError', `LlamaIndex: ${li && li.message}`);
  t.equal(scorer.stats().itemsScored, before, 'nothing was scored');
});

test('ownership: fromScorer leaves the Scorer alone; load() owns its Scorer and disposes it', async (t) => {
  const shared = PjrtScoreRerankingModel.fromScorer(scorer);
  shared.dispose();
  const again = await scorer.rerank({ query: QUERY, documents: TEXTS });
  sameRanking(
    t,
    top(again, TEXTS.length),
    top(reference, TEXTS.length),
    'the app Scorer still reranks after the adapter is disposed',
  );
  await rejects(
    t,
    shared.doRerank({ query: QUERY, documents: { type: 'text', values: TEXTS } }),
    /disposed/,
    'the disposed adapter refuses',
  );
  const owned = await llamaindex.PjrtScoreRerank.load({ diskCache: true });
  const nodes = TEXTS.map((text) => new TextNode({ text }));
  const ranked = await owned.postprocessNodes(
    nodes.map((node) => ({ node })),
    QUERY,
  );
  sameRanking(
    t,
    ranked.map((n) => [nodes.indexOf(n.node), n.score]),
    top(reference, TEXTS.length),
    'a loaded Scorer ranks the same',
  );
  const own = owned.source.scorer;
  t.notEqual(own, scorer, 'its own Scorer');
  owned.dispose();
  owned.dispose();
  await rejects(
    t,
    own.rerank({ query: QUERY, documents: TEXTS }),
    /Scorer has been disposed/,
    'disposing the adapter disposed its Scorer',
  );
});

test('teardown', (t) => {
  scorer.dispose();
  t.end();
});
