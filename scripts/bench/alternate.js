'use strict';
// Times compiled programs round-robin in one process (A B C ... A B C ...),
// so load from other processes falls on all of them alike: per case, CPU
// time of this process (every thread: XLA's and the addon's kernel pool) and
// wall time per execution, the first round dropped (compile-time effects).

/** cases: [{ exe, buffers }]; fills each case's `cpu` and `wall` (ms, one per round after the first). */
async function timeAlternating(cases, rounds) {
  for (const k of cases) [k.cpu, k.wall] = [[], []];
  for (let round = 0; round < rounds; round++) {
    for (const k of cases) {
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
}

/** Disposes every case's buffers and executable. */
function disposeCases(cases) {
  for (const k of cases) {
    k.buffers.forEach((b) => b.dispose());
    k.exe.dispose();
  }
}

module.exports = { timeAlternating, disposeCases };
