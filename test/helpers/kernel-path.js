'use strict';
// Which inner loops the addon's attention kernels run (native/prefix_attention.cc):
// the AVX2 path needs the CPU's avx2 and fma and D a multiple of 16;
// PJRT_SCORE_KERNEL_PORTABLE=1, read on every call, forces the portable one.
const fs = require('node:fs');

const PORTABLE_ENV = 'PJRT_SCORE_KERNEL_PORTABLE';
const cpuinfo = fs.readFileSync('/proc/cpuinfo', 'utf8');
const cpuHasAvx2 = /\bavx2\b/.test(cpuinfo) && /\bfma\b/.test(cpuinfo);

/** Runs fn with the portable path forced (portable) or the default one, then restores the environment. */
async function withPath(portable, fn) {
  const before = process.env[PORTABLE_ENV];
  if (portable) process.env[PORTABLE_ENV] = '1';
  else delete process.env[PORTABLE_ENV];
  try {
    return await fn();
  } finally {
    if (before === undefined) delete process.env[PORTABLE_ENV];
    else process.env[PORTABLE_ENV] = before;
  }
}

module.exports = { cpuHasAvx2, withPath };
