/**
 * The `precision` option resolved: 'highest', 'default' and 'bf16' as asked;
 * 'auto' picks bf16 dots where they were measured to pay within the accuracy
 * gate (a CPU with bf16 matrix units, with the bf16 attention kernel; an
 * NVIDIA GPU), 'highest' elsewhere, and says why. The attention kernels' paths on this CPU (native/kernel_isa.h) come
 * with it, for explain() and the load log.
 */
import type { KernelIsa, KernelPaths } from '../runtime/kernel-paths';
import type { Precision, PrecisionOption } from './options';

export interface PrecisionChoice {
  /** What the programs run. */
  readonly precision: Precision;
  /** What was asked. */
  readonly asked: PrecisionOption;
  readonly reason: string;
}

/** The attention kernels' paths a Scorer runs, and the one its precision takes. */
export interface AttentionKernelChoice extends KernelPaths {
  /** The path of this Scorer's precision: `bf16` for precision 'bf16', else `f32`. */
  readonly used: string;
}

/**
 * CPU classes where 'auto' runs bf16, with what showed it pays and holds
 * the accuracy gate (docs/design.md) (max |diff| <= 0.02, mean <= 0.01 against
 * 'highest'; test/precision.test.js checks it on the default model).
 */
const AUTO_BF16: Partial<Record<KernelIsa, string>> = {
  amx:
    'AMX bf16 matrix units: XLA runs bf16 x bf16 -> f32 dots on AMX (1,045-1,276 against 270-347 GFLOP/s f32 on a Xeon, family 6 model 167) and the attention kernel runs AMX tiles',
  avx512bf16:
    'AVX512_BF16 (vdpbf16ps): XLA ran bf16 x bf16 -> f32 dots at 1.85x the f32 GFLOP per CPU-s on an AMD EPYC Zen 4 (family 25 model 17), the bf16 attention kernel 1.1-1.55x the f32 kernel',
};

/**
 * Platforms other than the CPU where 'auto' runs bf16, with what showed it pays and holds the
 * accuracy gate (docs/gpu.md, 'Measured').
 */
const AUTO_BF16_PLATFORMS: Readonly<Record<string, string>> = {
  cuda:
    'NVIDIA tensor cores: bf16 dots ran the target workload at 3.7x true f32 on an H100 (4,128 against 1,117 items/s), within the accuracy gate against PyTorch f32 (max 1.2e-2, mean 2.5e-3 over 500 items)',
};

/** Resolves `asked` on a host whose kernels take `kernel` (null: no attention kernels, e.g. not the CPU plugin). */
export function choosePrecision(asked: PrecisionOption, platform: string, kernel: KernelPaths | null): PrecisionChoice {
  if (asked !== 'auto') return { precision: asked, asked, reason: asked === 'highest' ? 'highest: true f32 dots (the default)' : `asked: ${asked}` };
  const onPlatform = AUTO_BF16_PLATFORMS[platform.toLowerCase()];
  if (onPlatform !== undefined) return { precision: 'bf16', asked, reason: `auto: bf16 on ${platform} (${onPlatform})` };
  if (platform.toLowerCase() !== 'cpu' || kernel === null) {
    return { precision: 'highest', asked, reason: `auto: highest (no measured bf16 gain on platform ${platform}${kernel === null && platform.toLowerCase() === 'cpu' ? ' without the attention kernels' : ''})` };
  }
  const why = AUTO_BF16[kernel.cpu];
  if (why === undefined) return { precision: 'highest', asked, reason: `auto: highest (this CPU's best kernel path is ${kernel.cpu}: no bf16 matrix units)` };
  return { precision: 'bf16', asked, reason: `auto: bf16 on ${kernel.cpu} (${why})` };
}

/** The paths with the one `precision` uses marked. */
export function attentionKernelChoice(paths: KernelPaths, precision: Precision): AttentionKernelChoice {
  return { ...paths, used: precision === 'bf16' ? (paths.bf16 ?? paths.f32) : paths.f32 };
}
