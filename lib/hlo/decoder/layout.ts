/**
 * The decoder's device weight layout, declared once: the arrays every decoder
 * program takes after its data inputs (names, dims, parameter order), which
 * of them exist for which architecture (q/k/v bias for Qwen2, q/k norm for
 * Qwen3), which may be the same buffer as another (a tied LM head), and which
 * host tensors fill each one. The program builder (layers.ts) declares
 * its parameters from this table; the weight upload (lib/device) fills the
 * arrays from it.
 *
 * Per-layer arrays are stacked over layers (leading dimension) so the layer
 * loop is one `while`; matrices are stored [in, out] so each projection is a
 * plain x @ W, with q|k|v and gate|up fused side by side.
 *
 * The weight type (f32, bf16, int8) sets the element type of the big
 * matrices (embedding/LM head, wQkv, wO, wGateUp, wDown); norms and biases
 * stay f32. int8 matrices are quantized in blocks along their input axis
 * (Q8_0-like: one f32 scale per INT8_BLOCK consecutive input elements of an
 * output channel), the scales declared here as arrays of their own after
 * every other array, so the f32 layout is the one it always was.
 *
 * Under a matmul kernel (options.ts, kernelMatrices) the layer matrices it
 * reads may be stored packed for it instead: the bf16 kernel's bf16 panels,
 * the f32 kernel's f32 panels (lib/hlo/nn/matmul-kernel.ts,
 * packedMatmulForm), built as the plain stacked array first and packed on
 * the device once at load.
 */

import { PackedFor, packedMatmulForm } from '../nn/matmul-kernel';
import type { RopeScaling } from '../../util/rope';

/** The positive sizes of a decoder; each field is documented on the model room's ModelConfig. */
export const DECODER_SIZES = [
  'vocabSize',
  'hiddenSize',
  'intermediateSize',
  'numLayers',
  'numHeads',
  'numKvHeads',
  'headDim',
  'ropeTheta',
  'rmsEps',
] as const;

/**
 * The shape of a decoder, as the programs need it (ModelConfig fits), plus
 * its optional parts: q/k/v biases (Qwen2), per-head q/k RMSNorm (Qwen3).
 */
export type DecoderDims = { readonly [K in (typeof DECODER_SIZES)[number]]: number } & {
  readonly attentionBias: boolean;
  readonly qkNorm: boolean;
  /** RoPE scaling (the model room's ModelConfig.ropeScaling); absent: plain RoPE. Gemma's is in `gemma`. */
  readonly ropeScaling?: RopeScaling;
  /** The Gemma decoder's parts (the model room's GemmaParts fits): absent for every other family. */
  readonly gemma?: DecoderGemma;
  /** Layers with a sliding attention window (the model room's SlidingWindow fits). */
  readonly slidingWindow?: { readonly window: number; readonly layers: readonly boolean[] };
};

/**
 * What a Gemma decoder adds (layers.ts, gemma.ts): embeddings times
 * `embeddingScale`, a norm after attention and after the MLP (attnPostNorm,
 * ffnPostNorm) when `postNorms` (Gemma 2 and 3, not Gemma), GeGLU, scores times `attentionScale`, optional soft-capping
 * of the scores and of the final logits, and a RoPE base of its own for the
 * sliding-window layers (the global ones use ropeTheta, positions divided by
 * ropeLinearFactor).
 */
interface DecoderGemma {
  readonly embeddingScale: number;
  readonly postNorms: boolean;
  readonly attentionScale: number;
  readonly attentionSoftcap?: number;
  readonly finalSoftcap?: number;
  readonly ropeThetaLocal: number;
  readonly ropeLinearFactor?: number;
}

/** How the big matrices live on the device; norms and biases are f32 in every case. */
export type WeightType = 'f32' | 'bf16' | 'int8';

/**
 * Device element type of a weight array: f32, bf16 matrices as Bf16Matrices
 * says, int8 matrices s8.
 */
type WeightElementType = 'f32' | 'u16' | 'bf16' | 's8';

/**
 * How bf16 matrices are typed on the device, the same bits either way (a
 * platform fact: lib/scoring/platform/profiles.ts, docs/gpu.md "Options that matter
 * there"):
 *
 *   u16    their bits typed u16, widened to f32 in each layer (shift, bitcast):
 *          XLA CPU computes every bf16 op in f32 (a dynamic slice of the
 *          stacked array included, which converted whole arrays at each
 *          execution), and a bitcast of a parameter is a copy; integer slices
 *          of u16 are neither. The CPU's.
 *   bf16   typed bf16: under bf16 dots a matrix goes into its dot as it is,
 *          otherwise it is converted to f32 (exactly). The GPU's: there the
 *          widening was a kernel per layer.
 */
export type Bf16Matrices = 'u16' | 'bf16';
export const BF16_MATRICES: readonly Bf16Matrices[] = ['u16', 'bf16'];

/**
 * Input elements per int8 scale. One scale per output channel (a whole row)
 * put SmolLM2-135M outside the accuracy gate (max 4.5e-2 vs f32); blocks of
 * 32 hold it (docs/performance.md, "Weight precision"), and 32 matches GGUF's
 * Q8_0/Q4_x blocks, so a Q8_0 tensor re-quantizes to exactly its own values.
 */
export const INT8_BLOCK = 32;

/** The matrices stored in the weight type; int8 gives each a `<name>Scale` array. */
export type MatrixName = 'embedding' | 'lmHead' | 'wQkv' | 'wO' | 'wGateUp' | 'wDown';
type ScaleName = `${MatrixName}Scale`;

export type DecoderWeightName =
  | ScaleName
  | 'embedding'
  | 'lmHead'
  | 'finalNorm'
  | 'attnNorm'
  | 'wQkv'
  | 'bQkv'
  | 'qNorm'
  | 'kNorm'
  | 'wO'
  | 'ffnNorm'
  | 'attnPostNorm'
  | 'ffnPostNorm'
  | 'wGateUp'
  | 'wDown';

/** Whole-model host tensors (the model room's HostWeights keys). */
export type HostGlobalName = 'embedding' | 'finalNorm' | 'lmHead';
/** Per-layer host tensors, Hugging Face orientation (the model room's HostLayerWeights keys). */
export type HostLayerName =
  | 'attnNorm'
  | 'wq'
  | 'wk'
  | 'wv'
  | 'wo'
  | 'bq'
  | 'bk'
  | 'bv'
  | 'qNorm'
  | 'kNorm'
  | 'attnPostNorm'
  | 'ffnNorm'
  | 'ffnPostNorm'
  | 'wGate'
  | 'wUp'
  | 'wDown';

/**
 * One host tensor's place in a layer's slice of a stacked array: a vector is
 * copied at `offset`; a Hugging Face [out, in] matrix is transposed into the
 * columns [offset, offset + out) of the [in, width] slice.
 */
export interface LayerPart {
  readonly source: HostLayerName;
  readonly offset: number;
}

/** Where an array's data comes from. */
export type WeightSource = { readonly global: HostGlobalName } | { readonly layerParts: readonly LayerPart[] };

/** One device weight array, in parameter order. */
export interface DecoderWeightSpec {
  readonly name: DecoderWeightName;
  readonly dims: readonly number[];
  /** Carries the layer as its leading dimension (sliced inside the layer loop). */
  readonly perLayer: boolean;
  /** Exists only for models with this flag set (`postNorms`: a Gemma decoder with post norms). */
  readonly onlyWith?: 'attentionBias' | 'qkNorm' | 'postNorms';
  /** When the model ties it to this array (same host tensor), the same buffer is passed twice. */
  readonly tiedTo?: DecoderWeightName;
  readonly source: WeightSource;
  /** Element type on the device: the weight type for matrices, f32 for everything else. */
  readonly elementType: WeightElementType;
  /** A big matrix: stored in the weight type. */
  readonly matrix: boolean;
  /**
   * Set on an int8 scale array: the matrix it scales. Its dims are the
   * matrix's with the input axis divided by INT8_BLOCK: one f32 per block of
   * a row of the [V, Dm] embedding/LM head ([V, Dm / B]), per block of a
   * column of an [in, out] layer matrix ([in / B, out]).
   */
  readonly scaleOf?: MatrixName;
  /**
   * Set on a layer matrix stored packed for a matmul kernel (u16 bf16 bits
   * for the bf16 kernel, f32 for the f32 one: packedMatmulForm): the stacked
   * array [Ly, in, out] it is built as first (dims and element type), then
   * packed on the device.
   */
  readonly packedFrom?: { readonly dims: readonly number[]; readonly elementType: WeightElementType };
}

/** The layer matrices the matmul kernels can read packed. */
export type KernelMatrixName = 'wQkv' | 'wO' | 'wGateUp' | 'wDown';

const MATRICES: readonly MatrixName[] = ['embedding', 'lmHead', 'wQkv', 'wO', 'wGateUp', 'wDown'];

function isMatrix(name: DecoderWeightName): name is MatrixName {
  return (MATRICES as readonly string[]).includes(name);
}

/** The device element type of a matrix in this weight type (bf16 matrices typed as `bf16` says; default u16). */
function matrixElementType(weights: WeightType, bf16: Bf16Matrices = 'u16'): WeightElementType {
  return weights === 'int8' ? 's8' : weights === 'bf16' ? bf16 : 'f32';
}

/** Width of the fused q|k|v projection. */
export function qkvWidth(d: DecoderDims): number {
  return (d.numHeads + 2 * d.numKvHeads) * d.headDim;
}

type UntypedSpec = Omit<DecoderWeightSpec, 'elementType' | 'matrix'>;

/** Every array the layout has, present or not for this model, in parameter order (f32 layout). */
function allWeightSpecs(d: DecoderDims): UntypedSpec[] {
  const {
    vocabSize: V,
    hiddenSize: Dm,
    intermediateSize: F,
    numLayers: Ly,
    numHeads: Hq,
    numKvHeads: Hkv,
    headDim: D,
  } = d;
  const qkv = qkvWidth(d);
  const perLayer = (
    name: DecoderWeightName,
    dims: number[],
    parts: LayerPart[],
    onlyWith?: DecoderWeightSpec['onlyWith'],
  ): UntypedSpec => ({
    name,
    dims: [Ly, ...dims],
    perLayer: true,
    onlyWith,
    source: { layerParts: parts },
  });
  const qkvParts = (q: HostLayerName, k: HostLayerName, v: HostLayerName): LayerPart[] => [
    { source: q, offset: 0 },
    { source: k, offset: Hq * D },
    { source: v, offset: (Hq + Hkv) * D },
  ];
  return [
    { name: 'embedding', dims: [V, Dm], perLayer: false, source: { global: 'embedding' } },
    { name: 'lmHead', dims: [V, Dm], perLayer: false, tiedTo: 'embedding', source: { global: 'lmHead' } },
    { name: 'finalNorm', dims: [Dm], perLayer: false, source: { global: 'finalNorm' } },
    perLayer('attnNorm', [Dm], [{ source: 'attnNorm', offset: 0 }]),
    perLayer('wQkv', [Dm, qkv], qkvParts('wq', 'wk', 'wv')),
    perLayer('bQkv', [qkv], qkvParts('bq', 'bk', 'bv'), 'attentionBias'),
    perLayer('qNorm', [D], [{ source: 'qNorm', offset: 0 }], 'qkNorm'),
    perLayer('kNorm', [D], [{ source: 'kNorm', offset: 0 }], 'qkNorm'),
    perLayer('wO', [Hq * D, Dm], [{ source: 'wo', offset: 0 }]),
    perLayer('ffnNorm', [Dm], [{ source: 'ffnNorm', offset: 0 }]),
    perLayer(
      'wGateUp',
      [Dm, 2 * F],
      [
        { source: 'wGate', offset: 0 },
        { source: 'wUp', offset: F },
      ],
    ),
    perLayer('wDown', [F, Dm], [{ source: 'wDown', offset: 0 }]),
    // After every other array, so the other families' parameter order is the one it always was.
    perLayer('attnPostNorm', [Dm], [{ source: 'attnPostNorm', offset: 0 }], 'postNorms'),
    perLayer('ffnPostNorm', [Dm], [{ source: 'ffnPostNorm', offset: 0 }], 'postNorms'),
  ];
}

/** The input axis of a matrix as stored: the last of [V, Dm], the middle of a stacked [Ly, in, out]. */
function inputAxis(spec: Pick<DecoderWeightSpec, 'perLayer' | 'dims'>): number {
  return spec.perLayer ? spec.dims.length - 2 : spec.dims.length - 1;
}

/** Why this decoder cannot hold int8 weights (an input size not a multiple of INT8_BLOCK), or undefined. */
export function int8Unsupported(d: DecoderDims): string | undefined {
  const bad = allWeightSpecs(d).filter((s) => isMatrix(s.name) && s.dims[inputAxis(s)] % INT8_BLOCK !== 0);
  if (!bad.length) return undefined;
  return (
    `int8 weights need every matrix input size to be a multiple of ${INT8_BLOCK}; ` +
    `${bad.map((s) => `${s.name} has ${s.dims[inputAxis(s)]}`).join(', ')}`
  );
}

/** An int8 matrix's scale array: one f32 per INT8_BLOCK input elements of each output channel. */
function scaleSpec(m: UntypedSpec & { name: MatrixName }): DecoderWeightSpec {
  const axis = inputAxis(m);
  return {
    name: `${m.name}Scale`,
    dims: m.dims.map((n, i) => (i === axis ? n / INT8_BLOCK : n)),
    perLayer: m.perLayer,
    ...(m.tiedTo !== undefined && isMatrix(m.tiedTo) ? { tiedTo: `${m.tiedTo}Scale` as ScaleName } : {}),
    source: m.source,
    elementType: 'f32',
    matrix: false,
    scaleOf: m.name,
  };
}

/**
 * The weight parameters this model's decoder programs take, in parameter
 * order, for a weight type (default f32) and, for bf16, how its matrices
 * are typed (default u16 bits); `packed` names the layer matrices stored
 * packed in the form `packedFor` (not with int8 weights; the f32 panels
 * hold f32 weights only).
 */
export function decoderWeightSpecs(
  d: DecoderDims,
  weights: WeightType = 'f32',
  bf16: Bf16Matrices = 'u16',
  packed: readonly KernelMatrixName[] = [],
  packedFor: PackedFor = 'bf16',
): DecoderWeightSpec[] {
  if (packed.length && weights === 'int8')
    throw new Error('decoder: int8 matrices are not packed for the matmul kernel');
  if (packed.length && packedFor === 'f32' && weights !== 'f32')
    throw new Error(`decoder: the f32 panels hold f32 matrices, not ${weights}`);
  const present = allWeightSpecs(d).filter(
    (spec) =>
      spec.onlyWith === undefined || (spec.onlyWith === 'postNorms' ? d.gemma?.postNorms === true : d[spec.onlyWith]),
  );
  const typed: DecoderWeightSpec[] = present.map((spec) => {
    const matrix = isMatrix(spec.name);
    const elementType = matrix ? matrixElementType(weights, bf16) : 'f32';
    if (!(packed as readonly string[]).includes(spec.name)) return { ...spec, matrix, elementType };
    const form = packedMatmulForm(spec.dims, packedFor);
    return {
      ...spec,
      matrix,
      dims: form.dims,
      elementType: form.elementType,
      packedFrom: { dims: spec.dims, elementType },
    };
  });
  if (weights !== 'int8') return typed;
  const unsupported = int8Unsupported(d);
  if (unsupported) throw new Error(`decoder: ${unsupported}`);
  const scales = present
    .filter((spec): spec is UntypedSpec & { name: MatrixName } => isMatrix(spec.name))
    .map(scaleSpec);
  return [...typed, ...scales];
}
