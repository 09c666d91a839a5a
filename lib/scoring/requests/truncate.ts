/**
 * Truncation as a property of a request (docs/rerank.md, "Long documents"):
 * which end of an item is kept, an optional cap on each item's tokens, and
 * whether an item whose sequence (query + item) passes the context is cut to
 * fit. Each API spells it its own way; each spelling is read into one
 * TruncationSpec (the library's and /v1/score's `truncate` here, the other
 * wire formats' in lib/wire/truncation.ts), and request.ts applies it while
 * it tokenizes, so the planner and the queue only ever see sequences that fit.
 */
import { ScoreInputError, describeValue } from './errors';

/** Which end of an item survives a cut. */
export type Keep = 'start' | 'end';

/**
 * The library's `truncate` option (and /v1/score's `truncate` field):
 * `true` keeps each item's start and cuts what passes the context; an
 * object picks the end to keep and may cap every item at `maxItemTokens`
 * (`max_item_tokens` in JSON).
 */
export type TruncateOption = boolean | { readonly keep?: Keep; readonly maxItemTokens?: number };

export interface TruncationSpec {
  readonly keep: Keep;
  /** At most this many tokens of each item (a rerank template's suffix not counted); none when undefined. */
  readonly maxItemTokens?: number;
  /** Cut an item whose sequence passes `maxSequenceTokens` (default: the model's context) to fit. */
  readonly toContext: boolean;
  /** A sequence cap below the model's context (vLLM's truncate_prompt_tokens). */
  readonly maxSequenceTokens?: number;
}

/** What truncation did to one request: token counts before and after, and which items it cut. */
export interface TruncationReport {
  /** The request's tokens (query once plus every item) had nothing been cut. */
  readonly tokensBefore: number;
  /** The tokens it runs: NormalizedRequest.promptTokens. */
  readonly tokensAfter: number;
  /** Indices of the items that were cut, in request order. */
  readonly truncatedItems: readonly number[];
}

/** Reads `truncate` (library camelCase or JSON snake_case); undefined or false: no truncation. */
export function readTruncateOption(value: unknown, param: string): TruncationSpec | undefined {
  if (value === undefined || value === null || value === false) return undefined;
  if (value === true) return { keep: 'start', toContext: true };
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new ScoreInputError(
      `${param} must be a boolean or an object { keep: ` +
        `"start" | "end", max_item_tokens? }, got ${describeValue(value)}`,
      param,
    );
  }
  const raw = value as Record<string, unknown>;
  for (const key of Object.keys(raw)) {
    if (!['keep', 'maxItemTokens', 'max_item_tokens'].includes(key)) {
      throw new ScoreInputError(
        `${param}.${key} is not a truncation field: keep, max_item_tokens (maxItemTokens)`,
        param,
      );
    }
  }
  const keep = raw.keep ?? 'start';
  if (keep !== 'start' && keep !== 'end')
    throw new ScoreInputError(`${param}.keep must be "start" or "end", got ${describeValue(keep)}`, param);
  const cap = raw.maxItemTokens ?? raw.max_item_tokens;
  const maxItemTokens =
    cap === undefined || cap === null ? undefined : positiveCount(cap, `${param}.max_item_tokens`, param);
  return { keep, toContext: true, ...(maxItemTokens !== undefined ? { maxItemTokens } : {}) };
}

/** `tokens` cut to at most `limit`, keeping `keep`'s end; the same array when it fits. */
export function cutTokens(tokens: readonly number[], limit: number, keep: Keep): readonly number[] {
  if (tokens.length <= limit) return tokens;
  return keep === 'start' ? tokens.slice(0, limit) : tokens.slice(tokens.length - limit);
}

/** `value` as a positive integer, else a ScoreInputError naming `where` (`param` the field). */
export function positiveCount(value: unknown, where: string, param: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new ScoreInputError(`${where} must be a positive integer, got ${describeValue(value)}`, param);
  }
  return value;
}
