/**
 * The instruction sets the addon's kernels may run on (native/kernels/kernel_isa.h), a leaf that the
 * binding, the probe and the kernel paths all read.
 */

/** The instruction sets the attention kernels may run on, in order: each one's CPUs have all the ones before. */
export const KERNEL_ISAS = Object.freeze(['portable', 'avx2', 'avx512', 'avx512bf16', 'amx'] as const);

/** An instruction set the attention kernels may run on (KERNEL_ISAS). */
export type KernelIsa = (typeof KERNEL_ISAS)[number];
