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
 * which architecture) is declared once in layout.ts; the layers are in
 * layers.ts, the readouts in readout.ts, the options in options.ts.
 *
 * Gemma (DecoderDims.gemma, gemma.ts) adds an embedding scale, norms
 * after attention and after the MLP, GeGLU, its score scale and soft caps,
 * and per-layer sliding windows with a RoPE base of their own: programs of
 * the other families are the ones they always were.
 *
 * Weights in bf16 or int8 (DecoderOptions.weights) are converted to f32
 * right before their dot, one layer's slice at a time: XLA CPU runs bf16
 * dots very slowly, so every matmul is f32 and accumulates in f32. Two
 * exceptions for the GPU, both platform facts (lib/scoring/platform/profiles.ts):
 * bf16 matrices typed bf16 on the device go into bf16 dots as they are
 * (DecoderOptions.bf16Matrices), and under bf16 dots the q|k|v and gate|up
 * projections may return bf16 products (DecoderOptions.bf16Products).
 */
import { HloValue } from '../builder/core';
import { buildProgram, HloProgram } from '../builder/program';
import {
  CudnnAttention,
  PassRows,
  causalPrefix,
  checkCausalAttention,
  checkPrefixAttention,
  itemsOverPrefix,
  prefixAttentionTag,
  queryAndItemsAttentionCudnn,
  queryAndItemsAttentionKernel,
  queryAndItemsAttentionOnProjection,
} from '../attention';
import { HloBuildError, TensorType } from '../builder/types';
import { DecoderDims } from './layout';
import { DecoderOptions, programSuffix } from './options';
import { checkDims, declareWeights, embed, layerLoop, layerSlice, ropeTables } from './layers';
import { lmHeadForDot } from './projections';
import { flat, itemPositions, itemReadout, liveRows, passReadouts, prefixReadout } from './readout';

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

/**
 * Factored layout in one pass (the packed plan): query tokens s32[P] with
 * prefixLength s32[], items s32[N, L] with itemLengths s32[N], labels s32[Lb]
 * -> prefix_logprobs f32[1, Lb] (at the query's last token), item_logprobs
 * f32[N, Lb] (at each item's last token). Under options.normalizeInput every
 * program takes `normalize` s32[] after its labels: 1 or 0, whether its
 * readouts are log-probabilities or label logits, for passes whose requests
 * all take a softmax over their labels (lib/hlo/nn/lm-head.ts: no
 * full-vocabulary product). With prefixLength 0 the items are
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
  const name =
    G === 1
      ? `decoder_fused_p${P}_n${N}_l${L}_b${s.labels}${suffix}`
      : `decoder_fused_g${G}_p${P}_n${N}_l${L}_b${s.labels}${suffix}`;
  return buildProgram(
    name,
    (f) => {
      const prefixTokens = f.param(TensorType.s32([...lead, P]), 'prefix_tokens');
      const prefixLength = f.param(TensorType.s32(lead), 'prefix_length');
      const itemTokens = f.param(TensorType.s32([...lead, N, L]), 'item_tokens');
      const itemLengths = f.param(TensorType.s32([...lead, N]), 'item_lengths');
      const labels = f.param(TensorType.s32([...lead, s.labels]), 'labels');
      const normalize = options.normalizeInput ? f.param(TensorType.s32([]), 'normalize') : undefined;
      const w = declareWeights(f, d, options);
      const { numHeads: Hq, numKvHeads: Hkv, headDim: D } = d;
      const positions = rows.join(
        f,
        f.iota(TensorType.s32([...lead, P]), lead.length),
        itemPositions(f, prefixLength, N, L),
      );
      const rope = ropeTables(f, positions, d);
      const tokens = rows.join(f, prefixTokens, f.reshape(itemTokens, [...lead, N * L]));
      const joined = joinedPrefill(options);
      // Both attention forms the kernel: one call a layer, on the q | k | v projection itself (RoPE in
      // the call), its tables split once into the query's rows and the items'.
      const oneCall = bothKernels(options) && G === 1;
      const half = D / 2;
      const ropeParts =
        oneCall && !rope.local
          ? [
              rows.prefill(f, rope.cos),
              rows.prefill(f, rope.sin),
              f.reshape(rows.itemRows(f, rope.cos), [N, L, half]),
              f.reshape(rows.itemRows(f, rope.sin), [N, L, half]),
            ]
          : [];
      const { hidden } = layerLoop(f, {
        d,
        options,
        w,
        x: embed(f, d, w, tokens),
        rope,
        liveRows: rows.join(f, liveRows(f, prefixLength, P), f.reshape(liveRows(f, itemLengths, L), [...lead, N * L])),
        extraInvariants: [prefixLength, itemLengths, ...ropeParts],
        extraCarried: [],
        attentionOnProjection: ropeParts.length
          ? (b, qkv, [plen, ilens, queryCos, querySin, itemCos, itemSin], opts) =>
              queryAndItemsAttentionOnProjection(
                b,
                {
                  qkv,
                  heads: { hq: Hq, hkv: Hkv, d: D },
                  queryCos,
                  querySin,
                  itemCos,
                  itemSin,
                  prefixLength: plen,
                  itemLengths: ilens,
                },
                opts,
              )
          : undefined,
        attention: (b, q, k, v, _layer, [plen, ilens], _carried, opts) => {
          if (joined) {
            const out = queryAndItemsAttentionCudnn(
              b,
              { q, k, v, rows, prefixLength: plen, itemLengths: ilens },
              joined,
              opts,
            );
            return { out, carried: [] };
          }
          const qP = rows.prefill(b, q);
          const kP = rows.prefill(b, k);
          const vP = rows.prefill(b, v);
          const itemsOf = (x: HloValue, h: number) => b.reshape(rows.itemRows(b, x), [...lead, N, L, h, D]);
          if (oneCall) {
            const out = queryAndItemsAttentionKernel(
              b,
              {
                q: qP,
                k: kP,
                v: vP,
                prefixLength: plen,
                itemQ: itemsOf(q, Hq),
                itemK: itemsOf(k, Hkv),
                itemV: itemsOf(v, Hkv),
                itemLengths: ilens,
              },
              opts,
            );
            return { out, carried: [] };
          }
          const query = causalPrefix(b, qP, kP, vP, plen, options.causalAttention, opts);
          const items = itemsOverPrefix(
            b,
            {
              itemQ: itemsOf(q, Hq),
              itemK: itemsOf(k, Hkv),
              itemV: itemsOf(v, Hkv),
              itemLengths: ilens,
              prefixK: kP,
              prefixV: vP,
              prefixLength: plen,
            },
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
      const itemLabels =
        G === 1 ? labels : f.reshape(f.broadcastInDim(labels, [G, N, s.labels], [0, 2]), [G * N, s.labels]);
      const out = passReadouts(
        f,
        d,
        w,
        lmHead,
        { hidden: prefixHidden, length: prefixLength, labels },
        { hidden: itemHidden, lengths: flat(f, itemLengths), labels: itemLabels },
        normalize,
      );
      return { prefix_logprobs: out.prefix, item_logprobs: out.items };
    },
    options,
  );
}

/** Both of a packed pass's attention forms are the addon's kernels: one call does both (query-items-kernel.ts). */
function bothKernels(options: DecoderOptions): boolean {
  return (
    options.causalAttention !== undefined &&
    options.prefixAttention !== undefined &&
    checkCausalAttention(options.causalAttention).kind === 'kernel' &&
    checkPrefixAttention(options.prefixAttention).kind === 'kernel'
  );
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
    throw new HloBuildError(
      `decoder: the prefix form ${prefixAttentionTag(a)} takes the prefill into its cuDNN call, ` +
        `so the causal form must be ${a.standIn ? 'cudnnsim' : 'cudnn'} too`,
    );
  }
  return a;
}

export interface PrefillShape {
  prefix: number;
  labels: number;
}

/**
 * Prefill: query tokens s32[P], prefixLength s32[], labels s32[Lb] (normalize s32[]) ->
 * k_cache, v_cache f32[layers, P, Hkv, D] and prefix_logprobs f32[1, Lb].
 */
export function decoderPrefill(d: DecoderDims, s: PrefillShape, options: DecoderOptions = {}): HloProgram {
  checkDims(d);
  const P = s.prefix;
  const { numLayers: Ly, numKvHeads: Hkv, headDim: D } = d;
  return buildProgram(
    `decoder_prefill_p${P}_b${s.labels}${programSuffix(options, { prefix: false, causal: true })}`,
    (f) => {
      const prefixTokens = f.param(TensorType.s32([P]), 'prefix_tokens');
      const prefixLength = f.param(TensorType.s32([]), 'prefix_length');
      const labels = f.param(TensorType.s32([s.labels]), 'labels');
      const normalize = options.normalizeInput ? f.param(TensorType.s32([]), 'normalize') : undefined;
      const w = declareWeights(f, d, options);
      const rope = ropeTables(f, f.iota(TensorType.s32([P]), 0), d);
      const emptyCache = f.full(TensorType.f32([Ly, P, Hkv, D]), 0);
      const { hidden, carried } = layerLoop(f, {
        d,
        options,
        w,
        x: embed(f, d, w, prefixTokens),
        rope,
        liveRows: liveRows(f, prefixLength, P),
        extraInvariants: [prefixLength],
        extraCarried: [emptyCache, emptyCache],
        attention: (b, q, k, v, layer, [plen], [kCache, vCache], opts) => {
          const at = (cache: HloValue, x: HloValue) =>
            b.dynamicUpdateSlice(cache, b.reshape(x, [1, P, Hkv, D]), [layer, 0, 0, 0]);
          return {
            out: causalPrefix(b, q, k, v, plen, options.causalAttention, opts),
            carried: [at(kCache, k), at(vCache, v)],
          };
        },
      });
      return {
        k_cache: carried[0],
        v_cache: carried[1],
        prefix_logprobs: prefixReadout(f, d, w, lmHeadForDot(f, w), hidden, prefixLength, labels, normalize),
      };
    },
    options,
  );
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
 * s32[Lb] (normalize s32[]) -> item_logprobs f32[C, Lb].
 */
export function decoderExtend(d: DecoderDims, s: ExtendShape, options: DecoderOptions = {}): HloProgram {
  checkDims(d);
  const { prefix: P, items: C, itemLength: L } = s;
  const { numLayers: Ly, numHeads: Hq, numKvHeads: Hkv, headDim: D } = d;
  return buildProgram(
    `decoder_extend_p${P}_c${C}_l${L}_b${s.labels}${programSuffix(options, { prefix: true, causal: false })}`,
    (f) => {
      const itemTokens = f.param(TensorType.s32([C, L]), 'item_tokens');
      const itemLengths = f.param(TensorType.s32([C]), 'item_lengths');
      const prefixLength = f.param(TensorType.s32([]), 'prefix_length');
      const kCache = f.param(TensorType.f32([Ly, P, Hkv, D]), 'k_cache');
      const vCache = f.param(TensorType.f32([Ly, P, Hkv, D]), 'v_cache');
      const labels = f.param(TensorType.s32([s.labels]), 'labels');
      const normalize = options.normalizeInput ? f.param(TensorType.s32([]), 'normalize') : undefined;
      const w = declareWeights(f, d, options);
      const rope = ropeTables(f, itemPositions(f, prefixLength, C, L), d);
      const { hidden } = layerLoop(f, {
        d,
        options,
        w,
        x: embed(f, d, w, f.reshape(itemTokens, [C * L])),
        rope,
        liveRows: f.reshape(liveRows(f, itemLengths, L), [C * L]),
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
      return { item_logprobs: itemReadout(f, d, w, lmHeadForDot(f, w), itemHidden, itemLengths, labels, normalize) };
    },
    options,
  );
}
