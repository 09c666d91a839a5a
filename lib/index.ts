/**
 * pjrt-score: score many items against one query with a language model in
 * one forward pass, on XLA through a PJRT plugin.
 *
 * This is the public API, chosen name by name (test/public-api.test.js holds
 * the list, docs/scorer-api.md "What `require('pjrt-score')` gives" documents it): the Scorer, the runtime Client
 * and its objects, the named StableHLO programs, the errors those throw, the
 * request/response types and the service's startServer. Each room's own
 * index is reachable as a documented subpath (pjrt-score/hlo, /model, ...)
 * for what lies below this surface.
 *
 * Rooms (each a folder under lib/):
 *   runtime         typed facade over the native addon (Client, Executable, DeviceBuffer)
 *   hlo             StableHLO builder, the programs, the decoder weight layout
 *   scoring         requests, buckets, plans, JIT cache, the Scorer, scores
 *   model           GGUF / safetensors readers, config, tokenizer, host weights
 *   device-weights  host weights -> the decoder's device arrays, uploaded
 *   server          the HTTP service
 *   cli             the `pjrt-score` command line
 *   assets          what is fetched into the cache (plugins, the default model), and how
 *   util            cache dir, element-type table, shape helpers
 */

// Scoring
export { Scorer } from './scoring/scorer';
export type {
  AlgorithmChoice,
  ScoreCallOptions,
  ScoreLibraryRequest,
  ScoreResult,
  ScorerOptions,
  ScorerStats,
  ScoreUsage,
  WarmupShape,
  BatchJob,
  BatchOutcome,
  PlanExplanation,
  RerankResponse,
} from './scoring/scorer';
export type { Algorithm, Plan, Pass, ProgramKey } from './scoring/plan';
export type { Batching } from './scoring/options';
export type { RerankRequest, RerankResult } from './scoring/rerank';
export type { RelevanceScale, RerankTemplate, TemplatePiece } from './scoring/rerank-template';
export type { ScoreRequest, ScoreRequestBody, TokenIdList } from './scoring/request';
export type { TruncateOption, TruncationReport } from './scoring/truncate';
export { AbortError, QueueFullError, ScoreInputError } from './scoring/errors';

// The runtime
export { Client, Executable, DeviceBuffer, PjrtError, DisposedError, PluginNotFoundError } from './runtime';
export type { ClientOptions, CompileOptions, XlaOptions, DeviceInfo, DType, HostArray, HostArrayOf, PjrtErrorCode, Signature, TensorSpec } from './runtime';

// The programs
export { programs } from './hlo';
export type { DenseAttentionDims, FactoredAttentionDims, LmHeadGatherDims, MaskedAttentionDims } from './hlo';
export type { HloProgram, ProgramTensor } from './hlo';
export { HloBuildError } from './hlo';

// Models
export { ModelNotFoundError } from './model/default-model';

// The service
export { startServer } from './server/server';
export type { ScoreServer, StartServerOptions } from './server/server';
export { createScoringService } from './server/scoring-service';
export type { ScoringService, ScoringServiceOptions } from './server/scoring-service';
export type { MountOptions } from './server/routes';
export type { ServeOptions } from './server/options';
export type { ScoreResponseBody } from './server/score-route';
export type { RerankResponseBody, TeiRerankResponseBody } from './server/rerank-route';
export type { CohereV2RerankResponseBody } from './server/cohere-v2-route';
