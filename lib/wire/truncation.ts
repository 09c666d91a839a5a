/**
 * The wire formats' own truncation fields, each read into the Scorer's one
 * TruncationSpec (scoring/requests/truncate.ts; docs/rerank.md, "Long documents").
 */
import { describeValue, positiveCount, ScoreInputError, type Keep, type TruncationSpec } from '../scoring';

/**
 * vLLM's truncate_prompt_tokens: k keeps the last k tokens of each sequence (the item's end); -1 the model's context.
 */
export function readTruncatePromptTokens(value: unknown, param: string): TruncationSpec | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === -1) return { keep: 'end', toContext: true };
  return { keep: 'end', toContext: true, maxSequenceTokens: positiveCount(value, param, param) };
}

/** TEI's truncate (bool) and truncation_direction ("right": cut the end, keep the start; "left": keep the end). */
export function readTeiTruncation(truncate: unknown, direction: unknown): TruncationSpec | undefined {
  if (truncate !== undefined && truncate !== null && typeof truncate !== 'boolean') {
    throw new ScoreInputError(`truncate must be a boolean, got ${describeValue(truncate)}`, 'truncate');
  }
  let keep: Keep = 'start';
  if (direction !== undefined && direction !== null) {
    const d = typeof direction === 'string' ? direction.toLowerCase() : '';
    if (d !== 'left' && d !== 'right') {
      throw new ScoreInputError(
        `truncation_direction must be "left" or "right", got ${describeValue(direction)}`,
        'truncation_direction',
      );
    }
    keep = d === 'left' ? 'end' : 'start';
  }
  return truncate === true ? { keep, toContext: true } : undefined;
}

/** Cohere v2's max_tokens_per_doc (default 4096): each document cut to that many tokens, its start kept. */
export function readMaxTokensPerDoc(value: unknown, param: string, fallback: number): TruncationSpec {
  const maxItemTokens = value === undefined || value === null ? fallback : positiveCount(value, param, param);
  return { keep: 'start', toContext: false, maxItemTokens };
}
