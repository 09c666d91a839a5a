/**
 * A Llama-family decoder as StableHLO: embedding, a loop over stacked layer
 * weights (RMSNorm, RoPE, grouped-query attention, SwiGLU), final norm and
 * the LM-head gather. One layer function serves every layout; only the
 * attention step differs:
 *
 *   dense     one packed sequence [T], mask from segment ids
 *   fused     query [P] + items [N, L] in one pass (the factored layout)
 *   prefill   query [P] alone; returns its per-layer K/V
 *   extend    items [C, L] against a K/V cache from prefill
 *
 * Weights are parameters (uploaded once, passed to every execution), stacked
 * over layers so the layer loop is a `while` with one body: compile time does
 * not grow with depth. Their layout (names, dims, order, which exist for
 * which architecture) is declared once in decoder-layout.ts.
 *
 * Gemma (DecoderDims.gemma, decoder-gemma.ts) adds an embedding scale, norms
 * after attention and after the MLP, GeGLU, its score scale and soft caps,
 * and per-layer sliding windows with a RoPE base of their own: programs of
 * the other families are the ones they always were.
 *
 * Weights in bf16 or int8 (DecoderOptions.weights) are converted to f32
 * right before their dot, one layer's slice at a time: XLA CPU runs bf16
 * dots very slowly, so every matmul is f32 and accumulates in f32. Two
 * exceptions for the GPU, both platform facts (lib/scoring/platform.ts):
 * bf16 matrices typed bf16 on the device go into bf16 dots as they are
 * (DecoderOptions.bf16Matrices), and under bf16 dots the q|k|v and gate|up
 * projections may return bf16 products (DecoderOptions.bf16Products).
 */
import { FunctionBuilder } from './builder';
import { HloValue } from './core';
import { PrefixAttention, itemsOverPrefix, prefixAttentionTag } from './prefix-attention';
import { CausalAttention, causalAttentionNameTag, causalPrefix } from './attention-causal-chunks';
import { CudnnAttention } from './attention-cudnn';
import { queryAndItemsAttentionCudnn } from './attention-cudnn-forms';
import { PassRows } from './pass-rows';
import { lmHeadLabelLogprobs } from './lm-head';
import { AttentionOptions } from './attention';
import { geluTanh, layerAttentionOptions, layerRope, layerWindow } from './decoder-gemma';
import { applyRotary, rmsNorm, rmsNormRotary, rotaryTables } from './nn';
import { buildProgram, HloProgram, ProgramOptions } from './program';
import { HloBuildError, TensorType } from './types';
import { Bf16Matrices, DECODER_SIZES, DecoderDims, DecoderWeightName, DecoderWeightSpec, decoderWeightSpecs, INT8_BLOCK, MatrixName, WeightType } from './decoder-layout';

export type { DecoderDims } from './decoder-layout';

type Weights = Partial<Record<DecoderWeightName, HloValue>>;

/** Options of the decoder programs: the dot precision, and the element type of the weights on the device. */
export interface DecoderOptions extends ProgramOptions {
  /** How the big matrices are stored (decoder-layout.ts); default f32. */
  readonly weights?: WeightType;
  /**
   * With bf16 weights: their matrices typed u16 (bits, widened in each layer:
   * the default) or bf16 on the device (decoder-layout.ts, Bf16Matrices).
   * A platform fact (lib/scoring/platform.ts).
   */
  readonly bf16Matrices?: Bf16Matrices;
  /**
   * Under bf16 dots (dotOperands 'bf16'): the q|k|v and gate|up projections
   * return bf16 (accumulated in f32 by the backend, rounded once), converted
   * to f32 before the math after them; wO and wDown keep f32 products (they
   * feed the f32 residual stream). Ignored under f32 dots. A platform fact
   * (lib/scoring/platform.ts): half the bytes of the widest intermediates on
   * a GPU, bf16 elementwise work on the CPU.
   */
  readonly bf16Products?: boolean;
  /**
   * How item tokens attend over the prefix keys (fused and extend programs):
   * the joint softmax (default) or key blocks with an online softmax
   * (prefix-attention.ts). A platform fact (lib/scoring/platform.ts).
   */
  readonly prefixAttention?: PrefixAttention;
  /**
   * How the query attends causally to itself (prefill and fused programs): the
   * whole masked square (default) or query chunks against the keys they see
   * (attention-causal-chunks.ts). A platform fact (lib/scoring/platform.ts).
   */
  readonly causalAttention?: CausalAttention;
}

/**
 * `_kb256w` for a blocked prefix attention, `_qc4` for chunked causal attention
 * (where the program has that step), then `_mbf16` for bf16 matrices typed
 * bf16 and `_pbf16` for bf16 products (where they take effect); '' for the
 * defaults, whose program texts never change.
 */
function programSuffix(options: DecoderOptions, steps: { prefix: boolean; causal: boolean }): string {
  const a = options.prefixAttention;
  const c = options.causalAttention;
  const attention = (steps.prefix && a && a.kind !== 'joint' ? `_${prefixAttentionTag(a)}` : '') + (steps.causal && c && c.kind !== 'square' ? `_${causalAttentionNameTag(c)}` : '');
  return attention + (bf16Typed(options) ? '_mbf16' : '') + (bf16Products(options) ? '_pbf16' : '');
}

/** The matrices are bf16 typed bf16 on the device. */
function bf16Typed(options: DecoderOptions): boolean {
  return options.weights === 'bf16' && options.bf16Matrices === 'bf16';
}

/** The q|k|v and gate|up products are bf16 (only under bf16 dots). */
function bf16Products(options: DecoderOptions): boolean {
  return options.dotOperands === 'bf16' && options.bf16Products === true;
}

function weightSpecs(d: DecoderDims, options: DecoderOptions): DecoderWeightSpec[] {
  return decoderWeightSpecs(d, options.weights, options.bf16Matrices);
}

function declareWeights(f: FunctionBuilder, d: DecoderDims, options: DecoderOptions): Weights {
  const w: Weights = {};
  for (const spec of weightSpecs(d, options)) w[spec.name] = f.param(new TensorType(spec.elementType, spec.dims), spec.name);
  return w;
}

/** bf16 bits (as u16) -> f32, exactly: the bits are the top half of the f32. */
function widenBf16(f: FunctionBuilder, bits: HloValue): HloValue {
  return f.bitcastConvert(f.shiftLeft(f.convert(bits, 'u32'), 16), 'f32');
}

/**
 * A matrix for its dot, as f32: bf16 and int8 are converted here, int8
 * scaled by block along `inAxis` (one scale per INT8_BLOCK input elements
 * of each output channel: the scale array is the matrix's dims with that
 * axis divided by the block). f32 passes through with no op, so the f32
 * programs are what they always were. A matrix typed bf16 stays bf16 where
 * `keepBf16` (it goes into a bf16 dot as it is), else is converted exactly.
 */
function matrixForDot(f: FunctionBuilder, matrix: HloValue, scale: HloValue | undefined, inAxis: number, keepBf16 = false): HloValue {
  if (matrix.elementType === 'f32') return matrix;
  if (matrix.elementType === 'u16') return widenBf16(f, matrix);
  if (matrix.elementType === 'bf16') return keepBf16 ? matrix : f.convert(matrix, 'f32');
  const x = f.convert(matrix, 'f32');
  if (!scale) throw new HloBuildError('decoder: an int8 matrix came without its scales');
  // [.., in, ..] -> [.., in / B, B, ..]: splitting an axis is free in row-major order.
  const dims = x.dims;
  const blocked = [...dims.slice(0, inAxis), dims[inAxis] / INT8_BLOCK, INT8_BLOCK, ...dims.slice(inAxis + 1)];
  const scaleAxes = dims.map((_, i) => (i <= inAxis ? i : i + 1));
  const scaled = f.multiply(f.reshape(x, blocked), f.broadcastInDim(scale, blocked, scaleAxes));
  return f.reshape(scaled, dims);
}

/** The function computes its dots in bf16: a matrix typed bf16 goes into them as it is. */
function bf16Dots(f: FunctionBuilder): boolean {
  return f.dotOperands === 'bf16';
}

/**
 * x [T, in] @ one layer's matrix [in, out] -> f32 [T, out], whatever its
 * storage. `bf16Product`: the dot returns bf16 (accumulated in f32, rounded
 * once), converted to f32 for the math after it.
 */
function project(f: FunctionBuilder, x: HloValue, layer: Weights, name: MatrixName, bf16Product = false): HloValue {
  const matrix = matrixForDot(f, need(layer, name), layer[`${name}Scale`], 0, bf16Dots(f));
  if (!bf16Product) return f.matmul(x, matrix);
  return f.convert(f.dotGeneral(x, matrix, { lhsContract: [1], rhsContract: [0], result: 'bf16' }), 'f32');
}

/** The LM head [V, Dm] for its dot: f32, or bf16 as stored under bf16 dots (the whole table: its logsumexp needs every row). */
function lmHeadForDot(f: FunctionBuilder, w: Weights): HloValue {
  return matrixForDot(f, need(w, 'lmHead'), w.lmHeadScale, 1, bf16Dots(f));
}

function need(w: Weights, name: DecoderWeightName): HloValue {
  const v = w[name];
  if (!v) throw new HloBuildError(`decoder: weight ${name} is missing`);
  return v;
}

/** Layer `i`'s slice of a stacked weight, without the layer dimension. */
function layerSlice(f: FunctionBuilder, stacked: HloValue, i: HloValue): HloValue {
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
 * position * theta^(-2j/D) (rotate-half pairing: j with j + D/2); with
 * Gemma's parts, those of the global layers (positions divided by the linear
 * scaling factor) and, where they differ, the local layers' own.
 */
function ropeTables(f: FunctionBuilder, positions: HloValue, d: DecoderDims): RopeTables {
  const gemma = d.gemma;
  if (!gemma) return ropeTablesFor(f, positions, d.headDim, d.ropeTheta, 1);
  const global = ropeTablesFor(f, positions, d.headDim, d.ropeTheta, gemma.ropeLinearFactor ?? 1);
  const sameForLocal = gemma.ropeThetaLocal === d.ropeTheta && (gemma.ropeLinearFactor ?? 1) === 1;
  if (sameForLocal || !d.slidingWindow) return global;
  return { ...global, local: ropeTablesFor(f, positions, d.headDim, gemma.ropeThetaLocal, 1) };
}

function ropeTablesFor(f: FunctionBuilder, positions: HloValue, headDim: number, theta: number, linearFactor: number): { cos: HloValue; sin: HloValue } {
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
  /** `opts`: the layer's score scale, window and soft cap, for the attention forms. */
  attention: (f: FunctionBuilder, q: HloValue, k: HloValue, v: HloValue, layer: HloValue, invariants: HloValue[], carried: HloValue[], opts: AttentionOptions | undefined) => { out: HloValue; carried: HloValue[] };
}

/** The decoder layers as one while loop; returns the final hidden states and extra carried values. */
function layerLoop(f: FunctionBuilder, x: LayerLoopInputs): { hidden: HloValue; carried: HloValue[] } {
  const { d, w } = x;
  const { numHeads: Hq, numKvHeads: Hkv, headDim: D, intermediateSize: F } = d;
  // The loop's invariants are the per-layer arrays, those every model has
  // first, then the optional ones: the order the programs (and so the JIT
  // disk cache keys) have always had.
  const perLayer = weightSpecs(d, x.options).filter((spec) => spec.perLayer);
  const stackedNames = [...perLayer.filter((spec) => !spec.onlyWith), ...perLayer.filter((spec) => spec.onlyWith)].map((spec) => spec.name);
  const stacked = stackedNames.map((n) => need(w, n));
  const rope = x.rope;
  const fixed = [rope.cos, rope.sin, ...(rope.local ? [rope.local.cos, rope.local.sin] : []), ...x.extraInvariants];
  const nRope = rope.local ? 4 : 2;
  const gemma = d.gemma;
  const nExtra = x.extraCarried.length;
  const narrowProducts = bf16Products(x.options);
  const [hidden, ...carriedOut] = f.forLoop(
    { count: d.numLayers, carried: [x.x, ...x.extraCarried], invariants: [...stacked, ...fixed] },
    (b, i, [h, ...extra], inv) => {
      const layer: Partial<Record<DecoderWeightName, HloValue>> = {};
      stackedNames.forEach((n, k) => (layer[n] = layerSlice(b, inv[k], i)));
      const ropeInv = inv.slice(stackedNames.length, stackedNames.length + nRope);
      const extraInv = inv.slice(stackedNames.length + nRope);
      const t = h.dims[0];
      const window = layerWindow(b, d, i);
      const [cos, sin] = layerRope(b, ropeInv, window);
      const opts = layerAttentionOptions(d, window);

      // Attention block: h + (attend(rope(q), rope(k), v)) @ Wo
      const normed = rmsNorm(b, h, layer.attnNorm!, d.rmsEps);
      let qkv = project(b, normed, layer, 'wQkv', narrowProducts);
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
      const attended = x.attention(b, q, k, v, i, extraInv, extra, opts);
      const projected = project(b, b.reshape(attended.out, [t, Hq * D]), layer, 'wO');
      // Gemma normalizes the attention output (and the MLP's) before the residual add.
      const afterAttention = b.add(h, layer.attnPostNorm ? rmsNorm(b, projected, layer.attnPostNorm, d.rmsEps) : projected);

      // MLP block: h + (silu(gate) * up) @ Wdown; Gemma: gelu_tanh(gate)
      const normed2 = rmsNorm(b, afterAttention, layer.ffnNorm!, d.rmsEps);
      const gateUp = project(b, normed2, layer, 'wGateUp', narrowProducts);
      const gate = b.slice(gateUp, [0, 0], [t, F]);
      const up = b.slice(gateUp, [0, F], [t, 2 * F]);
      const activated = b.multiply(gemma ? geluTanh(b, gate) : b.multiply(gate, b.logistic(gate)), up);
      const down = project(b, activated, layer, 'wDown');
      const out = b.add(afterAttention, layer.ffnPostNorm ? rmsNorm(b, down, layer.ffnPostNorm, d.rmsEps) : down);
      if (attended.carried.length !== nExtra) throw new HloBuildError('decoder: attention step changed the carried values');
      return [out, ...attended.carried];
    },
  );
  return { hidden, carried: carriedOut };
}

function embed(f: FunctionBuilder, d: DecoderDims, w: Weights, tokens: HloValue): HloValue {
  const rows = f.take(need(w, 'embedding'), tokens, 0);
  // Only the gathered rows are converted (and scaled, for int8: a token's row of block scales).
  const x = matrixForDot(f, rows, w.embeddingScale && f.take(w.embeddingScale, tokens, 0), 1);
  // Gemma: times sqrt(hidden), already rounded as the reference rounds it (the model room's gemma.ts).
  return d.gemma ? f.multiply(x, d.gemma.embeddingScale) : x;
}

/** The LM head's options: the final norm's epsilon, Gemma 2's final soft cap. */
function lmHeadOptions(d: DecoderDims): { eps: number; softcap?: number } {
  return { eps: d.rmsEps, ...(d.gemma?.finalSoftcap !== undefined ? { softcap: d.gemma.finalSoftcap } : {}) };
}

function checkDims(d: DecoderDims): void {
  for (const k of DECODER_SIZES) {
    const v = d[k];
    if (!(Number.isFinite(v) && v > 0)) throw new HloBuildError(`decoder: ${k} must be positive, got ${v}`);
  }
  if (d.numHeads % d.numKvHeads !== 0) throw new HloBuildError(`decoder: ${d.numHeads} heads is not a multiple of ${d.numKvHeads} kv heads`);
}

export interface FactoredDecoderShape {
  /**
   * Queries in the pass, G (default 1): each group is one request's query
   * and its items, and no token ever sees another group's. G = 1 is the
   * program of one request, unchanged (no group axis anywhere).
   */
  groups?: number;
  /** Query (prefix) bucket P. */
  prefix: number;
  /** Items N and item length bucket L. */
  items: number;
  itemLength: number;
  labels: number;
}

/** x as a 1-D array (a no-op, emitting nothing, when it already is one). */
function flat(f: FunctionBuilder, x: HloValue): HloValue {
  return x.rank === 1 ? x : f.reshape(x, [x.type.size]);
}

/**
 * Label logprobs of each item at its last real token (row len - 1; an empty
 * item's row is garbage): itemHidden [K, L, Dm], itemLengths s32[K], labels
 * s32[Lb] shared or s32[K, Lb] per row -> [K, Lb].
 */
function itemReadout(f: FunctionBuilder, d: DecoderDims, w: Weights, lmHead: HloValue, itemHidden: HloValue, itemLengths: HloValue, labels: HloValue): HloValue {
  const [n, l, dm] = itemHidden.dims;
  const last = f.clamp(0, f.subtract(itemLengths, 1), l - 1);
  const flatIndex = f.add(f.multiply(f.iota(TensorType.s32([n]), 0), l), last);
  const rows = f.take(f.reshape(itemHidden, [n * l, dm]), flatIndex, 0);
  return lmHeadLabelLogprobs(f, { rows, finalNormWeight: need(w, 'finalNorm'), lmHead, labels }, lmHeadOptions(d));
}

/**
 * Label logprobs at the query's last real token: prefixHidden [P, Dm],
 * prefixLength s32[] -> [1, Lb]; grouped, prefixHidden [G*P, Dm],
 * prefixLength s32[G], labels s32[G, Lb] -> [G, Lb].
 */
function prefixReadout(f: FunctionBuilder, d: DecoderDims, w: Weights, lmHead: HloValue, prefixHidden: HloValue, prefixLength: HloValue, labels: HloValue): HloValue {
  const groups = prefixLength.rank === 0 ? 1 : prefixLength.dims[0];
  const p = prefixHidden.dims[0] / groups;
  const clamped = f.clamp(0, f.subtract(prefixLength, 1), p - 1);
  const last = groups === 1 ? f.reshape(clamped, [1]) : f.add(f.multiply(f.iota(TensorType.s32([groups]), 0), p), clamped);
  const rows = f.take(prefixHidden, last, 0);
  return lmHeadLabelLogprobs(f, { rows, finalNormWeight: need(w, 'finalNorm'), lmHead, labels }, lmHeadOptions(d));
}

/** Positions P + j of item tokens, per group: prefixLength s32[] (grouped: s32[G], one per group) -> s32[...lead, N x L]. */
function itemPositions(f: FunctionBuilder, prefixLength: HloValue, n: number, l: number): HloValue {
  const lead = prefixLength.dims;
  const grid = [...lead, n, l];
  const j = f.iota(TensorType.s32(grid), lead.length + 1);
  return f.reshape(f.add(j, f.broadcastInDim(prefixLength, grid, lead.map((_, i) => i))), [...lead, n * l]);
}

/**
 * Factored layout in one pass (the packed plan): query tokens s32[P] with
 * prefixLength s32[], items s32[N, L] with itemLengths s32[N], labels s32[Lb]
 * -> prefix_logprobs f32[1, Lb] (at the query's last token), item_logprobs
 * f32[N, Lb] (at each item's last token). With prefixLength 0 the items are
 * independent sequences: the serial plan.
 *
 * With G > 1 groups (cross-request batching), every input gains a leading
 * group axis (queries s32[G, P], prefixLength s32[G], items s32[G, N, L],
 * itemLengths s32[G, N], labels s32[G, Lb]) -> prefix_logprobs f32[G, Lb],
 * item_logprobs f32[G*N, Lb] (row g*N + n). The pass's rows are group after
 * group (pass-rows.ts); the projections and MLP run over all of them at once,
 * attention is batched over groups, so a group is computed as it would be
 * alone (up to f32 rounding: another program).
 */
export function decoderFused(d: DecoderDims, s: FactoredDecoderShape, options: DecoderOptions = {}): HloProgram {
  checkDims(d);
  const { prefix: P, items: N, itemLength: L } = s;
  const G = s.groups ?? 1;
  // One request has no group axis at all: its program is the one it always was.
  const rows = new PassRows(G, P, N, L);
  const lead = rows.lead;
  const suffix = programSuffix(options, { prefix: true, causal: true });
  const name = G === 1 ? `decoder_fused_p${P}_n${N}_l${L}_b${s.labels}${suffix}` : `decoder_fused_g${G}_p${P}_n${N}_l${L}_b${s.labels}${suffix}`;
  return buildProgram(name, (f) => {
    const prefixTokens = f.param(TensorType.s32([...lead, P]), 'prefix_tokens');
    const prefixLength = f.param(TensorType.s32(lead), 'prefix_length');
    const itemTokens = f.param(TensorType.s32([...lead, N, L]), 'item_tokens');
    const itemLengths = f.param(TensorType.s32([...lead, N]), 'item_lengths');
    const labels = f.param(TensorType.s32([...lead, s.labels]), 'labels');
    const w = declareWeights(f, d, options);
    const { numHeads: Hq, numKvHeads: Hkv, headDim: D } = d;
    const positions = rows.join(f, f.iota(TensorType.s32([...lead, P]), lead.length), itemPositions(f, prefixLength, N, L));
    const rope = ropeTables(f, positions, d);
    const tokens = rows.join(f, prefixTokens, f.reshape(itemTokens, [...lead, N * L]));
    const joined = joinedPrefill(options);
    const { hidden } = layerLoop(f, {
      d,
      options,
      w,
      x: embed(f, d, w, tokens),
      rope,
      extraInvariants: [prefixLength, itemLengths],
      extraCarried: [],
      attention: (b, q, k, v, _layer, [plen, ilens], _carried, opts) => {
        if (joined) {
          const out = queryAndItemsAttentionCudnn(b, { q, k, v, rows, prefixLength: plen, itemLengths: ilens }, joined, opts);
          return { out, carried: [] };
        }
        const qP = rows.prefill(b, q);
        const kP = rows.prefill(b, k);
        const vP = rows.prefill(b, v);
        const query = causalPrefix(b, qP, kP, vP, plen, options.causalAttention, opts);
        const itemsOf = (x: HloValue, h: number) => b.reshape(rows.itemRows(b, x), [...lead, N, L, h, D]);
        const items = itemsOverPrefix(
          b,
          { itemQ: itemsOf(q, Hq), itemK: itemsOf(k, Hkv), itemV: itemsOf(v, Hkv), itemLengths: ilens, prefixK: kP, prefixV: vP, prefixLength: plen },
          options.prefixAttention,
          opts,
        );
        return { out: rows.join(b, query, b.reshape(items, [...lead, N * L, Hq, D])), carried: [] };
      },
    });
    const dm = d.hiddenSize;
    const prefixHidden = rows.ungroup(f, rows.prefill(f, hidden));
    const lmHead = lmHeadForDot(f, w);
    const itemHidden = f.reshape(rows.itemRows(f, hidden), [G * N, L, dm]);
    // Each item row reads its own group's labels.
    const itemLabels = G === 1 ? labels : f.reshape(f.broadcastInDim(labels, [G, N, s.labels], [0, 2]), [G * N, s.labels]);
    return {
      prefix_logprobs: prefixReadout(f, d, w, lmHead, prefixHidden, prefixLength, labels),
      item_logprobs: itemReadout(f, d, w, lmHead, itemHidden, flat(f, itemLengths), itemLabels),
    };
  }, options);
}

/**
 * The cuDNN prefix form when it takes the prefill into its call (CudnnAttention.joinPrefill; one
 * query or many): the prefill's form must be cuDNN's too (the stand-in with the stand-in). Otherwise
 * undefined: the two forms run apart.
 */
function joinedPrefill(options: DecoderOptions): CudnnAttention | undefined {
  const a = options.prefixAttention;
  if (a?.kind !== 'cudnn' || !a.joinPrefill) return undefined;
  const c = options.causalAttention;
  if (c?.kind !== 'cudnn' || Boolean(c.standIn) !== Boolean(a.standIn)) {
    throw new HloBuildError(`decoder: the prefix form ${prefixAttentionTag(a)} takes the prefill into its cuDNN call, so the causal form must be ${a.standIn ? 'cudnnsim' : 'cudnn'} too`);
  }
  return a;
}

export interface PrefillShape {
  prefix: number;
  labels: number;
}

/**
 * Prefill: query tokens s32[P], prefixLength s32[], labels s32[Lb] ->
 * k_cache, v_cache f32[layers, P, Hkv, D] and prefix_logprobs f32[1, Lb].
 */
export function decoderPrefill(d: DecoderDims, s: PrefillShape, options: DecoderOptions = {}): HloProgram {
  checkDims(d);
  const P = s.prefix;
  const { numLayers: Ly, numKvHeads: Hkv, headDim: D } = d;
  return buildProgram(`decoder_prefill_p${P}_b${s.labels}${programSuffix(options, { prefix: false, causal: true })}`, (f) => {
    const prefixTokens = f.param(TensorType.s32([P]), 'prefix_tokens');
    const prefixLength = f.param(TensorType.s32([]), 'prefix_length');
    const labels = f.param(TensorType.s32([s.labels]), 'labels');
    const w = declareWeights(f, d, options);
    const rope = ropeTables(f, f.iota(TensorType.s32([P]), 0), d);
    const emptyCache = f.full(TensorType.f32([Ly, P, Hkv, D]), 0);
    const { hidden, carried } = layerLoop(f, {
      d,
      options,
      w,
      x: embed(f, d, w, prefixTokens),
      rope,
      extraInvariants: [prefixLength],
      extraCarried: [emptyCache, emptyCache],
      attention: (b, q, k, v, layer, [plen], [kCache, vCache], opts) => {
        const at = (cache: HloValue, x: HloValue) => b.dynamicUpdateSlice(cache, b.reshape(x, [1, P, Hkv, D]), [layer, 0, 0, 0]);
        return { out: causalPrefix(b, q, k, v, plen, options.causalAttention, opts), carried: [at(kCache, k), at(vCache, v)] };
      },
    });
    return {
      k_cache: carried[0],
      v_cache: carried[1],
      prefix_logprobs: prefixReadout(f, d, w, lmHeadForDot(f, w), hidden, prefixLength, labels),
    };
  }, options);
}

export interface ExtendShape {
  /** Cached prefix bucket P. */
  prefix: number;
  /** Items per chunk C and item length bucket L. */
  items: number;
  itemLength: number;
  labels: number;
}

/**
 * Extend: items s32[C, L] with itemLengths s32[C], against k_cache/v_cache
 * f32[layers, P, Hkv, D] of a prefix of prefixLength s32[] tokens, labels
 * s32[Lb] -> item_logprobs f32[C, Lb].
 */
export function decoderExtend(d: DecoderDims, s: ExtendShape, options: DecoderOptions = {}): HloProgram {
  checkDims(d);
  const { prefix: P, items: C, itemLength: L } = s;
  const { numLayers: Ly, numHeads: Hq, numKvHeads: Hkv, headDim: D } = d;
  return buildProgram(`decoder_extend_p${P}_c${C}_l${L}_b${s.labels}${programSuffix(options, { prefix: true, causal: false })}`, (f) => {
    const itemTokens = f.param(TensorType.s32([C, L]), 'item_tokens');
    const itemLengths = f.param(TensorType.s32([C]), 'item_lengths');
    const prefixLength = f.param(TensorType.s32([]), 'prefix_length');
    const kCache = f.param(TensorType.f32([Ly, P, Hkv, D]), 'k_cache');
    const vCache = f.param(TensorType.f32([Ly, P, Hkv, D]), 'v_cache');
    const labels = f.param(TensorType.s32([s.labels]), 'labels');
    const w = declareWeights(f, d, options);
    const rope = ropeTables(f, itemPositions(f, prefixLength, C, L), d);
    const { hidden } = layerLoop(f, {
      d,
      options,
      w,
      x: embed(f, d, w, f.reshape(itemTokens, [C * L])),
      rope,
      extraInvariants: [prefixLength, itemLengths, kCache, vCache],
      extraCarried: [],
      attention: (b, q, k, v, layer, [plen, ilens, kc, vc], _carried, opts) => {
        const items = itemsOverPrefix(
          b,
          {
            itemQ: b.reshape(q, [C, L, Hq, D]),
            itemK: b.reshape(k, [C, L, Hkv, D]),
            itemV: b.reshape(v, [C, L, Hkv, D]),
            itemLengths: ilens,
            prefixK: layerSlice(b, kc, layer),
            prefixV: layerSlice(b, vc, layer),
            prefixLength: plen,
          },
          options.prefixAttention,
          opts,
        );
        return { out: b.reshape(items, [C * L, Hq, D]), carried: [] };
      },
    });
    const itemHidden = f.reshape(hidden, [C, L, d.hiddenSize]);
    return { item_logprobs: itemReadout(f, d, w, lmHeadForDot(f, w), itemHidden, itemLengths, labels) };
  }, options);
}
