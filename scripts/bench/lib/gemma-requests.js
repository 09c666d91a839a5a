'use strict';
const { WORKLOADS } = require('./workloads');
// Token-id requests for the real Gemma 3 270M checks (scripts/lab/gemma/check-real.js)
// and its benchmark workload (npm run bench -- --workloads gemma3-target):
// text tokenized with the model's own vocabulary, the BOS written here.
const fixture = require('./gemma-yes-no.json');

const WORDS =
  'the of and to in is was for on that with as by at from his an were are which this be or had not but first one their its new after who they have her she two been other when there all during into school time may years more most only over city some world would where later up such used many can state about national out known university united then made'.split(
    ' ',
  );

/** Deterministic words: the same for every run. */
function words(count, seed) {
  let a = (seed * 2654435761) >>> 0;
  return Array.from({ length: count }, () => {
    a = (Math.imul(a ^ (a >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
    return WORDS[a % WORDS.length];
  }).join(' ');
}

/** The labels of the yes/no prompts: the first token of ' yes' and of ' no'. */
function yesNoLabels(tokenize) {
  return fixture.labels.map((l) => tokenize(l)[0]);
}

/**
 * The target workload's shape in text: a query of exactly `queryTokens`
 * tokens (BOS + a paragraph repeated) and `items` items of exactly
 * `itemTokens` tokens each (words, then '\nAnswer:'), labels ' yes' and ' no'.
 */
function targetText(tokenize, bos, { queryTokens, items, itemTokens } = WORKLOADS.target) {
  const paragraph = tokenize(
    'The city council met on Tuesday to discuss the new library, the bus routes along the river and the budget for the coming year. ',
  );
  const query = [bos];
  while (query.length < queryTokens) query.push(...paragraph);
  const suffix = tokenize('\nAnswer:');
  const list = Array.from({ length: items }, (_, i) => {
    const body = tokenize(` ${words(itemTokens, 7919 + i)}`).slice(0, itemTokens - suffix.length);
    return [...body, ...suffix];
  });
  return { query: query.slice(0, queryTokens), items: list, labelTokenIds: yesNoLabels(tokenize) };
}

/** The 50 statements of scripts/bench/lib/gemma-yes-no.json as one request: BOS + the question, then each statement. */
function gemmaYesNo(tokenize, bos) {
  return {
    query: [bos, ...tokenize(fixture.query)],
    items: fixture.statements.map((s) => tokenize(fixture.itemTemplate.replace('{statement}', s))),
    labelTokenIds: yesNoLabels(tokenize),
  };
}

module.exports = { targetText, gemmaYesNo };
