/**
 * The rerank dialects' answers, sorted by relevance, best first:
 *   common     `{ id, model, object, results: [{ index, relevance_score, document? }], usage, meta }`
 *   tei        TEI's bare array `[{ index, score, text? }]`
 *   sglang     SGLang's bare array `[{ score, document?, index, meta_info }]`
 *   cohere-v2  `{ id, model, results: [{ index, relevance_score, document? }], usage, meta }`,
 *              `meta.api_version.version` "2"
 */
import { rerankResults, type RerankResult, type ScoreResult } from '../scoring';
import type { WireRerank } from './rerank-request';

interface RerankUsage {
  readonly prompt_tokens: number;
  readonly total_tokens: number;
  /** Present when truncation was asked for: the tokens had nothing been cut. */
  readonly prompt_tokens_before_truncation?: number;
}

/** Cohere's `meta`, with the token counts; `warnings` name the documents truncation cut. */
interface RerankMeta {
  readonly api_version: { readonly version: string };
  readonly billed_units: { readonly search_units: number };
  readonly tokens: { readonly input_tokens: number; readonly output_tokens: 0 };
  readonly warnings?: readonly string[];
}

export interface RerankResponseBody {
  readonly id: string;
  readonly model: string;
  readonly object: 'rerank';
  readonly results: readonly {
    readonly index: number;
    readonly relevance_score: number;
    readonly document?: unknown;
  }[];
  readonly usage: RerankUsage;
  readonly meta: RerankMeta;
}

export type TeiRerankResponseBody = readonly {
  readonly index: number;
  readonly score: number;
  readonly text?: string;
}[];

/** SGLang's RerankResponse list; `meta_info` carries the request's id and prompt tokens (the whole request's). */
export type SglangRerankResponseBody = readonly {
  readonly score: number;
  readonly document?: string;
  readonly index: number;
  readonly meta_info: { readonly id: string; readonly prompt_tokens: number };
}[];

export interface CohereV2RerankResponseBody {
  readonly id: string;
  readonly model: string;
  readonly results: readonly {
    readonly index: number;
    readonly relevance_score: number;
    readonly document?: { readonly text: string };
  }[];
  readonly usage: RerankUsage;
  readonly meta: RerankMeta;
}

/** Numbers written as floats in every rerank answer. */
export const RERANK_FLOAT_KEYS: ReadonlySet<string> = new Set(['relevance_score', 'score']);

/**
 * The usage; `prompt_tokens_before_truncation` when the request asked for
 * truncation, or with `onlyWhenCut` (Cohere v2, whose max_tokens_per_doc
 * always applies) when a document was cut.
 */
function rerankUsage(outcome: ScoreResult, rerank: WireRerank, onlyWhenCut = false): RerankUsage {
  const asked = rerank.score.truncation;
  const truncation = onlyWhenCut && asked?.truncatedItems.length === 0 ? undefined : asked;
  return {
    prompt_tokens: outcome.usage.promptTokens,
    total_tokens: outcome.usage.promptTokens,
    ...(truncation ? { prompt_tokens_before_truncation: truncation.tokensBefore } : {}),
  };
}

function rerankMeta(outcome: ScoreResult, rerank: WireRerank, version: string): RerankMeta {
  const warnings: string[] = [];
  const cut = rerank.score.truncation?.truncatedItems ?? [];
  if (cut.length > 0)
    warnings.push(
      `truncated to fit: documents ${cut.join(', ')} (${rerank.score.truncation?.tokensBefore} tokens before, ` +
        `${outcome.usage.promptTokens} after)`,
    );
  if (rerank.chunkedDocuments.length > 0)
    warnings.push(
      `split into chunks (max_chunks_per_doc), scored by the best chunk: ` +
        `documents ${rerank.chunkedDocuments.join(', ')}`,
    );
  return {
    api_version: { version },
    billed_units: { search_units: 1 },
    tokens: { input_tokens: outcome.usage.promptTokens, output_tokens: 0 },
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}

/** A result's `document`: `{ text }` for a string document, the caller's whole object otherwise. */
function resultDocument(result: RerankResult): unknown {
  if (result.original !== undefined && typeof result.original === 'object' && result.original !== null)
    return result.original;
  return { text: result.document };
}

/** The answer of /v1/rerank and /rerank in the request's dialect (common, TEI's or SGLang's); `id` the request's. */
export function rerankResponseBody(
  outcome: ScoreResult,
  rerank: WireRerank,
  model: string,
  id: string,
): RerankResponseBody | TeiRerankResponseBody | SglangRerankResponseBody {
  const results = rerankResults(rerank, outcome.scores);
  if (rerank.dialect === 'sglang') {
    const meta_info = { id, prompt_tokens: outcome.usage.promptTokens };
    return results.map((r) => ({
      score: r.relevanceScore,
      ...(r.document !== undefined ? { document: r.document } : {}),
      index: r.index,
      meta_info,
    }));
  }
  if (rerank.dialect === 'tei') {
    return results.map((r) => ({
      index: r.index,
      score: r.relevanceScore,
      ...(r.document !== undefined ? { text: r.document } : {}),
    }));
  }
  return {
    id,
    model,
    object: 'rerank',
    results: results.map((r) => ({
      index: r.index,
      relevance_score: r.relevanceScore,
      ...(r.document !== undefined ? { document: resultDocument(r) } : {}),
    })),
    usage: rerankUsage(outcome, rerank),
    meta: rerankMeta(outcome, rerank, '1'),
  };
}

/** The answer of /v2/rerank (Cohere v2). */
export function cohereV2RerankResponseBody(
  outcome: ScoreResult,
  rerank: WireRerank,
  model: string,
  id: string,
): CohereV2RerankResponseBody {
  return {
    id,
    model,
    results: rerankResults(rerank, outcome.scores).map((r) => ({
      index: r.index,
      relevance_score: r.relevanceScore,
      ...(r.document !== undefined ? { document: { text: r.document } } : {}),
    })),
    usage: rerankUsage(outcome, rerank, true),
    meta: rerankMeta(outcome, rerank, '2'),
  };
}
