/**
 * POST /v2/rerank: Cohere v2's rerank (what `CohereClientV2.rerank` and
 * Python's `client.v2.rerank` send; vLLM and TensorRT-LLM serve it too).
 * Documents are strings; `max_tokens_per_doc` (default 4096, Cohere's)
 * cuts each document to that many tokens, keeping its start. The answer is
 * `{ id, model, results: [{ index, relevance_score, document? }], usage, meta }`
 * with `meta.api_version.version` "2".
 */
import { rerankResults, type NormalizedRerank } from '../../scoring';
import { RERANK_FLOAT_KEYS, RerankMeta, rerankMeta, RerankUsage, rerankUsage } from './rerank';
import { checkModelField, ScoringEndpoint } from './score';

export interface CohereV2RerankResponseBody {
  readonly id: string;
  readonly model: string;
  readonly results: readonly { readonly index: number; readonly relevance_score: number; readonly document?: { readonly text: string } }[];
  readonly usage: RerankUsage;
  readonly meta: RerankMeta;
}

export const COHERE_V2_RERANK_ENDPOINT: ScoringEndpoint<NormalizedRerank> = {
  normalize: async (backend, body) => {
    checkModelField(body);
    const rerank = backend.offLoop ? await backend.offLoop.normalizeRerankBody(body, 'v2') : backend.normalizeRerankBody(body, 'v2');
    return { request: rerank.score, detail: rerank };
  },
  respond: (outcome, rerank, service, id): CohereV2RerankResponseBody => ({
    id,
    model: service.backend?.modelName ?? '',
    results: rerankResults(rerank, outcome.scores).map((r) => ({
      index: r.index,
      relevance_score: r.relevanceScore,
      ...(r.document !== undefined ? { document: { text: r.document } } : {}),
    })),
    usage: rerankUsage(outcome, rerank, true),
    meta: rerankMeta(outcome, rerank, '2'),
  }),
  floatKeys: RERANK_FLOAT_KEYS,
};
