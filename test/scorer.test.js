'use strict';
// The Scorer with the real default model: every plan equals the serial
// reference, items are isolated, requests are deterministic, bad input never
// reaches the device.
const test = require('tape');
const { Scorer, ScoreInputError } = require('..');

let scorer;
const events = [];
test('setup: load the default model', async (t) => {
  scorer = await Scorer.load({ diskCache: true, log: (e) => events.push(e) });
  t.equal(scorer.modelName, 'SmolLM2-135M-Instruct');
  t.equal(scorer.config.vocabSize, 49152);
});

test('the tokenizer is built at the first text request, once; token ids never build it', async (t) => {
  const built = () => events.filter((e) => e.event === 'tokenizer_built').length;
  t.equal(built(), 0, 'the load builds no tokenizer');
  const ids = await scorer.score({ query: [1, 504, 3458], items: [[9805], [787, 30]], labelTokenIds: [9805, 787] });
  t.equal(ids.scores.length, 2, 'token ids are scored');
  t.equal(built(), 0, 'a request of token ids builds no tokenizer');
  await scorer.score({ query: 'Is the sky blue?', items: [' yes'], labelTokenIds: [9805, 787] });
  t.equal(built(), 1, 'the first text request builds it');
  scorer.tokenize(' and again');
  t.equal(built(), 1, 'once');
});

function maxDiff(a, b) {
  let m = 0;
  a.forEach((row, i) => row.forEach((x, j) => (m = Math.max(m, Math.abs(x - b[i][j])))));
  return m;
}

const YES = 9805; // ' yes'
const NO = 787; // ' no'

const CASES = [
  { name: '1 item', query: 'Is the sky blue? Answer yes or no:', items: [' The sky is blue.'] },
  {
    name: '100 items',
    query: 'Pick the best fruit for a pie. Candidate:',
    items: Array.from({ length: 100 }, (_, i) =>
      ` candidate number ${i} ${'is a fine choice '.repeat(i % 4)}`.trimEnd(),
    ),
  },
  {
    name: 'unicode items',
    query: 'Traduire en français : thank you →',
    items: [' merci', ' 谢谢', ' ありがとう 🙏', ' danke schön', ' ¡gracias!'],
  },
  { name: 'an empty item', query: 'Complete the sentence: the cat sat on the', items: ['', ' mat', ''] },
  {
    name: 'items of very different lengths',
    query: 'Rate this review:',
    items: [
      ' ok',
      ' This product exceeded every expectation I had, and the support team answered within minutes when I had a question about setup. Highly recommended for anyone.',
      ' bad',
      ' Mediocre at best, it broke after two weeks.',
    ],
  },
];

/** applySoftmax's rule from the raw probabilities, in plain JS: each row divided by its sum. */
function softmaxOfProbabilities(rows) {
  return rows.map((r) => {
    const total = r.reduce((a, b) => a + b, 0);
    return r.map((x) => x / total);
  });
}

// Serial (one sequence per item) is the reference and the slow path: it runs once per case, raw; the
// softmax scores of packed and prefix are checked against the softmax of serial's raw rows in JS, and
// the serial path's own softmax on the first case.
for (const [index, c] of CASES.entries()) {
  test(`packed and prefix equal serial: ${c.name}`, async (t) => {
    const base = { query: c.query, items: c.items, labelTokenIds: [YES, NO, 9454, 2753] };
    const serial = await scorer.score({ ...base, applySoftmax: false, algorithm: 'serial' });
    t.equal(serial.scores.length, c.items.length, 'one row per item');
    t.ok(
      serial.scores.every((r) => r.length === 4 && r.every((x) => Number.isFinite(x) && x > 0)),
      'finite positive probabilities',
    );
    const references = { false: serial.scores, true: softmaxOfProbabilities(serial.scores) };
    if (index === 0) {
      const own = await scorer.score({ ...base, applySoftmax: true, algorithm: 'serial' });
      t.ok(
        maxDiff(own.scores, references.true) <= 1e-6,
        `serial with applySoftmax=true is the softmax of its raw rows (max |diff| ${maxDiff(own.scores, references.true).toExponential(2)})`,
      );
    }
    for (const applySoftmax of [false, true]) {
      const packed = await scorer.score({ ...base, applySoftmax, algorithm: 'packed' });
      const prefix = await scorer.score({ ...base, applySoftmax, algorithm: 'prefix' });
      const dp = maxDiff(packed.scores, references[applySoftmax]);
      const dx = maxDiff(prefix.scores, references[applySoftmax]);
      t.ok(dp <= 1e-4, `applySoftmax=${applySoftmax}: packed vs serial max |diff| ${dp.toExponential(2)}`);
      t.ok(dx <= 1e-4, `applySoftmax=${applySoftmax}: prefix vs serial max |diff| ${dx.toExponential(2)}`);
      if (applySoftmax)
        t.ok(
          prefix.scores.every((r) => Math.abs(r.reduce((a, b) => a + b, 0) - 1) < 1e-5),
          'rows sum to 1',
        );
    }
  });
}

test('token-id input equals the same text tokenized', async (t) => {
  const query = 'Is water wet? Answer:';
  const items = [' yes', ' no', ' maybe'];
  const text = await scorer.score({ query, items, labelTokenIds: [YES, NO], algorithm: 'packed' });
  const ids = await scorer.score({
    query: scorer.tokenize(query),
    items: items.map((i) => scorer.tokenize(i)),
    labelTokenIds: [YES, NO],
    algorithm: 'serial',
  });
  t.ok(maxDiff(text.scores, ids.scores) <= 1e-4, `max |diff| ${maxDiff(text.scores, ids.scores).toExponential(2)}`);
  t.equal(
    ids.usage.promptTokens,
    scorer.tokenize(query).length + items.reduce((a, i) => a + scorer.tokenize(i).length, 0),
    'usage counts the query once plus every item',
  );
});

test('isolation: replacing one item leaves the others unchanged', async (t) => {
  const query = 'Which city is in Italy? Candidate:';
  const base = [' Rome', ' Paris', ' Madrid', ' Milan'];
  const labelTokenIds = [YES, NO];
  for (const algorithm of ['packed', 'prefix']) {
    const a = await scorer.score({ query, items: base, labelTokenIds, algorithm });
    const sameLength = [...base];
    sameLength[1] = ' Lyon'; // one token, as ' Paris'
    t.equal(scorer.tokenize(sameLength[1]).length, scorer.tokenize(base[1]).length, 'replacement has the same length');
    const b = await scorer.score({ query, items: sameLength, labelTokenIds, algorithm });
    const longer = [...base];
    longer[1] = ' the beautiful city of Paris in France';
    const c = await scorer.score({ query, items: longer, labelTokenIds, algorithm });
    for (const i of [0, 2, 3]) {
      t.deepEqual(b.scores[i], a.scores[i], `${algorithm}: item ${i} bit-identical after a same-length replacement`);
      t.ok(
        Math.max(...c.scores[i].map((x, j) => Math.abs(x - a.scores[i][j]))) <= 1e-6,
        `${algorithm}: item ${i} within 1e-6 after a longer replacement`,
      );
    }
  }
});

test('the same request twice gives identical scores', async (t) => {
  const req = {
    query: 'Say something nice:',
    items: [' You are great', ' Have a nice day', ''],
    labelTokenIds: [YES, NO, 13],
  };
  for (const algorithm of ['serial', 'packed', 'prefix', 'auto']) {
    const a = await scorer.score({ ...req, algorithm });
    const b = await scorer.score({ ...req, algorithm });
    t.deepEqual(b.scores, a.scores, `${algorithm}: identical`);
  }
});

test('auto with the prefix cache (default options): a first request pays nothing, its second keeps the K/V, later ones hit; scores equal the serial path', async (t) => {
  // SGLang's PR shape in token ids: a 300-token query, 10 items of 20 tokens (deterministic ids in [100, 48100)).
  let x = 12345;
  const ids = (n) => Array.from({ length: n }, () => ((x = (x * 1103515245 + 12345) % 2 ** 31), 100 + (x % 48000)));
  const req = { query: ids(300), items: Array.from({ length: 10 }, () => ids(20)), labelTokenIds: [YES, NO] };
  const counters = () => scorer.stats().prefixCache;
  const before = counters();
  const first = await scorer.score(req);
  const afterFirst = counters();
  t.equal(first.algorithm, 'packed', 'a first-seen query runs the cheapest plan (packed)');
  t.deepEqual(
    [afterFirst.hits, afterFirst.misses, afterFirst.entries],
    [before.hits, before.misses, before.entries],
    'and leaves the cache as it was (the doorkeeper notes the query)',
  );
  t.ok(
    /seen before/.test(scorer.explain(req).reason),
    `explain: its second request keeps the K/V: ${scorer.explain(req).reason}`,
  );
  const second = await scorer.score(req);
  const afterSecond = counters();
  t.equal(second.algorithm, 'prefix', 'the second request runs prefix');
  t.deepEqual(
    [afterSecond.hits, afterSecond.misses, afterSecond.entries],
    [afterFirst.hits, afterFirst.misses + 1, afterFirst.entries + 1],
    "it misses once and leaves the query's K/V in the cache",
  );
  t.ok(
    /prefix cache holds/.test(scorer.explain(req).reason),
    `explain prices the next repeat as a hit: ${scorer.explain(req).reason}`,
  );
  const again = await scorer.score(req);
  const third = await scorer.score(req);
  const after = counters();
  t.equal(after.hits, afterSecond.hits + 2, 'each later repeat hits the prefix cache');
  t.equal(after.misses, afterSecond.misses, 'and misses nothing');
  t.equal(again.algorithm, 'prefix');
  t.deepEqual(third.scores, again.scores, 'repeats from the cache are bit-identical');
  const serial = await scorer.score({ ...req, algorithm: 'serial' });
  for (const [name, r] of [
    ['first', first],
    ['second', second],
    ['repeat', again],
  ]) {
    const d = maxDiff(r.scores, serial.scores);
    t.ok(d <= 1e-4, `${name} vs serial max |diff| ${d.toExponential(2)}`);
  }
});

test('item_first runs the serial path and matches a hand-built sequence', async (t) => {
  const r = await scorer.score({
    query: ' is the answer.',
    items: [' Paris', ' London'],
    labelTokenIds: [YES, NO],
    itemFirst: true,
    algorithm: 'packed',
  });
  t.equal(r.algorithm, 'serial', 'item_first is served by the serial plan');
  const manual = await scorer.score({
    query: scorer.tokenize(' Paris').concat(scorer.tokenize(' is the answer.')),
    items: [[]],
    labelTokenIds: [YES, NO],
    algorithm: 'serial',
  });
  t.ok(maxDiff([r.scores[0]], manual.scores) <= 1e-4, 'item ++ query scored as one sequence');
});

test('invalid input throws ScoreInputError naming the field and never reaches the device', async (t) => {
  const before = JSON.stringify(scorer.stats());
  const bad = [
    [{ items: ['a'], labelTokenIds: [1] }, 'query'],
    [{ query: 'q', labelTokenIds: [1] }, 'items'],
    [{ query: 'q', items: 5, labelTokenIds: [1] }, 'items'],
    [{ query: 'q', items: ['a', [1, 2]], labelTokenIds: [1] }, 'items'],
    [{ query: 'q', items: ['a'] }, 'labelTokenIds'],
    [{ query: 'q', items: ['a'], labelTokenIds: [] }, 'labelTokenIds'],
    [{ query: 'q', items: ['a'], labelTokenIds: [1.5] }, 'labelTokenIds'],
    [{ query: 'q', items: ['a'], labelTokenIds: [-1] }, 'labelTokenIds'],
    [{ query: 'q', items: ['a'], labelTokenIds: [49152] }, 'labelTokenIds'],
    [{ query: [1, 2, 49152], items: [[1]], labelTokenIds: [1] }, 'query'],
    [{ query: [1, 2], items: [[1, -3]], labelTokenIds: [1] }, 'items'],
    [{ query: 'q', items: ['a'], labelTokenIds: [1], applySoftmax: 'yes' }, 'applySoftmax'],
    [{ query: 'q', items: ['a'], labelTokenIds: [1], itemFirst: 1 }, 'itemFirst'],
    [{ query: '', items: [''], labelTokenIds: [1] }, 'items'], // an empty query is valid (each item its own sequence), both empty is not
    [{ query: 'word '.repeat(9000), items: ['a'], labelTokenIds: [1] }, 'query'],
  ];
  for (const [req, param] of bad) {
    try {
      await scorer.score(req);
      t.fail(`should reject ${JSON.stringify(req).slice(0, 80)}`);
    } catch (err) {
      t.ok(err instanceof ScoreInputError, `${param}: ScoreInputError "${err.message.slice(0, 100)}"`);
      t.equal(err.param, param, `param is ${param}`);
      t.equal(err.code, 'INPUT_INVALID', 'code INPUT_INVALID');
      t.equal(err.status, 400, 'status 400');
    }
  }
  t.equal(JSON.stringify(scorer.stats()), before, 'no program ran and nothing was compiled');
});

test('empty items: no work, empty scores', async (t) => {
  const r = await scorer.score({ query: 'q', items: [], labelTokenIds: [1] });
  t.deepEqual(r.scores, []);
});

test('when no call waits for the device, the Scorer gives freed host memory back, once', async (t) => {
  // XLA frees each execution's temporaries into glibc's arenas, which keep the
  // pages; the Scorer trims them (releaseFreeHostMemory) when it goes idle.
  // Measured in a fresh process, RSS after requests of 1, 4, 18, 40, 4, 1, 40, 1
  // items: 778 ... 759 MiB with the trim, 782 ... 872 MiB (rising) without.
  const hostMemory = require('../dist/runtime/host-memory');
  const original = hostMemory.releaseFreeHostMemory;
  const calls = [];
  let lastTrim = Promise.resolve(false);
  hostMemory.releaseFreeHostMemory = () => {
    calls.push(scorer.queueDepth + scorer.inFlight);
    lastTrim = original();
    return lastTrim;
  };
  try {
    const request = (i) =>
      scorer.score({ query: 'Is the following a fruit?', items: [` item ${i}`], labelTokenIds: [YES, NO] });
    // The Scorer looks for an idle device in a setImmediate queued as a call's turn ends, before the call's
    // answer: one check phase later it has looked; then its trim ends, and a macrotask later it may trim again.
    const nextCheck = () => new Promise((resolve) => setImmediate(resolve));
    const settle = async () => {
      await nextCheck();
      await lastTrim;
      await nextCheck();
    };
    await Promise.all([request(1), request(2), request(3)]);
    await settle();
    t.deepEqual(calls, [0], 'three calls queued together: one trim, after the last, with nothing pending');
    await request(4);
    await settle();
    t.deepEqual(calls, [0, 0], 'one more call alone: one more trim');
    t.equal(typeof (await original()), 'boolean', 'releaseFreeHostMemory resolves whether memory was given back');
  } finally {
    hostMemory.releaseFreeHostMemory = original;
  }
});

test('teardown', (t) => {
  scorer.dispose();
  scorer.dispose();
  t.end();
});
