/**
 * The `precision` option resolved: 'highest', 'default' and 'bf16' as asked;
 * 'auto' (the default) runs a checkpoint as the peers a user compares us
 * with run it (docs/design.md, 'The default precision'): bf16 on an NVIDIA
 * GPU; on a CPU whose class measured bf16 dots to pay (profiles.ts), bf16 for
 * a checkpoint stored in 16 bits and true f32 for one stored in f32 or
 * quantized; true f32 elsewhere. Decided from facts, never from a timing.
 * The attention kernels' paths on this CPU (native/kernels/kernel_isa.h) come
 * with it, for explain() and the load log.
 */
import type { KernelIsa, KernelPaths } from '../../runtime/kernel-paths';
import type { StoredMatrixType } from '../../model/load';
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
 * The `precision` option: a precision, or 'auto' (the default: bf16 where the
 * platform and the checkpoint call for it, else 'highest': choosePrecision).
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

/** The instruction sets with bf16 dot units (vdpbf16ps, AMX tiles): where 'auto' may run bf16 on the CPU. */
export const BF16_DOT_ISAS: readonly KernelIsa[] = Object.freeze(['avx512bf16', 'amx']);

/**
 * The checkpoints 'auto' runs in bf16 on a CPU whose class takes them (`bf16-checkpoints`): those stored in 16 bits.
 */
const HALF_CHECKPOINTS: readonly StoredMatrixType[] = ['bf16', 'f16'];

/**
 * Resolves `asked` on a host whose kernels take `kernel` (null: no attention kernels, e.g. not the
 * CPU plugin), for a checkpoint whose matrices are stored as `matrixType`, on a CPU of `cpuVendor`
 * (CPUID's vendor: profiles.ts, platformFacts).
 */
export function choosePrecision(
  asked: PrecisionOption,
  platform: string,
  kernel: KernelPaths | null,
  matrixType: StoredMatrixType,
  cpuVendor: string | null = null,
): PrecisionChoice {
  return resolvePrecision(asked, platformFacts(platform, kernel?.tried ?? null, cpuVendor), kernel, matrixType);
}

/** choosePrecision with the platform's facts already read (of the kernels' CPU class: platformFacts). */
export function resolvePrecision(
  asked: PrecisionOption,
  facts: PlatformFacts,
  kernel: KernelPaths | null,
  matrixType: StoredMatrixType,
): PrecisionChoice {
  if (asked !== 'auto')
    return {
      precision: asked,
      asked,
      reason: asked === 'highest' ? 'highest: true f32 dots (asked)' : `asked: ${asked}`,
    };
  const highest = (why: string): PrecisionChoice => ({ precision: 'highest', asked, reason: `auto: highest (${why})` });
  const { platform } = facts;
  if (!facts.known) return highest(`no measured bf16 gain on platform ${platform}`);
  const rule = facts.autoPrecision;
  if (rule.rule === 'bf16') return { precision: 'bf16', asked, reason: `auto: bf16 on ${platform} (${rule.why})` };
  if (kernel === null) return highest(`no bf16 dot units in use on platform ${platform} without the attention kernels`);
  if (!BF16_DOT_ISAS.includes(kernel.allowed)) {
    const why =
      kernel.allowed === kernel.cpu
        ? `this CPU's best kernel path is ${kernel.cpu}`
        : `the kernels run ${kernel.allowed} (${kernel.probeNote ?? 'capped by PJRT_SCORE_KERNEL_ISA'})`;
    return highest(`${why}: no bf16 dot units`);
  }
  if (rule.rule === 'highest') return highest(`${kernel.tried}: ${rule.why}`);
  if (!HALF_CHECKPOINTS.includes(matrixType))
    return highest(`the checkpoint stores its matrices as ${matrixType}: true f32, as its own precision`);
  return {
    precision: 'bf16',
    asked,
    reason: `auto: bf16 (a ${matrixType} checkpoint, run in 16 bits as stored; ${rule.why})`,
  };
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
