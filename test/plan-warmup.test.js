'use strict';
// A plan is made once and is what runs: for request shapes of every
// algorithm, chunked and not, warmup compiles exactly the programs the
// request then runs (scoring it compiles nothing and looks up one ready
// program per pass), and explain() lists those passes.
const test = require('tape');
const { Scorer } = require('../dist/scoring/scorer');

let scorer;
test('setup: the real model, no disk cache, no prefix cache, a small pass budget (so plans chunk)', async (t) => {
  scorer = await Scorer.load({ diskCache: false, prefixCacheBytes: 0, budget: { tokensPerPass: 96 } });
  t.pass(`loaded ${scorer.modelName}`);
});

/** Token ids 100.. of the given lengths (real text is not needed: the plan depends on sizes). */
const ids = (n, seed) => Array.from({ length: n }, (_, i) => 100 + ((seed * 31 + i * 17) % 40000));

const SHAPES = [
  { name: 'packed, one pass', algorithm: 'packed', query: 20, items: [5, 7, 3] },
  { name: 'packed, chunked', algorithm: 'packed', query: 12, items: [9, 30, 14, 2, 22, 11, 8, 25] },
  { name: 'prefix, chunked', algorithm: 'prefix', query: 40, items: [12, 12, 12, 12, 12, 12, 12, 12, 12, 12] },
  { name: 'serial, chunked', algorithm: 'serial', query: 10, items: [4, 9, 2, 6, 13] },
  { name: 'auto', algorithm: undefined, query: 16, items: [3, 3, 3, 3] },
];

for (const s of SHAPES) {
  test(`warmup compiles exactly what runs: ${s.name}`, async (t) => {
    // Warmup shapes name one item length; the request here uses that length for every item.
    const itemLength = Math.max(...s.items);
    const request = {
      query: ids(s.query, 1),
      items: s.items.map((_, i) => ids(itemLength, i + 2)),
      labelTokenIds: [9805, 787],
      ...(s.algorithm ? { algorithm: s.algorithm } : {}),
    };
    const plan = scorer.explain(request);
    const programs = new Set(plan.passes.map((p) => p.name));
    const before = scorer.stats().jit;
    await scorer.warmup(
      [
        {
          queryTokens: s.query,
          itemTokens: itemLength,
          items: s.items.length,
          labels: 2,
          ...(s.algorithm ? { algorithm: s.algorithm } : {}),
        },
      ],
      false,
    );
    const warmed = scorer.stats().jit;
    t.equal(
      warmed.compiles - before.compiles + (warmed.hits - before.hits),
      programs.size,
      `warmup loaded the ${programs.size} distinct programs explain() lists (${[...programs].join(' ')})`,
    );
    const result = await scorer.score(request);
    const after = scorer.stats().jit;
    t.equal(result.algorithm, plan.algorithm, `ran the explained plan (${plan.algorithm})`);
    t.equal(after.compiles - warmed.compiles, 0, 'scoring compiled nothing');
    t.equal(after.misses - warmed.misses, 0, 'no lookup waited for a load');
    t.equal(
      after.hits - warmed.hits,
      plan.passes.length,
      `one ready program per explained pass (${plan.passes.length} passes)`,
    );
    if (s.name.includes('chunked'))
      t.ok(plan.passes.filter((p) => p.items.length > 0).length > 1, 'the plan has several item passes');
    const covered = plan.passes.flatMap((p) => p.items).sort((a, b) => a - b);
    t.deepEqual(
      covered,
      s.items.map((_, i) => i),
      'the passes carry every item once',
    );
  });
}

test('teardown', (t) => {
  scorer.dispose();
  t.end();
});
