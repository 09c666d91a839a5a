'use strict';
// One line that says what machine a benchmark ran on.
const os = require('node:os');

/** The CPU flags that matter to XLA's code paths (from /proc/cpuinfo through the library). */
function cpuFlags() {
  try {
    const { notableCpuFlags } = require('../dist/runtime/host-cpu');
    return notableCpuFlags();
  } catch {
    return [];
  }
}

function machine() {
  const cpus = os.cpus();
  return {
    cpu: cpus.length ? cpus[0].model.trim() : 'unknown',
    cpuFlags: cpuFlags(),
    cores: cpus.length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    platform: `${os.platform()}-${os.arch()}`,
    node: process.version,
    date: new Date().toISOString(),
  };
}

function describeMachine() {
  const m = machine();
  return `${m.cpu} (${m.cpuFlags.join(' ') || 'no flags read'}), ${m.cores} cores, ${m.memoryGiB} GiB, ${m.platform}, Node ${m.node}, ${m.date}`;
}

module.exports = { machine, describeMachine };
