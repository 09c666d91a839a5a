'use strict';
// A LlamaIndex retriever over a few dozen nodes, its results reranked in
// process by pjrt-score's node postprocessor in a query engine. No LLM here,
// so the engine's synthesizer only returns the nodes it is given; a real app
// passes its own (the default needs Settings.llm).
// `node examples/llamaindex-rerank.js` (needs `llamaindex`)
const { BaseRetriever, EngineResponse, RetrieverQueryEngine, TextNode } = require('llamaindex');
const { Scorer } = require('pjrt-score');
const { PjrtScoreRerank } = require('pjrt-score/llamaindex');
const { DOCUMENTS, keywordSearch } = require('./rag-corpus');

const nodes = DOCUMENTS.map((text, i) => new TextNode({ text, id_: `doc-${i}` }));

class KeywordRetriever extends BaseRetriever {
  async _retrieve({ query }) {
    return keywordSearch(query, 8).map((i) => ({ node: nodes[i], score: 0 }));
  }
}

(async () => {
  const scorer = await Scorer.load();
  const synthesizer = { synthesize: async ({ nodes: kept }) => EngineResponse.fromResponse('', false, kept) };
  const engine = new RetrieverQueryEngine(new KeywordRetriever(), synthesizer, [
    PjrtScoreRerank.fromScorer(scorer, { topN: 3, instruction: 'Does the document answer the query?' }),
  ]);
  const { sourceNodes } = await engine.query({ query: 'What is the capital of France?' });
  for (const n of sourceNodes) console.log(`${n.score.toFixed(3)}  ${n.node.text}  (${n.node.id_})`);
  scorer.dispose(); // the app's Scorer: the postprocessor never disposes it
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
