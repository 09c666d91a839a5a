/**
 * POST /v1/rerank and /rerank: the rerank JSON the ecosystem speaks, on the
 * scoring route's steps (score-route.ts). The common shape (Cohere, Jina,
 * vLLM: `query`, `documents` as strings or `{text}`, `top_n`,
 * `return_documents`; `instruction` is ours) answers
 * `{ id, model, results: [{ index, relevance_score, document? }], usage }`;
 * text-embeddings-inference's shape (`texts`, `raw_scores`, `return_text`)
 * answers TEI's bare array `[{ index, score, text? }]`. Both sorted by
 * relevance, best first.
 */
import type { NormalizedRerank } from '../scoring/rerank';
import { rerankResults } from '../scoring/rerank';
import { ErrorShape, HttpError } from './http-errors';
import { checkModelField, ScoringEndpoint } from './score-route';

/** TEI's request shape names its documents `texts`; its errors are TEI's too. */
function isTeiBody(body: unknown): body is { texts: unknown } {
  return body !== null && typeof body === 'object' && !Array.isArray(body) && (body as { texts?: unknown }).texts !== undefined;
}

export interface RerankResponseBody {
  readonly id: string;
  readonly model: string;
  readonly object: 'rerank';
  readonly results: readonly { readonly index: number; readonly relevance_score: number; readonly document?: { readonly text: string } }[];
  readonly usage: { readonly prompt_tokens: number; readonly total_tokens: number };
}

export type TeiRerankResponseBody = readonly { readonly index: number; readonly score: number; readonly text?: string }[];

export const RERANK_ENDPOINT: ScoringEndpoint<NormalizedRerank> = {
  normalize: (backend, body) => {
    checkModelField(body);
    // TEI refuses an empty batch (its ErrorType::Empty) where the common shape answers no results.
    if (isTeiBody(body) && Array.isArray(body.texts) && body.texts.length === 0) {
      throw new HttpError(400, '`texts` cannot be empty', { param: 'texts', teiType: 'empty' });
    }
    const rerank = backend.normalizeRerankBody(body);
    return { request: rerank.score, detail: rerank };
  },
  respond: (outcome, rerank, service, id): RerankResponseBody | TeiRerankResponseBody => {
    const results = rerankResults(rerank, outcome.scores);
    if (rerank.dialect === 'tei') {
      return results.map((r) => ({ index: r.index, score: r.relevanceScore, ...(r.document !== undefined ? { text: r.document } : {}) }));
    }
    return {
      id,
      model: service.backend?.modelName ?? '',
      object: 'rerank',
      results: results.map((r) => ({ index: r.index, relevance_score: r.relevanceScore, ...(r.document !== undefined ? { document: { text: r.document } } : {}) })),
      usage: { prompt_tokens: outcome.promptTokens, total_tokens: outcome.promptTokens },
    };
  },
  floatKeys: new Set(['relevance_score', 'score']),
  errorShape: (body): ErrorShape => (isTeiBody(body) ? 'tei' : 'common'),
};
