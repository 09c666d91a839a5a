/**
 * lib/scoring/requests: what a caller sends, checked and turned into token
 * space, and what it gets back. A score request (request.ts, its fields:
 * request-fields.ts) or a rerank request (rerank.ts, through a template:
 * rerank-template.ts) becomes a NormalizedRequest; truncation (truncate.ts)
 * cuts what does not fit; label logprobs become scores (scores.ts); bad input
 * is a ScoreInputError (errors.ts).
 * May import: no sibling.
 */
export { AbortError, QueueFullError, ScoreInputError } from './errors';
export { normalizeRequest, type NormalizedRequest } from './request';
export { rerankResults } from './rerank-results';
export { chooseTemplate, resolveTemplate, TemplateError } from './rerank-template';
export { scoresFromLabelLogprobs } from './scores';
export { INLINE_TOKENIZE_CHARS } from './off-loop';
