'use strict';
/**
 * The workloads of bench:gpu as token ids, written once to inputs.json and
 * read by every contender (pjrt-score here, the Python peers beside it):
 *
 *   target  one request: a 2,000-token query, 500 items of 20 tokens
 *   pr      SGLang's multi-item PR workload: 8 requests with distinct
 *           300-token queries, 10 items of 20 tokens each
 *
 * `scale: 'tiny'` shrinks every length so the suite can run the same code on
 * the CPU plugin in seconds. Token ids are deterministic and below the vocab.
 */
const { WORKLOADS } = require('../../bench/lib/workloads');

/** A workload of the benchmark (scripts/bench/lib/workloads.js) as `queries` requests of its shape. */
const full = (name, queries) => ({
  queries,
  query: WORKLOADS[name].queryTokens,
  items: WORKLOADS[name].items,
  item: WORKLOADS[name].itemTokens,
});

const SHAPES = {
  full: { target: full('target', 1), pr: full('pr', 8) },
  tiny: { target: { queries: 1, query: 48, items: 24, item: 6 }, pr: { queries: 8, query: 20, items: 3, item: 5 } },
};

/** Token ids in [lo, vocab), a different stream per seed. */
function tokenIds(count, seed, vocab) {
  const lo = vocab > 1000 ? 100 : 3;
  let a = (seed * 2654435761) >>> 0;
  return Array.from({ length: count }, () => {
    a = (Math.imul(a ^ (a >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
    return lo + (a % (vocab - lo));
  });
}

/** { labels, workloads: { name: { requests: [{ query, items }] } } } for a model of this vocab size. */
function makeInputs(vocab, scale = 'full') {
  const shapes = SHAPES[scale];
  if (!shapes) throw new Error(`scale is full or tiny, not ${scale}`);
  const labels = vocab > 10000 ? [9454, 2753] : [1, 2];
  const workloads = {};
  for (const [name, s] of Object.entries(shapes)) {
    const requests = [];
    for (let q = 0; q < s.queries; q++) {
      const seed = 1000 * (name === 'pr' ? 2 : 1) + q;
      requests.push({
        query: tokenIds(s.query, seed, vocab),
        items: Array.from({ length: s.items }, (_, i) => tokenIds(s.item, 100000 * (seed + 1) + i, vocab)),
      });
    }
    workloads[name] = {
      description: `${s.queries} x (${s.query}-token query, ${s.items} items x ${s.item} tokens)`,
      requests,
    };
  }
  return { labels, workloads };
}

module.exports = { makeInputs, SHAPES };
