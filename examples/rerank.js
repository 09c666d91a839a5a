'use strict';
// Rerank documents against a query with the default model: every document
// in one plan behind the shared prompt. `node examples/rerank.js`
const { Scorer } = require('..');

(async () => {
  const scorer = await Scorer.load();
  const { results, template, usage } = await scorer.rerank({
    query: 'What is the capital of France?',
    documents: [
      'Bananas are rich in potassium.',
      'Paris is the capital and largest city of France.',
      'The Eiffel Tower was completed in 1889.',
      'Berlin is the capital of Germany.',
    ],
    instruction: 'Does the document answer the query?',
    returnDocuments: true,
  });
  for (const r of results) console.log(`${r.relevanceScore.toFixed(3)}  [${r.index}] ${r.document}`);
  console.log(`template ${template}, ${usage.promptTokens} prompt tokens (the prompt once, plus every document)`);
  scorer.dispose();
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
