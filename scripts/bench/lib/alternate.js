'use strict';
// Times compiled programs round-robin in one process (A B C ... A B C ...),
// so load from other processes falls on all of them alike: per case, CPU
// time of this process (every thread: XLA's and the addon's kernel pool) and
// wall time per execution, the first round dropped (compile-time effects).
const { loadAverage } = require('../../lib/machine');

/**
 * cases: [{ exe, buffers, isa? }]; fills each case's `cpu` and `wall` (ms, one per round after the
 * first). `isa`: PJRT_SCORE_KERNEL_ISA while the case runs (the attention kernels' path cap).
 */
async function timeAlternating(cases, rounds) {
  for (const k of cases) [k.cpu, k.wall] = [[], []];
  const isaBefore = process.env.PJRT_SCORE_KERNEL_ISA;
  for (let round = 0; round < rounds; round++) {
    for (const k of cases) {
      if (k.isa) process.env.PJRT_SCORE_KERNEL_ISA = k.isa;
      else if (isaBefore === undefined) delete process.env.PJRT_SCORE_KERNEL_ISA;
      else process.env.PJRT_SCORE_KERNEL_ISA = isaBefore;
      const cpu0 = process.cpuUsage();
      const wall0 = performance.now();
      const outs = await k.exe.execute(k.buffers);
      await outs[0].toHost();
      outs.forEach((o) => o.dispose());
      const cpu = process.cpuUsage(cpu0);
      if (round === 0) continue;
      k.cpu.push((cpu.user + cpu.system) / 1000);
      k.wall.push(performance.now() - wall0);
    }
  }
  if (isaBefore === undefined) delete process.env.PJRT_SCORE_KERNEL_ISA;
  else process.env.PJRT_SCORE_KERNEL_ISA = isaBefore;
}

/** The end of a run: prints the load average, disposes every case's buffers and executable, then the client. */
function finishCases(cases, client) {
  console.log(`\nload average at end: ${loadAverage()}`);
  for (const k of cases) {
    k.buffers.forEach((b) => b.dispose());
    k.exe.dispose();
  }
  client.dispose();
}

module.exports = { timeAlternating, finishCases };
