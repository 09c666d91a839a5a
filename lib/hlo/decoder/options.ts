/**
 * The decoder programs' options beyond their shapes (dot precision, weight
 * types, bf16 products, the attention forms) and the program-name suffix
 * that says which were taken.
 */
import { ProgramOptions } from '../builder/program';
import { CausalAttention, PrefixAttention, causalAttentionNameTag, prefixAttentionTag } from '../attention';
import { Bf16Matrices, KernelMatrixName, WeightType } from './layout';
import type { PackedFor } from '../nn/matmul-kernel';

/** Options of the decoder programs: the dot precision, and the element type of the weights on the device. */
export interface DecoderOptions extends ProgramOptions {
  /** How the big matrices are stored (layout.ts); default f32. */
  readonly weights?: WeightType;
  /**
   * With bf16 weights: their matrices typed u16 (bits, widened in each layer:
   * the default) or bf16 on the device (layout.ts, Bf16Matrices).
   * A platform fact (lib/scoring/platform/profiles.ts).
   */
  readonly bf16Matrices?: Bf16Matrices;
  /**
   * Under bf16 dots (dotOperands 'bf16'): the q|k|v and gate|up projections
   * return bf16 (accumulated in f32 by the backend, rounded once), converted
   * to f32 before the math after them; wO and wDown keep f32 products (they
   * feed the f32 residual stream). Ignored under f32 dots. A platform fact
   * (lib/scoring/platform/profiles.ts): half the bytes of the widest intermediates on
   * a GPU, bf16 elementwise work on the CPU.
   */
  readonly bf16Products?: boolean;
  /**
   * Under bf16 dots (dotOperands 'bf16'): the layers' projections whose
   * products are f32 run through the addon's bf16 matmul kernel
   * (lib/hlo/nn/matmul-kernel.ts) on weights stored f32 or bf16; int8 weights
   * and bf16 products keep XLA's dots. Ignored under f32 dots. A platform fact
   * (lib/scoring/platform/profiles.ts), only where the runtime registered the
   * addon's kernels.
   */
  readonly matmulKernel?: boolean;
  /**
   * Under f32 dots: the layers' projections run through the addon's f32 matmul kernel
   * (lib/hlo/nn/matmul-kernel.ts, matmulF32Kernel) on f32 weights, or on bf16 weights packed in the
   * bf16 kernel's form, which it widens exactly; int8 weights keep XLA's dots. Ignored under bf16
   * dots. A platform fact (lib/scoring/platform/profiles.ts, matmulKernelF32), only where the runtime
   * registered the addon's kernels.
   */
  readonly matmulKernelF32?: boolean;
  /**
   * The programs take a `normalize` input s32[] after their labels (pass-programs.ts): 1 reads
   * log-probabilities, 0 label logits without the full-vocabulary product (lib/hlo/nn/lm-head.ts).
   * Default off: log-probabilities, and no such input.
   */
  readonly normalizeInput?: boolean;
  /**
   * The layer matrices the weights hold packed for the matmul kernel these options run (layout.ts:
   * the weights' own, DeviceWeights.packed; the bf16 kernel's form, or under matmulKernelF32 the f32
   * kernel's for f32 weights and the bf16 kernel's for bf16 ones); each must be one the kernel reads
   * under these options (kernelMatrices).
   * Default none: every matrix stacked [Ly, in, out].
   */
  readonly packedMatrices?: readonly KernelMatrixName[];
  /**
   * How item tokens attend over the prefix keys (fused and extend programs):
   * the joint softmax (default) or another form (lib/hlo/attention/prefix.ts),
   * the one the form chooser gave this pass (lib/scoring/platform/attention-forms.ts).
   */
  readonly prefixAttention?: PrefixAttention;
  /**
   * How the query attends causally to itself (prefill and fused programs): the
   * whole masked square (default) or another form (lib/hlo/attention/causal.ts),
   * the one the form chooser gave this pass (lib/scoring/platform/attention-forms.ts).
   */
  readonly causalAttention?: CausalAttention;
}

/**
 * The attention forms' tags, `_ones_own` or `_ffi` for items over the prefix and `_qc4` or `_cffi` for the
 * causal attention
 * (where the program has that step), then `_mbf16` for bf16 matrices typed
 * bf16, `_pbf16` for bf16 products and `_mmk` for the matmul kernel (where they
 * take effect), `_mmkf` for the f32 matmul kernel and `_nrm` for the normalize
 * input; '' for the defaults, whose program texts never change.
 */
export function programSuffix(options: DecoderOptions, steps: { prefix: boolean; causal: boolean }): string {
  const a = options.prefixAttention;
  const c = options.causalAttention;
  const attention =
    (steps.prefix && a && a.kind !== 'joint' ? `_${prefixAttentionTag(a)}` : '') +
    (steps.causal && c && c.kind !== 'square' ? `_${causalAttentionNameTag(c)}` : '');
  return (
    attention +
    (bf16Typed(options) ? '_mbf16' : '') +
    (bf16Products(options) ? '_pbf16' : '') +
    (matmulKernel(options) ? '_mmk' : '') +
    (matmulKernelF32(options) ? '_mmkf' : '') +
    (options.normalizeInput ? '_nrm' : '')
  );
}

/** The matrices are bf16 typed bf16 on the device. */
function bf16Typed(options: DecoderOptions): boolean {
  return options.weights === 'bf16' && options.bf16Matrices === 'bf16';
}

/** The q|k|v and gate|up products are bf16 (only under bf16 dots). */
export function bf16Products(options: DecoderOptions): boolean {
  return options.dotOperands === 'bf16' && options.bf16Products === true;
}

/** The projections run through the addon's matmul kernel (only under bf16 dots). */
export function matmulKernel(options: DecoderOptions): boolean {
  return options.dotOperands === 'bf16' && options.matmulKernel === true;
}

/** The projections run through the addon's f32 matmul kernel (only under f32 dots). */
export function matmulKernelF32(options: DecoderOptions): boolean {
  return options.dotOperands !== 'bf16' && options.matmulKernelF32 === true;
}

/**
 * The form a load packs the kernel's matrices in under these options: the bf16 kernel's pairs of bf16
 * rows, which the f32 kernel also reads (widening them), so a bf16 checkpoint keeps its bits under
 * either; f32 panels for the f32 kernel on f32 weights. Undefined without a kernel.
 */
export function packedForm(options: DecoderOptions): PackedFor | undefined {
  if (matmulKernel(options)) return 'bf16';
  if (!matmulKernelF32(options)) return undefined;
  return (options.weights ?? 'f32') === 'f32' ? 'f32' : 'bf16';
}

/**
 * The layer matrices whose projections run through a matmul kernel under these options, and so the
 * ones a load may store packed for it: wO and wDown (SwiGLU or Gemma's GeGLU its prologue) always,
 * q|k|v and gate|up unless their products are bf16. Both kernels read f32 and bf16 weights, not
 * int8; none without a kernel.
 */
export function kernelMatrices(options: DecoderOptions): KernelMatrixName[] {
  const weights = options.weights ?? 'f32';
  const taken = (matmulKernel(options) || matmulKernelF32(options)) && weights !== 'int8';
  if (!taken) return [];
  return [...(bf16Products(options) ? [] : (['wQkv', 'wGateUp'] as const)), 'wO', 'wDown'];
}
