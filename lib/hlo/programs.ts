/**
 * The two named programs of docs/design.md "The programs", ready to compile and run alone.
 */

import { AttentionOptions, maskedAttentionDense, maskedAttentionFactored } from './attention';
import { lmHeadGather as buildLmHeadGather } from './nn';
import { HloBuildError, HloProgram, TensorType, buildProgram } from './builder';

interface AttentionHeads extends AttentionOptions {
  queryHeads: number;
  kvHeads: number;
  headDim: number;
}

export interface DenseAttentionDims extends AttentionHeads {
  layout: 'dense';
  /** Packed sequence length T (query + items + padding). */
  tokens: number;
}

export interface FactoredAttentionDims extends AttentionHeads {
  layout: 'factored';
  /** Query bucket P. */
  queryTokens: number;
  /** Item count bucket N. */
  itemCount: number;
  /** Item length bucket L. */
  itemTokens: number;
}

export type MaskedAttentionDims = DenseAttentionDims | FactoredAttentionDims;

export interface LmHeadGatherDims {
  /** Hidden rows T. */
  tokens: number;
  /** Model width Dm. */
  hiddenSize: number;
  /** Gathered rows K. */
  gatherCount: number;
  /** Vocabulary V. */
  vocabSize: number;
  /** Labels Lb. */
  labelCount: number;
  /** RMSNorm epsilon. */
  eps: number;
}

function checkDims(op: string, dims: object, keys: readonly string[]): void {
  for (const key of keys) {
    const v = (dims as Record<string, unknown>)[key];
    if (!Number.isSafeInteger(v) || (v as number) < 0)
      throw new HloBuildError(`${op}: ${key} must be a non-negative integer, got ${String(v)}`);
  }
}

/**
 * Masked attention. Dense inputs: q, k, v, segmentIds; output: out.
 * Factored inputs: queryQ, queryK, queryV, queryLength, itemQ, itemK, itemV,
 * itemLengths; outputs: queryOut, itemOut.
 */
function maskedAttention(dims: MaskedAttentionDims): HloProgram {
  if (!dims || (dims.layout !== 'dense' && dims.layout !== 'factored')) {
    throw new HloBuildError(
      `maskedAttention: layout must be 'dense' or 'factored', ` +
        `got ${JSON.stringify((dims as { layout?: unknown } | undefined)?.layout)}`,
    );
  }
  checkDims('maskedAttention', dims, ['queryHeads', 'kvHeads', 'headDim']);
  const { queryHeads: hq, kvHeads: hkv, headDim: d } = dims;
  const opts = { scale: dims.scale };
  if (dims.layout === 'dense') {
    checkDims('maskedAttention', dims, ['tokens']);
    const t = dims.tokens;
    return buildProgram('masked_attention_dense', (f) => {
      const q = f.param(TensorType.f32([t, hq, d]), 'q');
      const k = f.param(TensorType.f32([t, hkv, d]), 'k');
      const v = f.param(TensorType.f32([t, hkv, d]), 'v');
      const segmentIds = f.param(TensorType.s32([t]), 'segmentIds');
      return { out: maskedAttentionDense(f, q, k, v, segmentIds, opts) };
    });
  }
  checkDims('maskedAttention', dims, ['queryTokens', 'itemCount', 'itemTokens']);
  const { queryTokens: p, itemCount: n, itemTokens: l } = dims;
  return buildProgram('masked_attention_factored', (f) => {
    const x = {
      queryQ: f.param(TensorType.f32([p, hq, d]), 'queryQ'),
      queryK: f.param(TensorType.f32([p, hkv, d]), 'queryK'),
      queryV: f.param(TensorType.f32([p, hkv, d]), 'queryV'),
      queryLength: f.param(TensorType.s32([]), 'queryLength'),
      itemQ: f.param(TensorType.f32([n, l, hq, d]), 'itemQ'),
      itemK: f.param(TensorType.f32([n, l, hkv, d]), 'itemK'),
      itemV: f.param(TensorType.f32([n, l, hkv, d]), 'itemV'),
      itemLengths: f.param(TensorType.s32([n]), 'itemLengths'),
    };
    const { query, items } = maskedAttentionFactored(f, x, opts);
    return { queryOut: query, itemOut: items };
  });
}

/**
 * LM-head gather. Inputs: hidden [T, Dm], gatherIndices s32 [K],
 * finalNormWeight [Dm], lmHead [V, Dm], labels s32 [Lb];
 * output: labelLogprobs [K, Lb].
 */
function lmHeadGather(dims: LmHeadGatherDims): HloProgram {
  checkDims('lmHeadGather', dims, ['tokens', 'hiddenSize', 'gatherCount', 'vocabSize', 'labelCount']);
  const { tokens: t, hiddenSize: dm, gatherCount: k, vocabSize: v, labelCount: lb, eps } = dims;
  if (typeof eps !== 'number' || !(eps >= 0))
    throw new HloBuildError(`lmHeadGather: eps must be a non-negative number, got ${String(eps)}`);
  return buildProgram('lm_head_gather', (f) => {
    const x = {
      hidden: f.param(TensorType.f32([t, dm]), 'hidden'),
      gatherIndices: f.param(TensorType.s32([k]), 'gatherIndices'),
      finalNormWeight: f.param(TensorType.f32([dm]), 'finalNormWeight'),
      lmHead: f.param(TensorType.f32([v, dm]), 'lmHead'),
      labels: f.param(TensorType.s32([lb]), 'labels'),
    };
    return { labelLogprobs: buildLmHeadGather(f, x, { eps }) };
  });
}

export const programs = { maskedAttention, lmHeadGather };
