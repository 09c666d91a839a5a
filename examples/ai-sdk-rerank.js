'use strict';
// Retrieve by keywords, then rerank in process with the AI SDK's rerank()
// and pjrt-score's reranking model over the app's Scorer.
// `node examples/ai-sdk-rerank.js` (needs `ai`)
const { Scorer } = require('pjrt-score');
const { PjrtScoreRerankingModel } = require('pjrt-score/ai-sdk');
const { DOCUMENTS, keywordSearch } = require('./rag-corpus');

(async () => {
  const { rerank } = await import('ai'); // an ES module package
  const scorer = await Scorer.load();
  const model = PjrtScoreRerankingModel.fromScorer(scorer, { instruction: 'Does the document answer the query?' });
  const query = 'What is the capital of France?';
  const candidates = keywordSearch(query, 8).map((i) => DOCUMENTS[i]);
  const { ranking, providerMetadata } = await rerank({ model, query, documents: candidates, topN: 3 });
  for (const r of ranking) console.log(`${r.score.toFixed(3)}  ${r.document}`);
  const meta = providerMetadata.pjrtScore;
  console.log(
    `${meta.model}, plan ${meta.algorithm}, ${meta.promptTokens} prompt tokens, ${candidates.length} candidates of ${DOCUMENTS.length}`,
  );
  scorer.dispose(); // the app's Scorer: the model never disposes it
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
