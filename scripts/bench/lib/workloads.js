'use strict';
// The benchmark workloads (the target workload's shapes), as deterministic token ids.
// Labels 9454 and 2753 are the benchmark's label ids (valid in SmolLM2's vocabulary and in Gemma 3's).

const WORKLOADS = {
  target: {
    name: 'target',
    description: '2000-token query, 500 items x 20 tokens',
    queryTokens: 2000,
    items: 500,
    itemTokens: 20,
  },
  'small-10': {
    name: 'small-10',
    description: '300-token query, 10 items x 10 tokens',
    queryTokens: 300,
    items: 10,
    itemTokens: 10,
  },
  'small-100': {
    name: 'small-100',
    description: '300-token query, 100 items x 10 tokens',
    queryTokens: 300,
    items: 100,
    itemTokens: 10,
  },
  // SGLang's multi-item scoring PR workload: distinct 300-token queries, 10 items of 20 tokens each.
  pr: { name: 'pr', description: '300-token query, 10 items x 20 tokens', queryTokens: 300, items: 10, itemTokens: 20 },
  // The shapes most rerank users send: a short query and long documents.
  rag: {
    name: 'rag',
    description: '30-token query, 20 items x 500 tokens (RAG chunks)',
    queryTokens: 30,
    items: 20,
    itemTokens: 500,
  },
  'items-100': {
    name: 'items-100',
    description: '30-token query, 100 items x 100 tokens',
    queryTokens: 30,
    items: 100,
    itemTokens: 100,
  },
  doc: {
    name: 'doc',
    description: '30-token query, one document of 4,500 tokens',
    queryTokens: 30,
    items: 1,
    itemTokens: 4500,
  },
  // The target shape on Gemma 3 270M Q4_K_M (the optional asset, fetched on first use): the query
  // longer than its 512-token sliding window. `model` names the asset the bench loads instead of the default.
  'gemma3-target': {
    name: 'gemma3-target',
    description: 'Gemma 3 270M Q4_K_M: 2000-token query, 500 items x 20 tokens',
    queryTokens: 2000,
    items: 500,
    itemTokens: 20,
    model: 'gemma3-270m',
  },
};

/** The five workloads of the shapes table, in its order: the long-query target, SGLang's PR shape, and three short-query shapes. */
const SHAPE_TABLE = ['target', 'pr', 'rag', 'items-100', 'doc'];

const LABELS = [9454, 2753];

/** Token ids in [100, 48100), different for each seed. */
function tokens(count, seed) {
  let a = (seed * 2654435761) >>> 0;
  return Array.from({ length: count }, () => {
    a = (Math.imul(a ^ (a >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
    return 100 + (a % 48000);
  });
}

/** A request of the workload's shape; `variant` changes the token values, not the shapes. */
function request(workload, variant, itemLimit = workload.items) {
  return {
    query: tokens(workload.queryTokens, 1000 + variant),
    items: Array.from({ length: Math.min(itemLimit, workload.items) }, (_, i) =>
      tokens(workload.itemTokens, 100000 * (variant + 1) + i),
    ),
    labelTokenIds: LABELS,
  };
}

const WORDS =
  'the of and to in is was for on that with as by at from his an were are which this be or had not but first one their its new after who they have her she two been other when there all during into school time may years more most only over city some world would where later up such used many can state about national out known university united then made'.split(
    ' ',
  );

/**
 * A request of the workload's shape in text (common words, one token each
 * with SmolLM2's vocabulary): for measuring what a text request costs beyond
 * token ids, not for FLOP counts.
 */
function textRequest(workload, variant) {
  const words = (count, seed) =>
    tokens(count, seed)
      .map((t) => WORDS[t % WORDS.length])
      .join(' ');
  return {
    query: words(workload.queryTokens, 1000 + variant),
    items: Array.from(
      { length: workload.items },
      (_, i) => ` ${words(workload.itemTokens, 100000 * (variant + 1) + i)}`,
    ),
    labelTokenIds: LABELS,
  };
}

/** Sum of visibleKeys over positions [from, to). */
function keysOver(from, to, window) {
  if (!window) return (to * (to + 1)) / 2 - (from * (from + 1)) / 2;
  const knee = Math.min(Math.max(window - 1, from), to); // positions below the knee see p + 1 keys
  return (knee * (knee + 1)) / 2 - (from * (from + 1)) / 2 + (to - knee) * window;
}

/**
 * Useful FLOPs of scoring the workload (what any exact method must compute):
 * projections and MLP for the query once and every item token, attention over
 * the visible keys (a sliding-window layer's window included), and the LM head
 * at each item's last token.
 */
function usefulFlops(config, workload, itemCount = workload.items) {
  const {
    hiddenSize: Dm,
    intermediateSize: F,
    numLayers: Ly,
    numHeads: Hq,
    numKvHeads: Hkv,
    headDim: D,
    vocabSize: V,
  } = config;
  const perRow = 2 * Ly * (Dm * (Hq + 2 * Hkv) * D + Hq * D * Dm + 3 * Dm * F);
  const perKeyLayer = 4 * Hq * D;
  const P = workload.queryTokens;
  const L = workload.itemTokens;
  const sliding = config.slidingWindow;
  let keyFlops = 0;
  for (let layer = 0; layer < Ly; layer++) {
    const window = sliding && sliding.layers[layer] ? sliding.window : undefined;
    keyFlops += perKeyLayer * (keysOver(0, P, window) + itemCount * keysOver(P, P + L, window));
  }
  return (P + itemCount * L) * perRow + keyFlops + itemCount * 2 * V * Dm;
}

/** FLOPs the serial plan does per item: the whole query ++ item sequence. */
function serialFlopsPerItem(config, workload) {
  return usefulFlops(
    config,
    { ...workload, queryTokens: workload.queryTokens + workload.itemTokens, itemTokens: 0 },
    1,
  );
}

const DOC_WORDS = (
  'the river city museum north market bridge winter history science music language garden train station library ' +
  'mountain coffee ocean paper light energy machine system report policy family school street window morning ' +
  'research water village company project season table doctor story island forest answer question number'
).split(' ');

/** Deterministic document text of about `count` tokens of `scorer`'s tokenizer (cut at the token count, then decoded): the rerank benches'. */
function documentText(scorer, count, seed) {
  let a = seed >>> 0;
  const words = [];
  for (let i = 0; i < count * 1.5; i++) {
    a = (Math.imul(a ^ (a >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
    words.push(DOC_WORDS[a % DOC_WORDS.length]);
  }
  return scorer.tokenizer.decode(scorer.tokenizer.encode(words.join(' ')).slice(0, count)).trim();
}

module.exports = {
  WORKLOADS,
  SHAPE_TABLE,
  LABELS,
  WORDS,
  tokens,
  request,
  textRequest,
  documentText,
  usefulFlops,
  serialFlopsPerItem,
};
