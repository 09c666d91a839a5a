'use strict';
// The scoring service in-process: start it, send one POST /v1/score (SGLang's
// Score API) and one POST /v1/rerank (Cohere's rerank JSON), print the
// answers, stop. `node examples/service.js`; `npx pjrt-score serve` serves the
// same routes from the shell.
const pino = require('pino');
const { startServer } = require('..');

async function post(url, body) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`);
  return response.json();
}

(async () => {
  // port 0: a free port; warmup none: nothing compiled before the first request; logs on stderr.
  const server = await startServer({ port: 0, warmup: [], logger: pino(pino.destination(2)) });
  try {
    await server.ready;

    // P(" yes") against P(" no") for each item (9805 and 787 are SmolLM2's " yes" and " no").
    const score = await post(`${server.url}/v1/score`, {
      query: 'Is this a fruit? Answer yes or no:',
      items: [' apple', ' car'],
      label_token_ids: [9805, 787],
      apply_softmax: true,
    });
    console.log('POST /v1/score');
    [' apple', ' car'].forEach((item, i) =>
      console.log(`${item.trim().padEnd(8)} P(yes) = ${score.scores[i][0].toFixed(3)}`),
    );

    const rerank = await post(`${server.url}/v1/rerank`, {
      query: 'What is the capital of France?',
      documents: [
        'Bananas are rich in potassium.',
        'Paris is the capital and largest city of France.',
        'The Eiffel Tower was completed in 1889.',
        'Berlin is the capital of Germany.',
      ],
      instruction: 'Does the document answer the query?',
      return_documents: true,
    });
    console.log('POST /v1/rerank');
    for (const r of rerank.results) console.log(`${r.relevance_score.toFixed(3)}  [${r.index}] ${r.document.text}`);
  } finally {
    await server.close();
  }
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
