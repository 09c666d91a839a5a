/**
 * The decoder's device weight layout, declared once: the arrays every decoder
 * program takes after its data inputs (names, dims, parameter order), which
 * of them exist for which architecture (q/k/v bias for Qwen2, q/k norm for
 * Qwen3), which may be the same buffer as another (a tied LM head), and which
 * host tensors fill each one. The program builder (transformer.ts) declares
 * its parameters from this table; the weight upload (lib/device) fills the
 * arrays from it.
 *
 * Per-layer arrays are stacked over layers (leading dimension) so the layer
 * loop is one `while`; matrices are stored [in, out] so each projection is a
 * plain x @ W, with q|k|v and gate|up fused side by side.
 */

/** The positive sizes of a decoder; each field is documented on the model room's ModelConfig. */
export const DECODER_SIZES = ['vocabSize', 'hiddenSize', 'intermediateSize', 'numLayers', 'numHeads', 'numKvHeads', 'headDim', 'ropeTheta', 'rmsEps'] as const;

/**
 * The shape of a decoder, as the programs need it (ModelConfig fits), plus
 * its optional parts: q/k/v biases (Qwen2), per-head q/k RMSNorm (Qwen3).
 */
export type DecoderDims = { readonly [K in (typeof DECODER_SIZES)[number]]: number } & {
  readonly attentionBias: boolean;
  readonly qkNorm: boolean;
};

export type DecoderWeightName =
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
  | 'wGateUp'
  | 'wDown';

/** Whole-model host tensors (the model room's HostWeights keys). */
export type HostGlobalName = 'embedding' | 'finalNorm' | 'lmHead';
/** Per-layer host tensors, Hugging Face orientation (the model room's HostLayerWeights keys). */
export type HostLayerName = 'attnNorm' | 'wq' | 'wk' | 'wv' | 'wo' | 'bq' | 'bk' | 'bv' | 'qNorm' | 'kNorm' | 'ffnNorm' | 'wGate' | 'wUp' | 'wDown';

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
  /** Exists only for models with this flag set. */
  readonly onlyWith?: 'attentionBias' | 'qkNorm';
  /** When the model ties it to this array (same host tensor), the same buffer is passed twice. */
  readonly tiedTo?: DecoderWeightName;
  readonly source: WeightSource;
}

/** Width of the fused q|k|v projection. */
export function qkvWidth(d: DecoderDims): number {
  return (d.numHeads + 2 * d.numKvHeads) * d.headDim;
}

/** Every array the layout has, present or not for this model, in parameter order. */
function allWeightSpecs(d: DecoderDims): DecoderWeightSpec[] {
  const { vocabSize: V, hiddenSize: Dm, intermediateSize: F, numLayers: Ly, numHeads: Hq, numKvHeads: Hkv, headDim: D } = d;
  const qkv = qkvWidth(d);
  const perLayer = (name: DecoderWeightName, dims: number[], parts: LayerPart[], onlyWith?: DecoderWeightSpec['onlyWith']): DecoderWeightSpec => ({
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
    perLayer('wGateUp', [Dm, 2 * F], [
      { source: 'wGate', offset: 0 },
      { source: 'wUp', offset: F },
    ]),
    perLayer('wDown', [F, Dm], [{ source: 'wDown', offset: 0 }]),
  ];
}

/** The weight parameters this model's decoder programs take, in parameter order. */
export function decoderWeightSpecs(d: DecoderDims): DecoderWeightSpec[] {
  return allWeightSpecs(d).filter((spec) => spec.onlyWith === undefined || d[spec.onlyWith]);
}
