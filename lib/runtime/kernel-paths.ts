/**
 * Which paths the addon's fused attention kernels take on this CPU
 * (native/kernels/kernel_isa.h): the CPU's best instruction set (CPUID, and the OS
 * saving the registers), the highest one the kernel probe showed to run
 * here, the one PJRT_SCORE_KERNEL_ISA allows under it, and the path of an
 * f32 and a bf16 call for a head dim.
 */
import { binding, KernelIsa, kernelProbe, KernelThreads, NativeKernelPaths } from './binding';

export type { KernelIsa, KernelThreads };
export { KERNEL_ISAS } from './binding';

export interface KernelPaths extends NativeKernelPaths {
  /**
   * The highest instruction set the kernel probe showed to run on this CPU (docs/design.md, 'Kernel paths are tried in
   * a child first').
   */
  readonly tried: KernelIsa;
  /** Why `tried` is below `cpu`: which path killed or failed its trial in the child, and how; absent when it is not. */
  readonly probeNote?: string;
}

/** The paths for head dim `headDim` (an integer in [1, 65536]), read now (the environment may cap them). */
export function attentionKernelPaths(headDim: number): KernelPaths {
  if (!Number.isInteger(headDim) || headDim < 1 || headDim > 65536)
    throw new TypeError(`attentionKernelPaths: headDim must be an integer in [1, 65536], got ${headDim}`);
  const probe = kernelProbe();
  return {
    ...binding().attentionKernelPaths(headDim),
    tried: probe.tried,
    ...(probe.note !== undefined ? { probeNote: probe.note } : {}),
  };
}

/**
 * The kernels' thread pool: one thread per CPU the process may use (its
 * affinity mask, capped by its cgroup's CPU quota), or
 * PJRT_SCORE_KERNEL_THREADS where set.
 */
export function kernelThreads(): KernelThreads {
  return binding().kernelThreads();
}
