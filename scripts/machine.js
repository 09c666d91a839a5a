'use strict';
// One line that says what machine a benchmark ran on.
const os = require('node:os');

function machine() {
  const cpus = os.cpus();
  return {
    cpu: cpus.length ? cpus[0].model.trim() : 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    platform: `${os.platform()}-${os.arch()}`,
    node: process.version,
    date: new Date().toISOString(),
  };
}

function describeMachine() {
  const m = machine();
  return `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.platform}, Node ${m.node}, ${m.date}`;
}

module.exports = { machine, describeMachine };
