/**
 * The kernel probe's child (kernel-probe.ts): loads the addon at argv[2] and
 * runs the trial of each instruction set named after it, in order, printing
 * a JSON line before each trial and one with its result after, so the parent
 * knows which trial a fault ended. Stops at the first trial that fails.
 */
import type { KernelIsa } from './kernel-isas';

interface ProbeAddon {
  probeKernelIsa(isa: KernelIsa): { readonly ok: boolean; readonly detail: string };
}

const [addonFile, ...isas] = process.argv.slice(2) as [string, ...KernelIsa[]];
// eslint-disable-next-line @typescript-eslint/no-require-imports
const addon = require(addonFile) as ProbeAddon;
for (const isa of isas) {
  process.stdout.write(`${JSON.stringify({ begin: isa })}\n`);
  const { ok, detail } = addon.probeKernelIsa(isa);
  process.stdout.write(`${JSON.stringify({ isa, ok, detail })}\n`);
  if (!ok) break;
}
