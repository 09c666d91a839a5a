'use strict';
// The rerank requests of npm run bench's models section (docs/performance.md, "By model"), as token
// ids for the random models of scripts/bench/lib/random-model.js: a ~80-token prompt with 20
// documents of 128 and of 512 tokens and 100 of 128, and SGLang's PR shape (300-token query, 10
// items of 20 tokens). Two labels, softmax over them, as the rerankers score (yes / no).
const { LABELS, tokens } = require('./workloads');

/** Each request's shape, in workloads.js's terms (usefulFlops reads queryTokens, itemTokens, items). */
const MODEL_REQUESTS = {
  pr: { name: 'pr', description: '300-token query, 10 items x 20 tokens', queryTokens: 300, items: 10, itemTokens: 20 },
  '20x128': {
    name: '20x128',
    description: '80-token prompt, 20 documents x 128 tokens',
    queryTokens: 80,
    items: 20,
    itemTokens: 128,
  },
  '20x512': {
    name: '20x512',
    description: '80-token prompt, 20 documents x 512 tokens',
    queryTokens: 80,
    items: 20,
    itemTokens: 512,
  },
  '100x128': {
    name: '100x128',
    description: '80-token prompt, 100 documents x 128 tokens',
    queryTokens: 80,
    items: 100,
    itemTokens: 128,
  },
};

/** Timed calls per case, after one untimed warm-up; each a fresh request (its own token values); the median is the figure. */
const TIMED_CALLS = 3;

/**
 * A request of the shape for a model with `vocab` tokens: workloads.js's token ids (in [100, 48100))
 * and labels, folded into [100, vocab) where the vocabulary is smaller (the toy presets).
 * `variant` 0 is the warm-up, 1..TIMED_CALLS the timed calls.
 */
function modelRequest(shape, variant, vocab) {
  const fold = (id) => (id < vocab ? id : 100 + ((id - 100) % (vocab - 100)));
  const labels = LABELS.map(fold);
  if (labels[0] === labels[1]) throw new Error(`a vocabulary of ${vocab} tokens folds the two labels together`);
  return {
    query: tokens(shape.queryTokens, 7000 + variant).map(fold),
    items: Array.from({ length: shape.items }, (_, i) =>
      tokens(shape.itemTokens, 300000 * (variant + 1) + i).map(fold),
    ),
    labelTokenIds: labels,
    applySoftmax: true,
  };
}

module.exports = { MODEL_REQUESTS, TIMED_CALLS, modelRequest };
