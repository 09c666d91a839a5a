/**
 * POST /v1/rerank and /rerank: the rerank JSON the ecosystem speaks, on the
 * scoring route's steps (score.ts). The common shape (Cohere v1, Jina,
 * vLLM: `query`, `documents` as strings or objects ranked through
 * `rank_fields`, `top_n`, `return_documents`, `max_chunks_per_doc`,
 * `truncate_prompt_tokens`; `instruction` is ours) answers
 * `{ id, model, object, results: [{ index, relevance_score, document? }], usage, meta }`;
 * text-embeddings-inference's shape (`texts`, `raw_scores`, `return_text`,
 * `truncate`, `truncation_direction`) answers TEI's bare array
 * `[{ index, score, text? }]`; SGLang's own shape (`rid` or `top_k`
 * present: what the SGLang Model Gateway forwards) answers SGLang's bare
 * array `[{ score, document?, index, meta_info }]`. All sorted by relevance,
 * best first.
 * Cohere v2's POST /v2/rerank is rerank-cohere-v2.ts.
 */
import { rerankResults, type NormalizedRerank, type RerankResult, type ScoreResult } from '../../scoring';
import { ErrorShape, HttpError } from '../http/http-errors';
import { checkModelField, ScoringEndpoint } from './score';

export interface RerankUsage {
  readonly prompt_tokens: number;
  readonly total_tokens: number;
  /** Present when truncation was asked for: the tokens had nothing been cut. */
  readonly prompt_tokens_before_truncation?: number;
}

/** Cohere's `meta`, with the token counts; `warnings` name the documents truncation cut. */
export interface RerankMeta {
  readonly api_version: { readonly version: string };
  readonly billed_units: { readonly search_units: number };
  readonly tokens: { readonly input_tokens: number; readonly output_tokens: 0 };
  readonly warnings?: readonly string[];
}

export interface RerankResponseBody {
  readonly id: string;
  readonly model: string;
  readonly object: 'rerank';
  readonly results: readonly { readonly index: number; readonly relevance_score: number; readonly document?: unknown }[];
  readonly usage: RerankUsage;
  readonly meta: RerankMeta;
}

export type TeiRerankResponseBody = readonly { readonly index: number; readonly score: number; readonly text?: string }[];

/** SGLang's RerankResponse list; `meta_info` carries the request's id and prompt tokens (the whole request's). */
export type SglangRerankResponseBody = readonly {
  readonly score: number;
  readonly document?: string;
  readonly index: number;
  readonly meta_info: { readonly id: string; readonly prompt_tokens: number };
}[];

/** Numbers written as floats in every rerank answer. */
export const RERANK_FLOAT_KEYS: ReadonlySet<string> = new Set(['relevance_score', 'score']);

/** TEI's request shape names its documents `texts`; its errors are TEI's too. */
function isTeiBody(body: unknown): body is { texts: unknown } {
  return body !== null && typeof body === 'object' && !Array.isArray(body) && (body as { texts?: unknown }).texts !== undefined;
}

/**
 * The usage; `prompt_tokens_before_truncation` when the request asked for
 * truncation, or with `onlyWhenCut` (Cohere v2, whose max_tokens_per_doc
 * always applies) when a document was cut.
 */
export function rerankUsage(outcome: ScoreResult, rerank: NormalizedRerank, onlyWhenCut = false): RerankUsage {
  const asked = rerank.score.truncation;
  const truncation = onlyWhenCut && asked?.truncatedItems.length === 0 ? undefined : asked;
  return {
    prompt_tokens: outcome.usage.promptTokens,
    total_tokens: outcome.usage.promptTokens,
    ...(truncation ? { prompt_tokens_before_truncation: truncation.tokensBefore } : {}),
  };
}

export function rerankMeta(outcome: ScoreResult, rerank: NormalizedRerank, version: string): RerankMeta {
  const warnings: string[] = [];
  const cut = rerank.score.truncation?.truncatedItems ?? [];
  if (cut.length > 0) warnings.push(`truncated to fit: documents ${cut.join(', ')} (${rerank.score.truncation?.tokensBefore} tokens before, ${outcome.usage.promptTokens} after)`);
  if (rerank.chunkedDocuments.length > 0) warnings.push(`split into chunks (max_chunks_per_doc), scored by the best chunk: documents ${rerank.chunkedDocuments.join(', ')}`);
  return {
    api_version: { version },
    billed_units: { search_units: 1 },
    tokens: { input_tokens: outcome.usage.promptTokens, output_tokens: 0 },
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}

/** A result's `document`: `{ text }` for a string document, the caller's whole object otherwise. */
export function resultDocument(result: RerankResult): unknown {
  if (result.original !== undefined && typeof result.original === 'object' && result.original !== null) return result.original;
  return { text: result.document };
}

export const RERANK_ENDPOINT: ScoringEndpoint<NormalizedRerank> = {
  normalize: async (backend, body) => {
    checkModelField(body);
    // TEI refuses an empty batch (its ErrorType::Empty) where the common shape answers no results.
    if (isTeiBody(body) && Array.isArray(body.texts) && body.texts.length === 0) {
      throw new HttpError(400, '`texts` cannot be empty', { param: 'texts', teiType: 'empty' });
    }
    const rerank = backend.offLoop ? await backend.offLoop.normalizeRerankBody(body, 'v1') : backend.normalizeRerankBody(body, 'v1');
    return { request: rerank.score, detail: rerank };
  },
  respond: (outcome, rerank, service, id): RerankResponseBody | TeiRerankResponseBody | SglangRerankResponseBody => {
    const results = rerankResults(rerank, outcome.scores);
    if (rerank.dialect === 'sglang') {
      const meta_info = { id, prompt_tokens: outcome.usage.promptTokens };
      return results.map((r) => ({ score: r.relevanceScore, ...(r.document !== undefined ? { document: r.document } : {}), index: r.index, meta_info }));
    }
    if (rerank.dialect === 'tei') {
      return results.map((r) => ({ index: r.index, score: r.relevanceScore, ...(r.document !== undefined ? { text: r.document } : {}) }));
    }
    return {
      id,
      model: service.backend?.modelName ?? '',
      object: 'rerank',
      results: results.map((r) => ({ index: r.index, relevance_score: r.relevanceScore, ...(r.document !== undefined ? { document: resultDocument(r) } : {}) })),
      usage: rerankUsage(outcome, rerank),
      meta: rerankMeta(outcome, rerank, '1'),
    };
  },
  floatKeys: RERANK_FLOAT_KEYS,
  errorShape: (body): ErrorShape => (isTeiBody(body) ? 'tei' : 'common'),
};
