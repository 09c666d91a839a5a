'use strict';
// Text requests of a workload's shape for the served model's tokenizer: a query
// of about `queryTokens` tokens of its own per request and `items` items of
// about `itemTokens` tokens, as text (so the service tokenizes them, as a
// client's requests make it do). Deterministic: common English words drawn
// from the workloads' PRNG (scripts/bench/lib/workloads.js), lengthened or
// shortened a word at a time, then a character at a time, to the shortest
// text the tokenizer counts as at least the target (a byte-level tokenizer
// hits it exactly; a word-level one within a token or two). A request's query
// is one of `queryPool` such texts with its words rotated by the request's
// number: distinct from every other request's within its first words (no
// long prefix to reuse), the same words, so the same length for the tokenizer.
//
//   const texts = textWorkload(tokenizer, WORKLOADS.pr, { itemPool: 256 });
//   texts.body(serial)   -> the JSON body of POST /v1/score (query distinct per serial)
//   texts.tokenCounts(n) -> { query: [min, max], item: [min, max] } over the first n requests
const { LABELS, WORDS, tokens } = require('./workloads');

/** `count` words for `seed`, from the PRNG (the same seed, the same words). */
function words(count, seed) {
  return tokens(count, seed).map((t) => WORDS[t % WORDS.length]);
}

/**
 * The shortest run of `seed`'s words (from `guess` words, a word at a time)
 * that the tokenizer counts as at least `target` tokens; `prefix` goes before
 * it (an item's leading space). Returns { text, count }.
 */
function textOfTokens(tokenizer, target, seed, guess, prefix = '') {
  const pool = words(Math.max(guess, target) * 4 + 8, seed);
  const at = (n) => {
    const text = prefix + pool.slice(0, n).join(' ');
    return { text, count: tokenizer.encode(text).length };
  };
  let n = Math.max(1, Math.min(guess, pool.length));
  let cur = at(n);
  while (cur.count < target && n < pool.length) cur = at(++n);
  while (n > 1) {
    const shorter = at(n - 1);
    if (shorter.count < target) break;
    n -= 1;
    cur = shorter;
  }
  if (cur.count < target)
    throw new Error(`could not make ${target} tokens from ${pool.length} words (got ${cur.count})`);
  const wordCount = n;
  // Then a character at a time, while the count stays at or above the target.
  while (cur.count > target && cur.text.length > prefix.length + 1) {
    const text = cur.text.slice(0, -1);
    const count = tokenizer.encode(text).length;
    if (count < target) break;
    cur = { text, count };
  }
  return { ...cur, words: wordCount };
}

/**
 * A workload as text for this tokenizer. Queries differ per request (a base
 * of `queryPool` rotated by the request's number); items come from a pool of
 * `itemPool` distinct texts, `items` consecutive ones per request.
 */
function textWorkload(tokenizer, workload, { itemPool = 256, queryPool = 256 } = {}) {
  if (typeof tokenizer?.encode !== 'function') throw new TypeError('textWorkload needs a tokenizer with encode(text)');
  // Words per token of this tokenizer, from one query: the first guess for the others.
  const first = textOfTokens(tokenizer, workload.queryTokens, 7, workload.queryTokens);
  const queryGuess = first.words;
  const itemGuess = Math.max(1, Math.round((first.words * workload.itemTokens) / workload.queryTokens));
  const items = Array.from({ length: itemPool }, (_, i) =>
    textOfTokens(tokenizer, workload.itemTokens, 500000 + i, itemGuess, ' '),
  );
  const bases = Array.from({ length: queryPool }, (_, i) =>
    textOfTokens(tokenizer, workload.queryTokens, 1000 + i, queryGuess).text.split(' '),
  );
  const queries = new Map();
  const query = (serial) => {
    let q = queries.get(serial);
    if (!q) {
      const words = bases[serial % bases.length];
      const turn = Math.floor(serial / bases.length) % words.length;
      const text = [...words.slice(turn), ...words.slice(0, turn)].join(' ');
      q = { text, count: tokenizer.encode(text).length };
      queries.set(serial, q);
    }
    return q;
  };
  const itemsOf = (serial) =>
    Array.from({ length: workload.items }, (_, i) => items[(serial * workload.items + i) % items.length]);
  return {
    workload,
    /** The JSON body of POST /v1/score for request `serial`. */
    body(serial) {
      return JSON.stringify({
        query: query(serial).text,
        items: itemsOf(serial).map((it) => it.text),
        label_token_ids: LABELS,
      });
    },
    /** Prompt tokens of request `serial` as the tokenizer counts them (the query once plus every item). */
    tokensOf(serial) {
      return query(serial).count + itemsOf(serial).reduce((a, it) => a + it.count, 0);
    },
    /** The range of token counts of the first `n` requests' queries and of the item pool. */
    tokenCounts(n) {
      const qs = Array.from({ length: n }, (_, s) => query(s).count);
      const is = items.map((it) => it.count);
      return { query: [Math.min(...qs), Math.max(...qs)], item: [Math.min(...is), Math.max(...is)] };
    },
  };
}

module.exports = { textWorkload, textOfTokens, LABELS };
