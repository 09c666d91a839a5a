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

/**
 * The CPU's family and model numbers (Linux, x86), e.g. "family 23 model 1": a VM's model name
 * ("AMD EPYC") may not tell one generation from the next, and their roofs differ by 2x or more.
 */
function cpuGeneration() {
  let text = '';
  try {
    text = require('node:fs').readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    return undefined;
  }
  const field = (name) => new RegExp(`^${name}\\s*:\\s*(\\S+)`, 'm').exec(text)?.[1];
  const family = field('cpu family');
  const model = field('model');
  return family !== undefined && model !== undefined ? `family ${family} model ${model}` : undefined;
}

function machine() {
  const cpus = os.cpus();
  return {
    cpu: cpus.length ? cpus[0].model.trim() : 'unknown',
    cpuGeneration: cpuGeneration(),
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
  const generation = m.cpuGeneration ? `${m.cpuGeneration}; ` : '';
  return `${m.cpu} (${generation}${m.cpuFlags.join(' ') || 'no flags read'}), ${m.cores} cores, ${m.memoryGiB} GiB, ${m.platform}, Node ${m.node}, ${m.date}`;
}

module.exports = { machine, describeMachine };
