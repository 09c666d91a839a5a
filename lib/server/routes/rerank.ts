/**
 * POST /v1/rerank and /rerank (the common shape, TEI's or SGLang's) and
 * POST /v2/rerank (Cohere v2's: what `CohereClientV2.rerank` and Python's
 * `client.v2.rerank` send; vLLM and TensorRT-LLM serve it too), on the
 * scoring route's steps (score.ts). Each dialect's request reader and
 * answer are lib/wire's (rerank-request.ts, rerank-response.ts).
 */
import {
  cohereV2RerankResponseBody,
  isTeiRerankBody,
  readRerankBody,
  RERANK_FLOAT_KEYS,
  rerankResponseBody,
  type CohereV2RerankResponseBody,
  type RerankResponseBody,
  type RerankRoute,
  type SglangRerankResponseBody,
  type TeiRerankResponseBody,
  type WireRerank,
} from '../../wire';
import type { ScoringBackend } from '../lifecycle/scorer-backend';
import { ErrorShape, HttpError } from '../http/http-errors';
import { checkModelField, ScoringEndpoint } from './score';

/** Reads a rerank body on its route, long texts off the event loop. */
async function normalizeRerank(
  backend: ScoringBackend,
  body: unknown,
  route: RerankRoute,
): Promise<{ readonly request: WireRerank['score']; readonly detail: WireRerank }> {
  const read = readRerankBody(body, route);
  const rerank = backend.offLoop ? await backend.offLoop.normalizeWith(read) : backend.normalizeWith(read);
  return { request: rerank.score, detail: rerank };
}

export const RERANK_ENDPOINT: ScoringEndpoint<WireRerank> = {
  normalize: async (backend, body) => {
    checkModelField(body);
    // TEI refuses an empty batch (its ErrorType::Empty) where the common shape answers no results.
    if (isTeiRerankBody(body) && Array.isArray(body.texts) && body.texts.length === 0) {
      throw new HttpError(400, '`texts` cannot be empty', { param: 'texts', teiType: 'empty' });
    }
    return normalizeRerank(backend, body, 'v1');
  },
  respond: (outcome, rerank, service, id): RerankResponseBody | TeiRerankResponseBody | SglangRerankResponseBody =>
    rerankResponseBody(outcome, rerank, service.backend?.modelName ?? '', id),
  floatKeys: RERANK_FLOAT_KEYS,
  errorShape: (body): ErrorShape => (isTeiRerankBody(body) ? 'tei' : 'common'),
};

export const COHERE_V2_RERANK_ENDPOINT: ScoringEndpoint<WireRerank> = {
  normalize: async (backend, body) => {
    checkModelField(body);
    return normalizeRerank(backend, body, 'v2');
  },
  respond: (outcome, rerank, service, id): CohereV2RerankResponseBody =>
    cohereV2RerankResponseBody(outcome, rerank, service.backend?.modelName ?? '', id),
  floatKeys: RERANK_FLOAT_KEYS,
};
