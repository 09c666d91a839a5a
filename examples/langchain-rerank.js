'use strict';
// A LangChain retriever over a few dozen documents, its results reranked in
// process by pjrt-score's document compressor in a ContextualCompressionRetriever.
// `node examples/langchain-rerank.js` (needs `@langchain/core` and `@langchain/classic`)
const { Document } = require('@langchain/core/documents');
const { BaseRetriever } = require('@langchain/core/retrievers');
const { ContextualCompressionRetriever } = require('@langchain/classic/retrievers/contextual_compression');
const { Scorer } = require('pjrt-score');
const { PjrtScoreRerank } = require('pjrt-score/langchain');
const { DOCUMENTS, keywordSearch } = require('./rag-corpus');

class KeywordRetriever extends BaseRetriever {
  lc_namespace = ['examples', 'keyword'];
  async _getRelevantDocuments(query) {
    return keywordSearch(query, 8).map(
      (i) => new Document({ pageContent: DOCUMENTS[i], metadata: { source: `doc-${i}` } }),
    );
  }
}

(async () => {
  const scorer = await Scorer.load();
  const retriever = new ContextualCompressionRetriever({
    baseCompressor: PjrtScoreRerank.fromScorer(scorer, { topN: 3, instruction: 'Does the document answer the query?' }),
    baseRetriever: new KeywordRetriever(),
  });
  const docs = await retriever.invoke('What is the capital of France?');
  for (const d of docs)
    console.log(`${d.metadata.relevanceScore.toFixed(3)}  ${d.pageContent}  (${d.metadata.source})`);
  scorer.dispose(); // the app's Scorer: the compressor never disposes it
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
