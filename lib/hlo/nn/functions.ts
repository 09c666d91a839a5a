/**
 * Neural-network helpers written on top of the builder ops. Each takes the
 * builder first so it works in a function body and inside loop bodies alike.
 */

import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { RopeFrequencies, ropeFrequencies } from '../../util/rope';
import { HloBuildError, TensorType, formatDims, isFloatType } from '../builder/types';

function lastAxis(x: HloValue, axis: number | undefined, op: string): number {
  const a = axis ?? x.rank - 1;
  if (!Number.isInteger(a) || a < 0 || a >= x.rank)
    throw new HloBuildError(`${op}: axis ${a} is out of range for ${x.type}`);
  if (!isFloatType(x.elementType)) throw new HloBuildError(`${op}: needs a floating-point operand, got ${x.type}`);
  return a;
}

/** f32 -> bf16 bits (u16), round to nearest even; NaN stays NaN (quiet): lib/device-weights/convert.ts's f32ToBf16. */
export function bf16Bits(f: FunctionBuilder, x: HloValue): HloValue {
  const bits = f.bitcastConvert(x, 'u32');
  const high = f.divide(bits, 0x10000);
  const rounded = f.divide(f.add(f.add(bits, 0x7fff), f.and(high, 1)), 0x10000);
  const nan = f.gt(f.and(bits, 0x7fffffff), 0x7f800000);
  return f.convert(f.select(nan, f.or(high, 0x40), rounded), 'u16');
}

/** Mean over `axes`, the reduced dims dropped. */
export function mean(f: FunctionBuilder, x: HloValue, axes: readonly number[]): HloValue {
  const n = axes.reduce((acc, a) => acc * x.dims[a], 1);
  if (n === 0) throw new HloBuildError(`mean: reducing ${formatDims(x.dims)} over ${formatDims(axes)} has no elements`);
  return f.divide(f.reduceSum(x, axes), n);
}

/** log(sum(exp(x))) over `axis` (dropped), stable for large values and all -inf rows (-> -inf). */
export function logsumexp(f: FunctionBuilder, x: HloValue, axis?: number): HloValue {
  const a = lastAxis(x, axis, 'logsumexp');
  const m = f.reduceMax(x, [a]);
  // A row of all -inf has max -inf; shift by 0 instead so exp gives 0, not NaN.
  const shift = f.select(f.gt(m, -Infinity), m, 0);
  const sum = f.reduceSum(f.exponential(f.subtract(x, f.expandReduced(shift, x.dims, [a]))), [a]);
  return f.add(f.log(sum), shift);
}

/** x - logsumexp(x) over `axis` (kept). */
export function logSoftmax(f: FunctionBuilder, x: HloValue, axis?: number): HloValue {
  const a = lastAxis(x, axis, 'logSoftmax');
  return f.subtract(x, f.expandReduced(logsumexp(f, x, a), x.dims, [a]));
}

/** exp(x - max) / sum over `axis`. */
export function softmax(f: FunctionBuilder, x: HloValue, axis?: number): HloValue {
  const a = lastAxis(x, axis, 'softmax');
  const m = f.reduceMax(x, [a]);
  const e = f.exponential(f.subtract(x, f.expandReduced(m, x.dims, [a])));
  return f.divide(e, f.expandReduced(f.reduceSum(e, [a]), x.dims, [a]));
}

/**
 * RMSNorm over the last axis: x * rsqrt(mean(x^2) + eps) * weight, with
 * `weight` of the last axis' size.
 */
export function rmsNorm(f: FunctionBuilder, x: HloValue, weight: HloValue, eps: number): HloValue {
  const a = lastAxis(x, undefined, 'rmsNorm');
  if (weight.rank !== 1 || weight.dims[0] !== x.dims[a] || weight.elementType !== x.elementType) {
    throw new HloBuildError(`rmsNorm: weight must be ${x.elementType}[${x.dims[a]}], got ${weight.type}`);
  }
  const normed = f.multiply(x, f.expandReduced(rmsFactor(f, x, eps), x.dims, [a]));
  return f.multiply(normed, f.broadcastInDim(weight, x.dims, [a]));
}

/** RMSNorm's factor rsqrt(mean(x^2) + eps) over the last axis (dropped). */
function rmsFactor(f: FunctionBuilder, x: HloValue, eps: number): HloValue {
  if (!(eps >= 0)) throw new HloBuildError(`rmsNorm: eps must be a non-negative number, got ${eps}`);
  return f.rsqrt(f.add(mean(f, f.multiply(x, x), [x.rank - 1]), eps));
}

/** SiLU (swish): x * sigmoid(x). */
export function silu(f: FunctionBuilder, x: HloValue): HloValue {
  return f.multiply(x, f.logistic(x));
}

/**
 * A linear layer in the PyTorch weight layout: x [..., In] times weight
 * [Out, In] (transposed), plus an optional bias [Out] -> [..., Out].
 */
export function linear(f: FunctionBuilder, x: HloValue, weight: HloValue, bias?: HloValue): HloValue {
  const a = x.rank - 1;
  if (x.rank < 1 || weight.rank !== 2 || weight.dims[1] !== x.dims[a]) {
    throw new HloBuildError(
      `linear: weight must be [Out, ${x.dims[a]}] for x ${formatDims(x.dims)}, got ${formatDims(weight.dims)}`,
    );
  }
  const y = f.dotGeneral(x, weight, { lhsContract: [a], rhsContract: [1] });
  if (!bias) return y;
  if (bias.rank !== 1 || bias.dims[0] !== weight.dims[0])
    throw new HloBuildError(`linear: bias must be [${weight.dims[0]}], got ${formatDims(bias.dims)}`);
  return f.add(y, f.broadcastInDim(bias, y.dims, [y.rank - 1]));
}

/**
 * Rotary tables for positions s32 [T]: angle[t, i] = pos[t] * theta^(-2i/D)
 * / linearFactor, i < D/2 -> { cos, sin } f32 [T, D/2]. The angles and their
 * cosine and sine are computed in f64, rounded to f32 once: an f32 angle at
 * position p is off by up to p * 2^-24 radians (1.2e-4 at 2,000, 2e-3 at
 * 32,768), enough to move Gemma 3 270M's label logprobs by 4e-4 after a
 * 2,000-token query (docs/models.md, "Precision").
 * The tables are computed once per program, outside the layer loop.
 */
export function rotaryTables(
  f: FunctionBuilder,
  positions: HloValue,
  headDim: number,
  theta: number,
  linearFactor = 1,
): { cos: HloValue; sin: HloValue } {
  if (!(headDim > 0 && headDim % 2 === 0))
    throw new HloBuildError(`rotaryTables: head dim must be even and positive, got ${headDim}`);
  if (!(theta > 0)) throw new HloBuildError(`rotaryTables: theta must be positive, got ${theta}`);
  if (!(linearFactor > 0))
    throw new HloBuildError(`rotaryTables: the linear scaling factor must be positive, got ${linearFactor}`);
  const scaling = linearFactor === 1 ? undefined : ({ type: 'linear', factor: linearFactor } as const);
  return rotaryTablesFrom(f, positions, ropeFrequencies(theta, headDim, scaling));
}

/**
 * cos and sin [T, D/2] of position * inverse[j], times the attention scale
 * (YaRN's), computed in f64 and rounded to f32 once.
 */
export function rotaryTablesFrom(
  f: FunctionBuilder,
  positions: HloValue,
  freqs: RopeFrequencies,
): { cos: HloValue; sin: HloValue } {
  if (positions.rank !== 1 || positions.elementType !== 's32')
    throw new HloBuildError(`rotaryTables: positions must be s32[T], got ${positions.type}`);
  const half = freqs.inverse.length;
  if (half === 0 || !freqs.inverse.every((v) => Number.isFinite(v) && v > 0))
    throw new HloBuildError('rotaryTables: the inverse frequencies must be positive and finite');
  if (!(freqs.attentionScale > 0))
    throw new HloBuildError(`rotaryTables: the attention scale must be positive, got ${freqs.attentionScale}`);
  const t = positions.dims[0];
  const freq = f.broadcastInDim(f.constant([...freqs.inverse], new TensorType('f64', [half])), [t, half], [1]);
  const pos = f.broadcastInDim(f.convert(positions, 'f64'), [t, half], [0]);
  const angle = f.multiply(pos, freq);
  const scaled = (v: HloValue): HloValue => (freqs.attentionScale === 1 ? v : f.multiply(v, freqs.attentionScale));
  return { cos: f.convert(scaled(f.cosine(angle)), 'f32'), sin: f.convert(scaled(f.sine(angle)), 'f32') };
}

/**
 * Rotary position embedding, "rotate half" convention (Hugging Face Llama):
 * x [T, H, D] with halves x1, x2 -> [x1 cos - x2 sin, x2 cos + x1 sin];
 * cos and sin are [T, D/2].
 */
export function applyRotary(f: FunctionBuilder, x: HloValue, cos: HloValue, sin: HloValue): HloValue {
  if (x.rank !== 3) throw new HloBuildError(`applyRotary: x must be [T, H, D], got ${formatDims(x.dims)}`);
  const [t, h, d] = x.dims;
  const half = d / 2;
  for (const [name, v] of [
    ['cos', cos],
    ['sin', sin],
  ] as const) {
    if (v.rank !== 2 || v.dims[0] !== t || v.dims[1] !== half)
      throw new HloBuildError(`applyRotary: ${name} must be [${t}, ${half}], got ${formatDims(v.dims)}`);
  }
  const x1 = f.slice(x, [0, 0, 0], [t, h, half]);
  const x2 = f.slice(x, [0, 0, half], [t, h, d]);
  const c = f.broadcastInDim(cos, [t, h, half], [0, 2]);
  const s = f.broadcastInDim(sin, [t, h, half], [0, 2]);
  return f.concatenate(
    [f.subtract(f.multiply(x1, c), f.multiply(x2, s)), f.add(f.multiply(x2, c), f.multiply(x1, s))],
    2,
  );
}

/**
 * applyRotary(rmsNorm(x, weight)) over each head of x [T, H, D] (Qwen3's and
 * Gemma 3's q and k norms), computed as rsqrt(mean(x^2) + eps) times
 * applyRotary(x * weight): the norm's factor is one number per row and head
 * and the rotation is linear along the head, so the factor can come after it.
 * One reduction reads x for the factors; the rest is elementwise in x, which a
 * compiler fuses into whatever reads the result. Normalizing first gives it a
 * reduction whose output the rotation must read back: on XLA's GPU backend the
 * normalized heads, then both rotated halves, went through memory in f32 in
 * separate kernels (docs/gpu.md, "Kernel profiles").
 */
export function rmsNormRotary(
  f: FunctionBuilder,
  x: HloValue,
  weight: HloValue,
  eps: number,
  cos: HloValue,
  sin: HloValue,
): HloValue {
  lastAxis(x, undefined, 'rmsNormRotary');
  if (weight.rank !== 1 || weight.dims[0] !== x.dims[x.rank - 1] || weight.elementType !== x.elementType) {
    throw new HloBuildError(
      `rmsNormRotary: weight must be ${x.elementType}[${x.dims[x.rank - 1]}], got ${weight.type}`,
    );
  }
  const rotated = applyRotary(f, f.multiply(x, f.broadcastInDim(weight, x.dims, [x.rank - 1])), cos, sin);
  return f.multiply(rotated, f.expandReduced(rmsFactor(f, x, eps), x.dims, [x.rank - 1]));
}
