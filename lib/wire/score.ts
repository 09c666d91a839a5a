/**
 * SGLang's Score API (POST /v1/score, `pjrt-score score`): its JSON body
 * (snake_case) read into the Scorer's request, and its ScoringResponse
 * written from the Scorer's result. docs/service.md, "Score semantics".
 */
import {
  asObject,
  normalizeScoreFields,
  readTruncateOption,
  ScoreInputError,
  type FieldNames,
  type NormalizedRequest,
  type RequestReader,
  type ScoreRequestContext,
  type ScoreResult,
} from '../scoring';
import { readTruncatePromptTokens } from './truncation';

/** The Score API's JSON body (SGLang spelling); other fields (model, ...) are ignored here. */
export interface ScoreRequestBody {
  query: string | number[];
  items: string | string[] | number[][];
  label_token_ids: number[];
  apply_softmax?: boolean;
  item_first?: boolean;
  /** Ours: true, or { keep: "start" | "end", max_item_tokens? }. */
  truncate?: boolean | { keep?: 'start' | 'end'; max_item_tokens?: number };
  /** vLLM's: keep the last k tokens of each sequence (cut from the item's start); -1: the model's context. */
  truncate_prompt_tokens?: number;
  [other: string]: unknown;
}

export interface ScoreResponseBody {
  readonly scores: number[][];
  readonly model: string;
  readonly object: 'scoring';
  readonly usage: {
    readonly prompt_tokens: number;
    readonly completion_tokens: 0;
    readonly total_tokens: number;
    /**
     * Present when the request asked for truncation (`truncate`, `truncate_prompt_tokens`): the tokens had nothing been
     * cut.
     */
    readonly prompt_tokens_before_truncation?: number;
  };
}

/** Numbers written as floats in the answer (1 is written 1.0). */
export const SCORE_FLOAT_KEYS: ReadonlySet<string> = new Set(['scores']);

const BODY_NAMES: FieldNames = {
  request: 'body',
  query: 'query',
  items: 'items',
  labels: 'label_token_ids',
  applySoftmax: 'apply_softmax',
  itemFirst: 'item_first',
  truncate: 'truncate (or truncate_prompt_tokens)',
};

/** Validates a Score API JSON body into token space. Throws ScoreInputError on bad input. */
export function normalizeScoreBody(body: unknown, ctx: ScoreRequestContext): NormalizedRequest {
  const raw = asObject(body, BODY_NAMES.request);
  const truncation = readTruncateOption(raw.truncate, 'truncate');
  const promptCap = readTruncatePromptTokens(raw.truncate_prompt_tokens, 'truncate_prompt_tokens');
  if (truncation && promptCap)
    throw new ScoreInputError('give truncate or truncate_prompt_tokens, not both', 'truncate_prompt_tokens');
  const spec = truncation ?? promptCap;
  const fields = {
    query: raw.query,
    items: raw.items,
    labels: raw.label_token_ids,
    applySoftmax: raw.apply_softmax,
    itemFirst: raw.item_first,
  };
  return normalizeScoreFields({ ...fields, ...(spec ? { truncation: spec } : {}) }, BODY_NAMES, ctx);
}

/** The body's reader for `Scorer.normalizeWith` (or its offLoop's). */
export function readScoreBody(body: unknown): RequestReader<NormalizedRequest> {
  return (source) => normalizeScoreBody(body, source.context);
}

/** The 200 answer: the scores, and the usage with the tokens before truncation when the request asked for it. */
export function scoreResponseBody(
  outcome: ScoreResult,
  request: Pick<NormalizedRequest, 'truncation'>,
  model: string,
): ScoreResponseBody {
  const truncation = request.truncation;
  return {
    scores: outcome.scores,
    model,
    object: 'scoring',
    usage: {
      prompt_tokens: outcome.usage.promptTokens,
      completion_tokens: 0,
      total_tokens: outcome.usage.promptTokens,
      ...(truncation ? { prompt_tokens_before_truncation: truncation.tokensBefore } : {}),
    },
  };
}
