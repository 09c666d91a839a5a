/**
 * lib/scoring/requests: what a caller sends, checked and turned into token
 * space, and what it gets back. A score request (request.ts, its fields:
 * request-fields.ts) or a rerank request (rerank.ts, through a template:
 * rerank-template.ts) becomes a NormalizedRequest; truncation (truncate.ts)
 * cuts what does not fit; label logprobs become scores (scores.ts); bad input
 * is a ScoreInputError (errors.ts).
 * May import: no sibling.
 */
export { AbortError, QueueFullError, ScoreInputError, describeValue, throwIfAborted } from './errors';
export { normalizeRequest, normalizeScoreFields, type NormalizedRequest, type ScoreFields, type ScoreRequest, type ScoreRequestContext } from './request';
export type { FieldNames } from './request-fields';
export {
  asObject,
  normalizeRerank,
  normalizeRerankFields,
  rerankResults,
  type NormalizedRerank,
  type RerankFields,
  type RerankNames,
  type RerankRequest,
  type RerankSpelling,
} from './rerank';
export { chooseTemplate, RERANK_TEMPLATES, rerankerAdvice, resolveTemplate, SUGGESTED_RERANKER, TemplateError, type RerankTemplate, type ResolvedTemplate } from './rerank-template';
export { scoresFromLabelLogprobs } from './scores';
export { cutTokens, positiveCount, readTruncateOption } from './truncate';
export { INLINE_TOKENIZE_CHARS, normalizeOffLoop } from './off-loop';
export { charsFor, checkTextBound } from './text-bound';
