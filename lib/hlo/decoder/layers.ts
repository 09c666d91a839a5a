/**
 * The decoder's layers as StableHLO: the weights as parameters (each
 * matrix made ready for its dot in projections.ts), the RoPE tables, the layer loop (a `while`
 * over stacked weights: RMSNorm, RoPE, the attention step the program passes
 * in, SwiGLU or Gemma's GeGLU), and the embedding. pass-programs.ts builds
 * the programs from these.
 */
import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { HloBuildError, TensorType } from '../builder/types';
import { AttentionOptions } from '../attention';
import { applyRotary, rmsNorm, rmsNormRotary, rotaryTables, rotaryTablesFrom } from '../nn/functions';
import { ropeFrequencies } from '../../util/rope';
import { layerAttentionOptions, layerRope, layerWindow } from './gemma';
import { DECODER_SIZES, DecoderDims, DecoderWeightName, DecoderWeightSpec, decoderWeightSpecs } from './layout';
import { DecoderOptions, bf16Products, kernelMatrices, matmulKernel, matmulKernelF32, packedForm } from './options';
import { LayerMatrices, matrixForDot, mlpDown, need, project, projectAdd, projectNormed, Weights } from './projections';

export type { Weights } from './projections';

function weightSpecs(d: DecoderDims, options: DecoderOptions): DecoderWeightSpec[] {
  const packed = options.packedMatrices ?? [];
  const reads = kernelMatrices(options);
  const form = packedForm(options);
  const stray = packed.find((name) => !reads.includes(name) || !form);
  if (stray)
    throw new HloBuildError(
      `decoder: ${stray} is packed for the matmul kernel, ` +
        `but these options do not run its projection through the kernel`,
    );
  return decoderWeightSpecs(d, options.weights, options.bf16Matrices, packed, form);
}

export function declareWeights(f: FunctionBuilder, d: DecoderDims, options: DecoderOptions): Weights {
  const w: Weights = {};
  for (const spec of weightSpecs(d, options))
    w[spec.name] = f.param(new TensorType(spec.elementType, spec.dims), spec.name);
  return w;
}

/** Layer `i`'s slice of a stacked weight, without the layer dimension. */
export function layerSlice(f: FunctionBuilder, stacked: HloValue, i: HloValue): HloValue {
  const rest = stacked.dims.slice(1);
  const starts = [i, ...rest.map(() => 0)];
  return f.reshape(f.dynamicSlice(stacked, starts, [1, ...rest]), rest);
}

/** RoPE tables [T, D/2] for the layers: `local` for sliding-window layers whose base (or scaling) differs (Gemma 3). */
interface RopeTables {
  cos: HloValue;
  sin: HloValue;
  local?: { cos: HloValue; sin: HloValue };
}

/**
 * RoPE tables for the given positions: cos and sin [T, D/2] of
 * position * theta^(-2j/D) (rotate-half pairing: j with j + D/2), with the
 * model's RoPE scaling applied (lib/util/rope.ts); with
 * Gemma's parts, those of the global layers (positions divided by the linear
 * scaling factor) and, where they differ, the local layers' own.
 */
export function ropeTables(f: FunctionBuilder, positions: HloValue, d: DecoderDims): RopeTables {
  const gemma = d.gemma;
  if (!gemma) {
    if (d.headDim % 2 !== 0) throw new HloBuildError(`decoder: head dim ${d.headDim} must be even for RoPE`);
    return rotaryTablesFrom(f, positions, ropeFrequencies(d.ropeTheta, d.headDim, d.ropeScaling));
  }
  const global = ropeTablesFor(f, positions, d.headDim, d.ropeTheta, gemma.ropeLinearFactor ?? 1);
  const sameForLocal = gemma.ropeThetaLocal === d.ropeTheta && (gemma.ropeLinearFactor ?? 1) === 1;
  if (sameForLocal || !d.slidingWindow) return global;
  return { ...global, local: ropeTablesFor(f, positions, d.headDim, gemma.ropeThetaLocal, 1) };
}

function ropeTablesFor(
  f: FunctionBuilder,
  positions: HloValue,
  headDim: number,
  theta: number,
  linearFactor: number,
): { cos: HloValue; sin: HloValue } {
  if (headDim % 2 !== 0) throw new HloBuildError(`decoder: head dim ${headDim} must be even for RoPE`);
  return rotaryTables(f, positions, headDim, theta, linearFactor);
}

interface LayerLoopInputs {
  d: DecoderDims;
  options: DecoderOptions;
  w: Weights;
  /** Hidden states [T, Dm] after the embedding. */
  x: HloValue;
  /** RoPE tables for the rows of x. */
  rope: RopeTables;
  /** Extra values the attention step reads (segment ids, caches, lengths). */
  extraInvariants: HloValue[];
  /** Extra values the attention step updates (K/V caches being filled). */
  extraCarried: HloValue[];
  /**
   * s32 [T]: 0 for the rows of x that are padding (past a query's or an item's length), else 1.
   * Where given, the matmul kernels skip those rows (their projections' results 0); XLA's dots
   * compute every row. Padding rows' results are never read (attention masks them as keys).
   */
  liveRows?: HloValue;
  /**
   * Where given, the attention step on the layer's q | k | v projection [T, (Hq + 2 Hkv) D] itself,
   * before RoPE (the joined kernel call rotates it: lib/hlo/attention/query-items-kernel.ts). Taken
   * where the layer has no q | k | v bias, no q and k norms and one RoPE table (not Gemma's); else
   * `attention` runs on rotated q, k, v.
   */
  attentionOnProjection?: (
    f: FunctionBuilder,
    qkv: HloValue,
    invariants: HloValue[],
    opts: AttentionOptions | undefined,
  ) => HloValue;
  /** `opts`: the layer's score scale, window and soft cap, for the attention forms. */
  attention: (
    f: FunctionBuilder,
    q: HloValue,
    k: HloValue,
    v: HloValue,
    layer: HloValue,
    invariants: HloValue[],
    carried: HloValue[],
    opts: AttentionOptions | undefined,
  ) => { out: HloValue; carried: HloValue[] };
}

/** Which matmul kernel the options run the projections through, if any. */
function arithmeticOf(options: DecoderOptions): 'bf16' | 'f32' | undefined {
  return matmulKernel(options) ? 'bf16' : matmulKernelF32(options) ? 'f32' : undefined;
}

/** The decoder layers as one while loop; returns the final hidden states and extra carried values. */
export function layerLoop(f: FunctionBuilder, x: LayerLoopInputs): { hidden: HloValue; carried: HloValue[] } {
  const { d, w } = x;
  const { numHeads: Hq, numKvHeads: Hkv, headDim: D } = d;
  // The loop's invariants are the per-layer arrays, those every model has
  // first, then the optional ones: the order the programs (and so the JIT
  // disk cache keys) have always had.
  const perLayer = weightSpecs(d, x.options).filter((spec) => spec.perLayer);
  const stackedNames = [...perLayer.filter((spec) => !spec.onlyWith), ...perLayer.filter((spec) => spec.onlyWith)].map(
    (spec) => spec.name,
  );
  const stacked = stackedNames.map((n) => need(w, n));
  const rope = x.rope;
  const live = arithmeticOf(x.options) ? x.liveRows : undefined;
  const hasBias = weightSpecs(d, x.options).some((spec) => spec.name === 'bQkv');
  const hasQkNorm = weightSpecs(d, x.options).some((spec) => spec.name === 'qNorm');
  const onProjection =
    x.attentionOnProjection && !hasBias && !hasQkNorm && !x.rope.local && !d.gemma
      ? x.attentionOnProjection
      : undefined;
  const fixed = [
    rope.cos,
    rope.sin,
    ...(rope.local ? [rope.local.cos, rope.local.sin] : []),
    ...x.extraInvariants,
    ...(live ? [live] : []),
  ];
  const nRope = rope.local ? 4 : 2;
  const gemma = d.gemma;
  const nExtra = x.extraCarried.length;
  const narrowProducts = bf16Products(x.options);
  const arithmetic = arithmeticOf(x.options);
  const takes = kernelMatrices(x.options);
  // Each matrix's width [Ly, in, out] as built (a packed array rounds it up).
  const columns = Object.fromEntries(perLayer.map((spec) => [spec.name, (spec.packedFrom?.dims ?? spec.dims)[2]]));
  const [hidden, ...carriedOut] = f.forLoop(
    { count: d.numLayers, carried: [x.x, ...x.extraCarried], invariants: [...stacked, ...fixed] },
    (b, i, [h, ...extra], inv) => {
      const layer: Partial<Record<DecoderWeightName, HloValue>> = {};
      stackedNames.forEach((n, k) => (layer[n] = layerSlice(b, inv[k], i)));
      // The kernel reads its layer of the stacked arrays itself (the slices it replaces are then unused).
      const ropeInv = inv.slice(stackedNames.length, stackedNames.length + nRope);
      const extraInv = inv.slice(stackedNames.length + nRope, stackedNames.length + nRope + x.extraInvariants.length);
      const liveInv = live ? inv[inv.length - 1] : undefined;
      const kernel: LayerMatrices | undefined = arithmetic
        ? {
            arithmetic,
            stacked: Object.fromEntries(stackedNames.map((n, k) => [n, inv[k]])),
            index: i,
            takes,
            columns,
            live: liveInv,
          }
        : undefined;
      const t = h.dims[0];
      const window = layerWindow(b, d, i);
      const [cos, sin] = layerRope(b, ropeInv, window);
      const opts = layerAttentionOptions(d, window);

      // Attention block: h + (attend(rope(q), rope(k), v)) @ Wo
      let qkv = projectNormed(b, h, layer, 'attnNorm', 'wQkv', d.rmsEps, narrowProducts, kernel);
      const attended = onProjection
        ? { out: onProjection(b, qkv, extraInv, opts), carried: extra }
        : rotatedAttention();
      function rotatedAttention(): { out: HloValue; carried: HloValue[] } {
        if (layer.bQkv) qkv = b.add(qkv, b.broadcastInDim(layer.bQkv, qkv.dims, [1]));
        let q = b.reshape(b.slice(qkv, [0, 0], [t, Hq * D]), [t, Hq, D]);
        let k = b.reshape(b.slice(qkv, [0, Hq * D], [t, (Hq + Hkv) * D]), [t, Hkv, D]);
        const v = b.reshape(b.slice(qkv, [0, (Hq + Hkv) * D], [t, (Hq + 2 * Hkv) * D]), [t, Hkv, D]);
        if (layer.qNorm) {
          q = rmsNormRotary(b, q, layer.qNorm, d.rmsEps, cos, sin);
          k = rmsNormRotary(b, k, layer.kNorm!, d.rmsEps, cos, sin);
        } else {
          q = applyRotary(b, q, cos, sin);
          k = applyRotary(b, k, cos, sin);
        }
        return x.attention(b, q, k, v, i, extraInv, extra, opts);
      }
      const attendedRows = b.reshape(attended.out, [t, Hq * D]);
      // Gemma normalizes the attention output (and the MLP's) before the residual add; else the add
      // is the matmul kernel's epilogue where it runs the projection.
      const afterAttention = layer.attnPostNorm
        ? b.add(h, rmsNorm(b, project(b, attendedRows, layer, 'wO', false, kernel), layer.attnPostNorm, d.rmsEps))
        : projectAdd(b, h, attendedRows, layer, 'wO', kernel);

      // MLP block: h + (silu(gate) * up) @ Wdown; Gemma: gelu_tanh(gate)
      const gateUp = projectNormed(b, afterAttention, layer, 'ffnNorm', 'wGateUp', d.rmsEps, narrowProducts, kernel);
      const out = layer.ffnPostNorm
        ? b.add(
            afterAttention,
            rmsNorm(b, mlpDown(b, gateUp, layer, gemma !== undefined, kernel), layer.ffnPostNorm, d.rmsEps),
          )
        : mlpDown(b, gateUp, layer, gemma !== undefined, kernel, afterAttention);
      if (attended.carried.length !== nExtra)
        throw new HloBuildError('decoder: attention step changed the carried values');
      return [out, ...attended.carried];
    },
  );
  return { hidden, carried: carriedOut };
}

export function embed(f: FunctionBuilder, d: DecoderDims, w: Weights, tokens: HloValue): HloValue {
  const rows = f.take(need(w, 'embedding'), tokens, 0);
  // Only the gathered rows are converted (and scaled, for int8: a token's row of block scales).
  const x = matrixForDot(f, rows, w.embeddingScale && f.take(w.embeddingScale, tokens, 0), 1);
  // Gemma: times sqrt(hidden), already rounded as the reference rounds it (the model room's gemma.ts).
  return d.gemma ? f.multiply(x, d.gemma.embeddingScale) : x;
}

export function checkDims(d: DecoderDims): void {
  for (const k of DECODER_SIZES) {
    const v = d[k];
    if (!(Number.isFinite(v) && v > 0)) throw new HloBuildError(`decoder: ${k} must be positive, got ${v}`);
  }
  if (d.numHeads % d.numKvHeads !== 0)
    throw new HloBuildError(`decoder: ${d.numHeads} heads is not a multiple of ${d.numKvHeads} kv heads`);
}
