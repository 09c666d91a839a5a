'use strict';
// Which paths the addon's attention kernels take (native/kernels/kernel_isa.h): the
// CPU's best instruction set (CPUID, XCR0) capped by PJRT_SCORE_KERNEL_ISA,
// read on every call, so a test runs every path this CPU has in one process.
const { attentionKernelPaths, KERNEL_ISAS } = require('../../dist/runtime');

const ISA_ENV = 'PJRT_SCORE_KERNEL_ISA';
const cpuIsa = attentionKernelPaths(64).cpu;
const cpuHasAvx2 = KERNEL_ISAS.indexOf(cpuIsa) >= KERNEL_ISAS.indexOf('avx2');

/** Runs fn with the kernels capped at `isa` (null: the CPU's best), then restores the environment. */
async function withIsa(isa, fn) {
  const before = process.env[ISA_ENV];
  if (isa) process.env[ISA_ENV] = isa;
  else delete process.env[ISA_ENV];
  try {
    return await fn();
  } finally {
    if (before === undefined) delete process.env[ISA_ENV];
    else process.env[ISA_ENV] = before;
  }
}

/** Runs fn on the portable path (portable) or the CPU's best (compatibility with older tests). */
function withPath(portable, fn) {
  return withIsa(portable ? 'portable' : null, fn);
}

/** The distinct paths of `kind` ('f32' or 'bf16') this CPU takes for head dim d: [{ isa (the cap to set), path }], portable first. */
function paths(kind, d) {
  const seen = new Map();
  const before = process.env[ISA_ENV];
  for (const isa of KERNEL_ISAS.slice(0, KERNEL_ISAS.indexOf(cpuIsa) + 1)) {
    process.env[ISA_ENV] = isa;
    const path = attentionKernelPaths(d)[kind];
    if (!seen.has(path)) seen.set(path, isa);
  }
  if (before === undefined) delete process.env[ISA_ENV];
  else process.env[ISA_ENV] = before;
  return [...seen].map(([path, isa]) => ({ isa, path }));
}

const f32Paths = (d) => paths('f32', d);
const bf16Paths = (d = 64) => paths('bf16', d);

module.exports = { cpuIsa, cpuHasAvx2, withIsa, withPath, f32Paths, bf16Paths };
