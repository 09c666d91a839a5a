/**
 * lib/scoring: scoring a request, in four sub-rooms (docs/design.md, "Rooms"):
 * requests become token sequences (requests/), a request's shape becomes a
 * plan of device passes (planning/), the executor runs exactly those passes
 * through the JIT cache and label logprobs become scores (execution/,
 * requests/scores.ts), and what differs by platform is one profile each
 * (platform/). Scorer (scorer.ts) is the front door: a facade over the pure
 * setup step (setup.ts) and the turn executor (execution/turns.ts).
 * May import: runtime, hlo (its index only), model, device-weights, util (not server or cli).
 */
export { AbortError, QueueFullError, ScoreInputError, describeValue } from './requests/errors';
export { TemplateError } from './requests/rerank-template';
export { DEFAULT_SCORE_MANY_CONCURRENCY } from './scorer-types';
export {
  AdmissionQueue,
  type Admission,
  type AdmissionJob,
  type AdmissionOptions,
  type Outcome,
} from './execution/admission';
export { rerankResults } from './requests/rerank-results';
export {
  asObject,
  normalizeRerank,
  normalizeRerankFields,
  type NormalizedRerank,
  type RerankFields,
  type RerankNames,
  type RerankRequest,
  type RerankResult,
  type RerankSpelling,
} from './requests/rerank';
export type { FieldNames } from './requests/request-fields';
export type { ResolvedTemplate } from './requests/rerank-template';
export { rerankerAdvice, SUGGESTED_RERANKER } from './requests/rerank-template';
export { charsFor, checkTextBound } from './requests/text-bound';
export { INLINE_TOKENIZE_CHARS, normalizeOffLoop } from './requests/off-loop';
export { OffLoopTokenizer, type RequestReader, type RequestSource } from './off-loop-tokenizer';
export {
  readTruncateOption,
  positiveCount,
  cutTokens,
  type Keep,
  type TruncateOption,
  type TruncationReport,
  type TruncationSpec,
} from './requests/truncate';
export {
  normalizeRequest,
  normalizeScoreFields,
  type NormalizedRequest,
  type ScoreFields,
  type ScoreRequest,
  type ScoreRequestContext,
  type TokenIdList,
} from './requests/request';
export {
  BucketOverflowError,
  DEFAULT_TOKEN_BUCKETS,
  bucketFor,
  bucketLadder,
  parseBucketList,
  type BucketLadderOptions,
} from './planning/buckets';
export { expScores, scoresFromLabelLogprobs, softmaxScores, type ScoreConversion } from './requests/scores';
export {
  clientCompiler,
  jitKeyString,
  type CompilingClient,
  type JitKey,
  type LoadSource,
  type ProgramCompiler,
  type ProgramSource,
} from './execution/compiler';
export { JitCache, type JitCacheCounters, type JitCacheOptions, type JitLease } from './execution/jit-cache';
export { type WarmupItem, type WarmupOptions, type WarmupProgress, type WarmupResult } from './execution/warmup';
export { ExecutableDiskCache, defaultExecutableDir, executableKey } from './execution/disk-cache';
export { Scorer } from './scorer';
export {
  type AlgorithmChoice,
  type DevicePassTiming,
  type ScoreCallOptions,
  type ScoreLibraryRequest,
  type ScoreResult,
  type ScorerOptions,
  type RerankResponse,
  type ScorerStats,
  type ScoreUsage,
  type WarmupShape,
  type BatchJob,
  type BatchOutcome,
  type ScoreManyOptions,
  type PlanExplanation,
} from './scorer-types';
export {
  ALGORITHMS,
  makePlan,
  type Algorithm,
  type Budget,
  type Ladders,
  type Pass,
  type Plan,
  type ProgramKey,
  type RequestShape,
} from './planning/plan';
export { makeBatchPlan, canJoinBatch, type BatchGroup, type BatchPass, type BatchPlan } from './planning/batch-plan';
export { PrefixCache, type PrefixCacheCounters } from './execution/prefix-cache';
export {
  ALGORITHM_CHOICES,
  BATCHINGS,
  DEFAULT_JIT_CACHE_ENTRIES,
  DEFAULT_MAX_ITEMS,
  DEFAULT_MAX_REQUEST_TOKENS,
  DEFAULT_PREFIX_CACHE_BYTES,
  OptionError,
  PRECISIONS,
  SCORER_SETTINGS,
  choiceSetting,
  integerSetting,
  pickSettings,
  settingDefaults,
  stringSetting,
  switchOffSetting,
  type Batching,
  type Precision,
  type ResolvedSettings,
  type ScorerSettings,
  type Setting,
  type SettingValues,
} from './options';
export { choosePlan, costModelFor, planCost, type CostModel, type PlanChoice } from './planning/selector';
