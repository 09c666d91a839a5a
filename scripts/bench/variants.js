'use strict';
// Scorer variants on one workload, alternating in one process (A B C A B C ...), so a shared
// machine's load falls on all of them alike:
//
//   node scripts/bench/variants.js <workload|query/itemsxtokens> <rounds> <name>=<json> [<name>=<json> ...]
//
// <json> holds the variant's Scorer options, and optionally "facts": a PJRT_SCORE_PLATFORM_FACTS
// override (lib/scoring/platform/override.ts) set while that Scorer loads. Each variant scores one
// untimed request (compiles), then `rounds` requests of fresh token ids; printed per variant: the plan
// (explain()), the median wall and CPU ms per request, useful GFLOP per wall second and per CPU
// second (scripts/bench/lib/workloads.js, usefulFlops) and the median ratio to the first variant.
// Example (the PR shape in bf16, as the Scorer runs it and with exact item counts):
//   node scripts/bench/variants.js pr 7 base='{"precision":"bf16"}' \
//     exact='{"precision":"bf16","facts":{"countSteps":[1.0625,1.125,1.1875,1.25,1.3125,1.375,1.4375,1.5,1.5625,1.625,1.6875,1.75,1.8125,1.875,1.9375]}}'
const { Scorer } = require('../../dist');
const { WORKLOADS, request, usefulFlops } = require('./lib/workloads');
const { PLATFORM_FACTS_ENV } = require('../../dist/scoring/platform');
const { upperMedian } = require('../lib/median');

/** A workload written as <query tokens>/<items>x<item tokens> (e.g. 300/10x20). */
function customWorkload(text) {
  const m = /^(\d+)\/(\d+)x(\d+)$/.exec(text);
  if (!m)
    throw new Error(`unknown workload ${text} (${Object.keys(WORKLOADS).join(', ')}, or <query>/<items>x<tokens>)`);
  const [queryTokens, items, itemTokens] = m.slice(1).map(Number);
  return {
    name: text,
    description: `${queryTokens}-token query, ${items} items x ${itemTokens} tokens`,
    queryTokens,
    items,
    itemTokens,
  };
}

async function load(options) {
  const { facts, ...scorerOptions } = options;
  const before = process.env[PLATFORM_FACTS_ENV];
  if (facts) process.env[PLATFORM_FACTS_ENV] = JSON.stringify(facts);
  try {
    return await Scorer.load({ prefixCacheBytes: 0, maxItems: 100000, maxRequestTokens: 1e7, ...scorerOptions });
  } finally {
    if (before === undefined) delete process.env[PLATFORM_FACTS_ENV];
    else process.env[PLATFORM_FACTS_ENV] = before;
  }
}

async function main() {
  const [workloadName, roundsArg, ...specs] = process.argv.slice(2);
  const workload = WORKLOADS[workloadName] ?? customWorkload(workloadName);
  const rounds = Number(roundsArg);
  if (!(Number.isInteger(rounds) && rounds >= 1))
    throw new Error(`rounds must be a positive integer, got ${roundsArg}`);
  if (specs.length === 0) throw new Error('name at least one variant: <name>=<json>');
  const variants = [];
  for (const spec of specs) {
    const eq = spec.indexOf('=');
    if (eq < 1) throw new Error(`a variant is <name>=<json>, got ${spec}`);
    const options = JSON.parse(spec.slice(eq + 1));
    const scorer = await load(options);
    await scorer.score(request(workload, 0));
    const plan = scorer.explain(request(workload, 1));
    const passes = plan.passes.map((p) => p.name).join(' + ');
    variants.push({
      name: spec.slice(0, eq),
      scorer,
      wall: [],
      cpu: [],
      passes,
      plan: plan.algorithm,
      precision: scorer.precision,
    });
  }
  const flops = usefulFlops(variants[0].scorer.config, workload);
  for (let r = 0; r < rounds; r++) {
    // The order turns each round, so no variant always runs right after the same one.
    for (let k = 0; k < variants.length; k++) {
      const v = variants[(k + r) % variants.length];
      const req = request(workload, 2 + r);
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await v.scorer.score(req);
      const wall = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      v.wall.push(wall);
      v.cpu.push((cpu.user + cpu.system) / 1000);
    }
  }
  const base = variants[0];
  const rows = variants.map((v) => {
    const ratios = v.cpu.map((c, i) => c / base.cpu[i]);
    return {
      name: v.name,
      precision: v.precision,
      plan: v.plan,
      passes: v.passes,
      wallMs: upperMedian(v.wall),
      cpuMs: upperMedian(v.cpu),
      gflopsWall: flops / 1e6 / upperMedian(v.wall),
      gflopsCpu: flops / 1e6 / upperMedian(v.cpu),
      cpuRatioToFirst: upperMedian(ratios),
      wallRatioToFirst: upperMedian(v.wall.map((w, i) => w / base.wall[i])),
    };
  });
  for (const r of rows) {
    console.log(
      `${r.name.padEnd(12)} ${r.precision.padEnd(7)} ${r.plan.padEnd(7)} wall ${r.wallMs.toFixed(0)} ms (${r.gflopsWall.toFixed(1)} GFLOP/s) ` +
        `cpu ${r.cpuMs.toFixed(0)} ms (${r.gflopsCpu.toFixed(1)} GFLOP/cpu-s) cpu x${r.cpuRatioToFirst.toFixed(3)} wall x${r.wallRatioToFirst.toFixed(3)}  ${r.passes}`,
    );
  }
  console.log(JSON.stringify({ workload: workloadName, usefulGflop: flops / 1e9, rounds, rows }));
  for (const v of variants) v.scorer.dispose();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
