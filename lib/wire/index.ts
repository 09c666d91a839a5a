/**
 * lib/wire: the wire formats, each dialect's request reader (a JSON body ->
 * the Scorer's own request types, through `Scorer.normalizeWith`) and
 * response writer (the Scorer's results -> that dialect's JSON), shared by
 * the service (lib/server) and the command line (lib/cli): SGLang's
 * /v1/score (score.ts); the rerank dialects of /v1/rerank and /rerank (the
 * common one: Cohere v1, Jina, vLLM; TEI's; SGLang's) and Cohere v2's
 * /v2/rerank (rerank-request.ts, rerank-response.ts). `pjrt-score run-batch`
 * answers its lines through the service's routes, so through these. The
 * formats' own truncation fields: truncation.ts.
 * docs/design.md, "Rooms" and "The walk of one request".
 * May import: scoring (its index only), util.
 */
export {
  normalizeScoreBody,
  readScoreBody,
  scoreResponseBody,
  SCORE_FLOAT_KEYS,
  type ScoreRequestBody,
  type ScoreResponseBody,
} from './score';
export {
  isTeiRerankBody,
  normalizeRerankBody,
  readRerankBody,
  type RerankRoute,
  type WireRerank,
} from './rerank-request';
export {
  cohereV2RerankResponseBody,
  RERANK_FLOAT_KEYS,
  rerankResponseBody,
  type CohereV2RerankResponseBody,
  type RerankResponseBody,
  type SglangRerankResponseBody,
  type TeiRerankResponseBody,
} from './rerank-response';
