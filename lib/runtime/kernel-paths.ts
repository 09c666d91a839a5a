/**
 * Which paths the addon's fused attention kernels take on this CPU
 * (native/kernel_isa.h): the CPU's best instruction set (CPUID, and the OS
 * saving the registers), the one PJRT_SCORE_KERNEL_ISA allows, and the path
 * of an f32 and a bf16 call for a head dim.
 */
import { binding, KernelIsa, NativeKernelPaths } from './binding';

export type { KernelIsa };

export type KernelPaths = NativeKernelPaths;

/** The instruction sets in order: each one's CPUs have all the ones before. */
export const KERNEL_ISAS: readonly KernelIsa[] = Object.freeze(['portable', 'avx2', 'avx512', 'avx512bf16', 'amx']);

/** The paths for head dim `headDim` (an integer in [1, 65536]), read now (the environment may cap them). */
export function attentionKernelPaths(headDim: number): KernelPaths {
  if (!Number.isInteger(headDim) || headDim < 1 || headDim > 65536) throw new TypeError(`attentionKernelPaths: headDim must be an integer in [1, 65536], got ${headDim}`);
  return binding().attentionKernelPaths(headDim);
}
