'use strict';
// One line that says what machine a benchmark ran on, and its load average.
const os = require('node:os');

/**
 * The CPU's family and model numbers ("family 23 model 1") and the flags that matter to XLA's code
 * paths, from /proc/cpuinfo through the library (lib/runtime/host-cpu.ts).
 */
function cpuIdentity() {
  try {
    const { hostCpu, notableCpuFlags } = require('../../dist/runtime/host-cpu');
    return { generation: hostCpu().generation, flags: notableCpuFlags() };
  } catch {
    return { generation: undefined, flags: [] };
  }
}

function machine() {
  const cpus = os.cpus();
  const identity = cpuIdentity();
  return {
    cpu: cpus.length ? cpus[0].model.trim() : 'unknown',
    cpuGeneration: identity.generation,
    cpuFlags: identity.flags,
    cores: cpus.length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    platform: `${os.platform()}-${os.arch()}`,
    node: process.version,
    date: new Date().toISOString(),
  };
}

function describeMachine() {
  const m = machine();
  const generation = m.cpuGeneration ? `${m.cpuGeneration}; ` : '';
  return `${m.cpu} (${generation}${m.cpuFlags.join(' ') || 'no flags read'}), ${m.cores} cores, ${m.memoryGiB} GiB, ${m.platform}, Node ${m.node}, ${m.date}`;
}

/** The 1, 5 and 15 minute load averages, two decimals each (a benchmark prints them beside its figures). */
function loadAverage(separator = ' ') {
  return os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(separator);
}

module.exports = { machine, describeMachine, loadAverage };
