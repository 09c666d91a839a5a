#!/usr/bin/env node
'use strict';
// Cross-request batching in one process, by group count: k requests of the
// pr workload (each its own 300-token query, 10 items x 20 tokens) sent at
// once to a Scorer with batching 'cross-request' and a budget large enough
// that all k share one pass (G = k on the count ladder); k = 1 is a request
// alone on its own plan (what batching 'invariant' runs). Rounds alternate
// the order of the k values, so the machine's load falls on all alike.
// Prints the machine, the load average, and per k: wall ms per pass, items
// per second, CPU ms per item (this process: the plugin's threads included),
// and each against k = 1. It is what the CPU's batchRowsPerPass in
// lib/scoring/platform/profiles.ts was chosen from.
//
//   node scripts/bench/batching.js [--groups 1,2,4,6,8] [--rounds 3] [--workload pr]
const { parseArgs } = require('node:util');
const { Scorer } = require('../../dist');
const { describeMachine, loadAverage } = require('../lib/machine');
const { WORKLOADS, request } = require('./lib/workloads');
const { upperMedian } = require('../lib/median');

async function main() {
  const { values } = parseArgs({
    options: {
      groups: { type: 'string', default: '1,2,4,6,8' },
      rounds: { type: 'string', default: '3' },
      workload: { type: 'string', default: 'pr' },
    },
  });
  const groups = values.groups.split(',').map(Number);
  const rounds = Number(values.rounds);
  const workload = WORKLOADS[values.workload];
  console.log(`machine: ${describeMachine()}`);
  console.log(
    `workload: ${workload.name} (${workload.description}); groups ${groups.join(', ')}; ${rounds} rounds, order alternating`,
  );
  const big = 1 << 20;
  const scorer = await Scorer.load({
    batching: 'cross-request',
    prefixCacheBytes: 0,
    budget: { batchRowsPerPass: big, tokensPerPass: big, scoreBytesPerPass: 2 ** 40 },
  });
  let variant = 0;
  const send = async (k) => {
    const before = scorer.stats();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(Array.from({ length: k }, () => scorer.score(request(workload, variant++))));
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const after = scorer.stats();
    return {
      ms,
      cpuMs: (cpu.user + cpu.system) / 1000,
      passes: after.devicePasses - before.devicePasses,
      shared: after.batchedPasses - before.batchedPasses,
    };
  };
  // Untimed: compiles (or loads) every program once.
  for (const k of groups) await send(k);
  const runs = new Map(groups.map((k) => [k, []]));
  console.log(`load average before the timed rounds: ${loadAverage()}`);
  for (let r = 0; r < rounds; r++)
    for (const k of r % 2 === 0 ? groups : [...groups].reverse()) runs.get(k).push(await send(k));
  console.log(`load average after: ${loadAverage()}`);
  const items = workload.items;
  const rows = groups.map((k) => {
    const rs = runs.get(k);
    return {
      k,
      passes: rs[0].passes,
      shared: rs[0].shared,
      ms: upperMedian(rs.map((x) => x.ms)),
      cpuPerItem: upperMedian(rs.map((x) => x.cpuMs / (k * items))),
    };
  });
  const base = rows.find((x) => x.k === 1) ?? rows[0];
  console.log('requests  passes  wall ms/call  items/s  x alone  CPU ms/item  x alone');
  for (const x of rows) {
    const itemsPerSecond = (x.k * items) / (x.ms / 1000);
    const baseRate = (base.k * items) / (base.ms / 1000);
    console.log(
      `${String(x.k).padStart(8)}  ${String(x.passes).padStart(6)}  ${x.ms.toFixed(0).padStart(12)}  ${itemsPerSecond.toFixed(1).padStart(7)}  ${(itemsPerSecond / baseRate).toFixed(2).padStart(7)}` +
        `  ${x.cpuPerItem.toFixed(1).padStart(11)}  ${(base.cpuPerItem / x.cpuPerItem).toFixed(2).padStart(7)}`,
    );
  }
  scorer.dispose();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
