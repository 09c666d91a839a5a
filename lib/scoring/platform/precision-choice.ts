/**
 * The `precision` option resolved: 'highest', 'default' and 'bf16' as asked;
 * 'auto' picks bf16 dots where they pay within the accuracy gate, 'highest'
 * elsewhere, and says why. On an NVIDIA GPU bf16 was measured to pay; on the
 * CPU 'auto' measures it (dot-speed.ts) where the kernels' tried instruction
 * set has bf16 dot units and takes bf16 only when XLA's bf16 dots run at least
 * BF16_PAYS times its f32 ones there. The attention kernels' paths on this CPU
 * (native/kernels/kernel_isa.h) come with it, for explain() and the load log.
 */
import type { KernelIsa, KernelPaths } from '../../runtime/kernel-paths';
import type { DotSpeeds } from './dot-speed';
import type { DecoderOptions } from '../../hlo';
import { platformFacts, type PlatformFacts } from './profiles';

/**
 * How dots compute (docs/design.md "Platforms and precision"): 'highest' is
 * true f32 everywhere; 'default' lets the platform use its fast f32 mode
 * (TF32 on NVIDIA); 'bf16' rounds dot operands to bf16 and accumulates in f32
 * (the GPUs' fast path; on the CPU the attention kernel runs its bf16 tiles).
 */
export type Precision = 'highest' | 'default' | 'bf16';
export const PRECISIONS: readonly Precision[] = ['highest', 'default', 'bf16'];
/**
 * The `precision` option: a precision, or 'auto' (bf16 where measured to pay
 * within the accuracy gate: bf16 CPUs, NVIDIA GPUs; 'highest' elsewhere:
 * precision-choice.ts).
 */
export type PrecisionOption = Precision | 'auto';
export const PRECISION_OPTIONS: readonly PrecisionOption[] = [...PRECISIONS, 'auto'];

/** The program options of each precision: how its dots compute (docs/design.md, 'Platforms and precision'). */
export const DOT_OPTIONS: Readonly<Record<Precision, DecoderOptions>> = {
  highest: { dotPrecision: 'HIGHEST' },
  default: { dotPrecision: 'DEFAULT' },
  bf16: { dotOperands: 'bf16' },
};

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

/** The instruction sets with bf16 dot units (vdpbf16ps, AMX tiles): where 'auto' measures bf16 on the CPU. */
export const BF16_DOT_ISAS: readonly KernelIsa[] = Object.freeze(['avx512bf16', 'amx']);

/**
 * bf16 dots must run this many times as fast as f32 ones for 'auto' to take them: below it the
 * whole forward (its f32 elementwise work and conversions) gains too little for the rounding
 * (the accuracy gate, docs/design.md: max |diff| <= 0.02, mean <= 0.01 against 'highest').
 */
export const BF16_PAYS = 1.15;


/**
 * Resolves `asked` on a host whose kernels take `kernel` (null: no attention kernels, e.g. not the
 * CPU plugin), with the dot speeds 'auto' measured there (null: not measured).
 */
export function choosePrecision(asked: PrecisionOption, platform: string, kernel: KernelPaths | null, dots: DotSpeeds | null = null): PrecisionChoice {
  if (asked !== 'auto') return { precision: asked, asked, reason: asked === 'highest' ? 'highest: true f32 dots (the default)' : `asked: ${asked}` };
  const facts = platformFacts(platform);
  if (facts.known && facts.autoPrecision.rule === 'bf16') return { precision: 'bf16', asked, reason: `auto: bf16 on ${platform} (${facts.autoPrecision.why})` };
  if (!facts.known || kernel === null) {
    return { precision: 'highest', asked, reason: `auto: highest (no measured bf16 gain on platform ${platform}${kernel === null && platform.toLowerCase() === 'cpu' ? ' without the attention kernels' : ''})` };
  }
  if (!BF16_DOT_ISAS.includes(kernel.tried)) {
    const why = kernel.tried === kernel.cpu ? `this CPU's best kernel path is ${kernel.cpu}` : `the kernels run ${kernel.tried} (${kernel.probeNote ?? 'the probe'})`;
    return { precision: 'highest', asked, reason: `auto: highest (${why}: no bf16 dot units)` };
  }
  if (dots === null) return { precision: 'highest', asked, reason: `auto: highest (bf16 dots not measured on this ${kernel.tried} CPU)` };
  // The ratio as the reason states it (2 decimals) is the one compared: a reader never sees "1.15x" refused
  // against "pays from 1.15x".
  const ratio = Number((dots.bf16Gflops / dots.f32Gflops).toFixed(2));
  const measured =
    `${dots.bf16Dots === 'kernel' ? "the addon's bf16 matmul kernel" : "XLA's bf16 x bf16 -> f32 dots"} ran at ${ratio.toFixed(2)}x ${dots.f32Dots === 'kernel' ? "the addon's f32 matmul kernel" : "XLA's f32 dots"} on this ${kernel.tried} CPU ` +
    `(${dots.bf16Gflops.toFixed(0)} against ${dots.f32Gflops.toFixed(0)} GFLOP/s, [${dots.shape[0]}x${dots.shape[1]}]·[${dots.shape[1]}x${dots.shape[2]}], ` +
    `best of ${dots.rounds} alternating rounds on ${dots.cores} cores${dots.source === 'disk' ? ', measured earlier on this machine' : ''})`;
  return ratio >= BF16_PAYS
    ? { precision: 'bf16', asked, reason: `auto: bf16 (${measured})` }
    : { precision: 'highest', asked, reason: `auto: highest (${measured}; bf16 pays from ${BF16_PAYS}x)` };
}

/**
 * Whether bf16 dots go through the addon's matmul kernel (lib/hlo/nn/matmul-kernel.ts): the facts take it,
 * and the kernels (registered with the plugin: `kernel` not null) may run on bf16 dot units here (the
 * allowed instruction set, which PJRT_SCORE_KERNEL_ISA may cap below what the probe tried).
 */
export function bf16DotsByKernel(facts: PlatformFacts, kernel: KernelPaths | null): boolean {
  return facts.matmulKernel && kernel !== null && BF16_DOT_ISAS.includes(kernel.allowed);
}

/** The kernel paths with AVX-512, which the f32 matmul kernel's tiles need (native/kernels/matmul_f32.h). */
const AVX512_ISAS: readonly KernelIsa[] = ['avx512', 'avx512bf16', 'amx'];

/**
 * Whether f32 dots of f32 weights go through the addon's f32 matmul kernel: the facts take it, and the
 * kernels (registered: `kernel` not null) may run AVX-512 here (the allowed instruction set).
 */
export function f32DotsByKernel(facts: PlatformFacts, kernel: KernelPaths | null): boolean {
  return facts.matmulKernelF32 && kernel !== null && AVX512_ISAS.includes(kernel.allowed);
}

/** The paths with the one `precision` uses marked. */
export function attentionKernelChoice(paths: KernelPaths, precision: Precision): AttentionKernelChoice {
  return { ...paths, used: precision === 'bf16' ? (paths.bf16 ?? paths.f32) : paths.f32 };
}
