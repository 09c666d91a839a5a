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
import { rerankResults, type NormalizedRerank } from '../scoring';
import { checkModelField, ScoringEndpoint } from './score-route';

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
      usage: { prompt_tokens: outcome.usage.promptTokens, total_tokens: outcome.usage.promptTokens },
    };
  },
};
