'use strict';
// Plans as data and the auto selector. The plan's passes are checked against
// what a plan must be (every item exactly once, each in a row of a long
// enough bucket, within the budget), and the selector's choices against an
// independent FLOP count for the target workload's shapes.
const test = require('tape');
const { bucketLadder } = require('../dist/scoring/planning/buckets');
const { makePlan } = require('../dist/scoring/planning/plan');
const { choosePlan, costModelFor } = require('../dist/scoring/planning/selector');

// SmolLM2-135M's shape.
const config = { hiddenSize: 576, intermediateSize: 1536, numLayers: 30, numHeads: 9, numKvHeads: 3, headDim: 64 };
const sizing = {
  ladders: {
    tokens: bucketLadder({ min: 8, max: 8192, steps: [1.5], align: 8 }),
    itemTokens: bucketLadder({ min: 8, max: 8192, steps: [1.25, 1.5, 1.75], align: 4 }),
    counts: bucketLadder({ min: 1, max: 4096, steps: [1.5] }),
    labels: bucketLadder({ min: 2, max: 49152 }),
  },
  budget: { tokensPerPass: 1536, scoreBytesPerPass: 256 * 2 ** 20 },
  numHeads: 9,
};
const model = costModelFor(config);
const shape = (P, lengths, itemFirst = false) => ({ queryLength: P, itemLengths: lengths, labelCount: 2, itemFirst });
const uniform = (P, N, L, itemFirst = false) => shape(P, new Array(N).fill(L), itemFirst);

test('item_first is always serial, whatever was asked', (t) => {
  t.equal(choosePlan(uniform(300, 100, 10, true), 'auto', sizing, model).plan.algorithm, 'serial');
  t.equal(choosePlan(uniform(300, 100, 10, true), 'prefix', sizing, model).plan.algorithm, 'serial');
  t.throws(
    () => makePlan('packed', uniform(3, 2, 2, true), sizing),
    /item_first/,
    'makePlan refuses a shared-prefix plan for item_first',
  );
  t.end();
});

test('a long query with many items: the query once beats it per item by far', (t) => {
  const c = choosePlan(uniform(2000, 500, 20), 'auto', sizing, model);
  // Serial recomputes the 2000-token query for every item: at least 50x the FLOPs of any shared-query plan.
  t.ok(
    c.costs.serial > 50 * Math.min(c.costs.packed, c.costs.prefix),
    `serial ${c.costs.serial.toExponential(2)} vs best ${Math.min(c.costs.packed, c.costs.prefix).toExponential(2)}`,
  );
  // Packed must recompute the query in every chunk of items; prefix computes it once.
  t.equal(
    c.plan.algorithm,
    'prefix',
    'prefix: 500 items need several passes, and only prefix keeps the query between them',
  );
  t.equal(c.cost, c.costs.prefix, 'the plan carries its own cost');
  t.end();
});

test('everything fits in one pass: packed (no second program)', (t) => {
  const c = choosePlan(uniform(300, 10, 10), 'auto', sizing, model);
  t.equal(c.plan.algorithm, 'packed');
  t.equal(c.plan.passes.length, 1, 'one pass');
  t.ok(c.costs.packed < c.costs.prefix, 'one pass costs less than prefill + extend');
  t.end();
});

test('a requested algorithm is planned as asked', (t) => {
  for (const a of ['serial', 'packed', 'prefix'])
    t.equal(choosePlan(uniform(30, 5, 7), a, sizing, model).plan.algorithm, a, a);
  t.end();
});

/** A deterministic pseudo-random list of item lengths. */
function lengths(n, seed, max) {
  let x = seed;
  return Array.from({ length: n }, () => ((x = (x * 1103515245 + 12345) % 2 ** 31), x % (max + 1)));
}

test('every plan covers each item exactly once, in a row long enough, within the budget', (t) => {
  const cases = [
    [12, [3]],
    [40, lengths(37, 1, 30)],
    [300, lengths(500, 2, 25)],
    [2000, lengths(500, 3, 20)],
    [5, lengths(2000, 4, 60)],
    [64, [0, 0, 5, 0]],
  ];
  let checked = 0;
  for (const [P, ls] of cases) {
    for (const algorithm of ['serial', 'packed', 'prefix']) {
      const plan = makePlan(algorithm, shape(P, ls), sizing);
      const seen = new Array(ls.length).fill(0);
      let bad = null;
      for (const pass of plan.passes) {
        const key = pass.program;
        if (key.program === 'decoder_prefill') {
          if (pass.items.length !== 0 || key.prefix < P) bad = 'prefill carries items or a short prefix';
          continue;
        }
        if (pass.items.length > key.items) bad = `${pass.items.length} items in ${key.items} rows`;
        for (const i of pass.items) {
          seen[i]++;
          const need = algorithm === 'serial' ? P + ls[i] : ls[i];
          if (need > key.itemLength) bad = `item ${i} of length ${need} in rows of ${key.itemLength}`;
        }
        if (algorithm !== 'serial' && key.prefix < P) bad = `query ${P} in prefix bucket ${key.prefix}`;
        // Rows times bucket within the token budget, unless a single row is already over it.
        if (key.items > 1 && key.items * key.itemLength > sizing.budget.tokensPerPass)
          bad = `pass of ${key.items}x${key.itemLength} over the budget`;
      }
      if (algorithm === 'prefix' && plan.passes[0].program.program !== 'decoder_prefill')
        bad = 'prefix plan does not start with its prefill';
      if (seen.some((c) => c !== 1)) bad = 'an item is missing or repeated';
      t.equal(bad, null, `${algorithm} P=${P} N=${ls.length}: ${bad ?? 'ok'}`);
      checked++;
    }
  }
  t.equal(checked, 18);
  t.end();
});

test('the prefix cache in the price: a held query costs its extends alone; a query seen before is left in the cache within the allowance; a first-seen one runs the cheapest plan', (t) => {
  const { FIRST_REQUEST_ALLOWANCE } = require('../dist/scoring/planning/selector');
  const pr = uniform(300, 10, 20); // SGLang's PR shape: one pass holds it all
  const alone = choosePlan(pr, 'auto', sizing, model);
  t.equal(alone.plan.algorithm, 'packed', 'without a cache: packed, one pass');
  const held = choosePlan(pr, 'auto', sizing, model, { holds: () => true, keeps: () => true, seen: () => true });
  t.equal(held.plan.algorithm, 'prefix', 'the cache holds the query: prefix');
  t.equal(held.prefixCache, 'hit');
  t.ok(/holds the query/.test(held.reason), held.reason);
  // Independently: the prefix plan's cost less its prefill (P rows, P^2 keys, one pass) at the query's bucket.
  const P = held.plan.prefixBucket;
  t.ok(P >= 300 && P < 400, `query bucket ${P}`);
  const prefill = P * model.flopsPerRow + P * P * model.flopsPerKey + model.flopsPerPass;
  t.ok(Math.abs(held.cost - (alone.costs.prefix - prefill)) <= 1e-9 * held.cost, 'priced at its extend passes alone');
  t.ok(
    held.cost < 0.6 * alone.costs.packed,
    `a hit costs about half the packed pass (${(held.cost / alone.costs.packed).toFixed(2)})`,
  );
  t.deepEqual(
    held.plan.passes.map((p) => p.program.program),
    ['decoder_prefill', 'decoder_extend'],
    'the plan is still the whole prefix plan (the executor skips the prefill on a hit)',
  );

  const first = choosePlan(pr, 'auto', sizing, model, { holds: () => false, keeps: () => true, seen: () => false });
  t.equal(
    first.plan.algorithm,
    'packed',
    'first seen: the cheapest plan, packed (unique queries pay nothing for the cache)',
  );
  t.equal(first.prefixCache, undefined);
  const second = choosePlan(pr, 'auto', sizing, model, { holds: () => false, keeps: () => true, seen: () => true });
  t.equal(second.plan.algorithm, 'prefix', 'seen before, the cache would keep it: prefix, to leave its K/V');
  t.equal(second.prefixCache, 'keep');
  t.ok(
    second.cost <= (1 + FIRST_REQUEST_ALLOWANCE) * alone.costs.packed && second.cost > alone.costs.packed,
    'it costs more than packed, within the allowance',
  );
  t.equal(
    choosePlan(pr, 'auto', sizing, model, { holds: () => false, keeps: () => false, seen: () => true }).plan.algorithm,
    'packed',
    'a cache that would not keep it: packed',
  );
  const tiny = choosePlan(uniform(30, 2, 5), 'auto', sizing, model, {
    holds: () => false,
    keeps: () => true,
    seen: () => true,
  });
  t.equal(tiny.plan.algorithm, 'packed', 'a tiny request whose prefix plan costs more than the allowance stays packed');
  t.ok(tiny.costs.prefix > (1 + FIRST_REQUEST_ALLOWANCE) * tiny.costs.packed, 'over the allowance');
  t.equal(
    choosePlan(pr, 'packed', sizing, model, { holds: () => true, keeps: () => true }).plan.algorithm,
    'packed',
    'a named algorithm ignores the cache',
  );
  t.end();
});

test('a plan is a function of its request shape alone', (t) => {
  const s = shape(100, lengths(90, 5, 40));
  for (const algorithm of ['serial', 'packed', 'prefix']) {
    t.deepEqual(
      makePlan(algorithm, s, sizing),
      makePlan(algorithm, { ...s, itemLengths: [...s.itemLengths] }, sizing),
      `${algorithm}: same shape, same plan`,
    );
  }
  t.end();
});

test("CPU facts keyed by CPU class: the measured classes say so; another class borrows AVX2's facts and says which; other platforms ignore the class", (t) => {
  const { platformFacts } = require('../dist/scoring/platform');
  const avx2 = platformFacts('cpu', 'avx2');
  t.deepEqual(avx2.cpuClass, { isa: 'avx2', measured: true }, 'avx2: measured');
  t.match(avx2.measured, /^AVX2 \(AMD EPYC Zen 3/, `avx2: ${avx2.measured.slice(0, 60)}`);
  t.equal(avx2.budget.tokensPerPass, 1536, 'avx2: 1,536 item rows per pass (docs/performance.md)');
  const bf16 = platformFacts('cpu', 'avx512bf16');
  t.deepEqual(bf16.cpuClass, { isa: 'avx512bf16', measured: true }, 'avx512bf16: measured');
  t.match(bf16.measured, /^AVX-512 bf16 \(AMD EPYC Zen 4/, `avx512bf16: ${bf16.measured.slice(0, 60)}`);
  t.deepEqual(
    bf16.budget,
    { ...avx2.budget, tokensPerPass: 3072 },
    'avx512bf16: 3,072 item rows per pass, the rest as AVX2 (docs/performance.md)',
  );
  t.deepEqual(bf16.cost, avx2.cost, "avx512bf16: AVX2's cost constants (not fitted there)");
  for (const isa of ['portable', 'avx512', 'amx']) {
    const f = platformFacts('cpu', isa);
    t.deepEqual(f.cpuClass, { isa, measured: false }, `${isa}: not measured`);
    t.match(
      f.measured,
      new RegExp(`^${isa}: not measured on this CPU class, the facts of AVX2`),
      `${isa}: the load log says it borrowed the AVX2 facts`,
    );
    t.deepEqual([f.budget, f.cost], [avx2.budget, avx2.cost], `${isa}: the AVX2 budget and cost constants`);
  }
  t.notOk('cpuClass' in platformFacts('cuda', 'amx'), 'cuda: no CPU class');
  t.notOk('cpuClass' in platformFacts('cpu'), 'no class given (no kernels): the platform facts');
  t.end();
});

test('per-platform facts: each platform its own budget and cost constants; an unknown one gets the CPU facts, marked', (t) => {
  const { platformFacts } = require('../dist/scoring/platform');
  const cpu = platformFacts('cpu');
  const cuda = platformFacts('CUDA');
  const other = platformFacts('rocm');
  t.ok(cpu.known && cuda.known, 'cpu and cuda have entries');
  t.ok(
    cuda.budget.tokensPerPass > cpu.budget.tokensPerPass,
    `the GPU's pass budget (${cuda.budget.tokensPerPass}) is larger than the CPU's (${cpu.budget.tokensPerPass})`,
  );
  t.ok(/unmeasured/.test(cuda.measured), 'what was not measured on the GPU says so');
  t.notOk(other.known, 'rocm: no entry');
  t.deepEqual(other.budget, cpu.budget, 'rocm falls back to the CPU budget');
  // A larger budget packs more items per pass: fewer passes for the same request.
  const s = uniform(64, 400, 20);
  const onCpu = makePlan('packed', s, { ...sizing, budget: cpu.budget });
  const onGpu = makePlan('packed', s, { ...sizing, budget: cuda.budget });
  t.ok(
    onGpu.passes.length < onCpu.passes.length,
    `400 items: ${onGpu.passes.length} passes with the GPU budget, ${onCpu.passes.length} with the CPU's`,
  );
  const m = costModelFor(config, { keyWeight: 1, flopsPerPass: 0 });
  t.equal(m.flopsPerPass, 0, 'cost constants come from the caller');
  t.end();
});

test('per-platform budgets follow the device memory: a sixteenth of it for one pass of scores, the measured budget as the ceiling', (t) => {
  const { platformFacts, budgetForMemory, SCORE_SHARE_OF_DEVICE_MEMORY } = require('../dist/scoring/platform');
  for (const name of ['cpu', 'cuda']) {
    const measured = platformFacts(name).budget;
    const roomy = measured.scoreBytesPerPass / SCORE_SHARE_OF_DEVICE_MEMORY;
    t.deepEqual(budgetForMemory(measured, roomy), measured, `${name}: memory to spare keeps the measured budget`);
    t.deepEqual(
      budgetForMemory(measured, 100 * roomy),
      measured,
      `${name}: more memory never grows it past what was measured`,
    );
    t.deepEqual(budgetForMemory(measured, NaN), measured, `${name}: unknown memory keeps the measured budget`);
    // A quarter of that memory: every limit a quarter (the plain arithmetic, by hand).
    const quarter = budgetForMemory(measured, roomy / 4);
    t.equal(
      quarter.scoreBytesPerPass,
      Math.floor(measured.scoreBytesPerPass / 4),
      `${name}: score bytes scale with memory`,
    );
    t.equal(
      quarter.tokensPerPass,
      Math.max(256, Math.floor(measured.tokensPerPass / 4)),
      `${name}: tokens per pass scale alike`,
    );
    t.equal(
      quarter.batchRowsPerPass,
      Math.max(256, Math.floor(measured.batchRowsPerPass / 4)),
      `${name}: batch rows scale alike`,
    );
    const tiny = budgetForMemory(measured, 2 ** 20);
    t.deepEqual(
      tiny,
      { tokensPerPass: 256, scoreBytesPerPass: 16 * 2 ** 20, batchRowsPerPass: 256 },
      `${name}: a tiny device gets the floor, not zero`,
    );
  }
  // The H100 with the CUDA plugin's default memory fraction (0.75 of 80 GB): 3.75 GB of scores, under the measured 4 GiB.
  const h100 = budgetForMemory(platformFacts('cuda').budget, 0.75 * 80e9);
  t.equal(h100.scoreBytesPerPass, 3.75e9, 'an H100 at memory fraction 0.75: 3.75 GB of scores per pass');
  // Plans made with the smaller budget need more passes, each within it.
  const small = budgetForMemory(platformFacts('cpu').budget, 2 ** 30);
  const s = uniform(64, 400, 20);
  const plan = makePlan('packed', s, { ...sizing, budget: small });
  const roomyPlan = makePlan('packed', s, { ...sizing, budget: platformFacts('cpu').budget });
  t.ok(
    plan.passes.length > roomyPlan.passes.length,
    `1 GiB of memory: ${plan.passes.length} passes against ${roomyPlan.passes.length}`,
  );
  t.end();
});
