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
 * The rooms (each a folder under lib/), what each holds and may import:
 * docs/design.md, "Rooms".
 */

// The base of every error the package throws to a user, each with a string `code` (docs/scorer-api.md, "Errors")
export { PjrtScoreError } from './util/errors';

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
  ScoreManyOptions,
  PlanExplanation,
  RerankResponse,
} from './scoring/scorer-types';
export type { Algorithm, Plan, Pass, ProgramKey } from './scoring/planning/plan';
export type { Batching } from './scoring/options';
export type { RerankRequest, RerankResult } from './scoring/requests/rerank';
export { TemplateError } from './scoring/requests/rerank-template';
export type { RelevanceScale, RerankTemplate, TemplatePiece } from './scoring/requests/rerank-template';
export type { ScoreRequest, TokenIdList } from './scoring/requests/request';
export type { TruncateOption, TruncationReport } from './scoring/requests/truncate';
export { AbortError, QueueFullError, ScoreInputError } from './scoring/requests/errors';
export { OptionError } from './scoring/options';

// The runtime
export { Client, Executable, DeviceBuffer, PjrtError, DisposedError, PluginNotFoundError } from './runtime';
export type {
  ClientOptions,
  CompileOptions,
  XlaOptions,
  DeviceInfo,
  DType,
  HostArray,
  HostArrayOf,
  PjrtErrorCode,
  Signature,
  TensorSpec,
} from './runtime';

// The programs
export { programs } from './hlo';
export type { DenseAttentionDims, FactoredAttentionDims, LmHeadGatherDims, MaskedAttentionDims } from './hlo';
export type { HloProgram, ProgramTensor } from './hlo';
export { HloBuildError } from './hlo';

// Models and their files
export { ModelNotFoundError } from './model/default-model';
export { GgufError } from './model/gguf-types';
export { SafetensorsError } from './model/safetensors';
export { ModelConfigError } from './model/config';
export { WeightsError } from './model/weights';
export { TokenizerError } from './model/tokenizer';
export { FetchError } from './assets/wheel-fetch';
export { HubError } from './assets/hub-select';
export type { HubErrorCode } from './assets/hub-select';

// The service
export { startServer } from './server/hosts/standalone-server';
export type { ScoreServer, StartServerOptions } from './server/hosts/standalone-server';
export { createScoringService } from './server/hosts/mountable-service';
export type { ScoringService, ScoringServiceOptions } from './server/hosts/mountable-service';
export type { MountOptions } from './server/routes/table';
export type { ServeOptions } from './server/settings/serve-settings';
export type {
  ScoreRequestBody,
  ScoreResponseBody,
  RerankResponseBody,
  TeiRerankResponseBody,
  CohereV2RerankResponseBody,
} from './wire';
