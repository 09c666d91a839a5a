/**
 * lib/scoring: the device-independent core of scoring. Requests become token
 * sequences, sequences become packed layouts with O(T) segment metadata,
 * sizes round up to buckets, compiled programs live in the JIT cache, and
 * label logprobs become scores.
 */
export { ScoreInputError } from './errors';
export {
  normalizeRequest,
  normalizeRequestBody,
  type NormalizedRequest,
  type ScoreRequest,
  type ScoreRequestBody,
  type ScoreRequestContext,
  type TokenIdList,
} from './request';
export {
  PADDING_SEGMENT,
  QUERY_SEGMENT,
  denseMask,
  packDense,
  packFactored,
  packSerial,
  renderMask,
  type DenseLayout,
  type DenseLayoutOptions,
  type FactoredLayout,
  type FactoredLayoutOptions,
  type SerialLayout,
  type SerialLayoutOptions,
  type TokenSequence,
} from './packing';
export {
  BucketOverflowError,
  DEFAULT_COUNT_BUCKETS,
  DEFAULT_TOKEN_BUCKETS,
  bucketFor,
  bucketLadder,
  parseBucketList,
  type BucketLadderOptions,
} from './buckets';
export { expScores, scoresFromLabelLogprobs, softmaxScores, type ScoreConversion } from './scores';
export {
  clientCompiler,
  jitKeyString,
  type CompilingClient,
  type JitKey,
  type LoadSource,
  type ProgramCompiler,
  type ProgramSource,
} from './compiler';
export { JitCache, type JitCacheCounters, type JitCacheOptions, type JitLease } from './jit-cache';
export { type WarmupItem, type WarmupOptions, type WarmupProgress, type WarmupResult } from './warmup';
export { ExecutableDiskCache, defaultExecutableDir, executableKey } from './disk-cache';
export {
  Scorer,
  type AlgorithmChoice,
  type ScoreCallOptions,
  type ScoreLibraryRequest,
  type ScoreResult,
  type ScorerOptions,
  type ScorerStats,
  type ScoreUsage,
  type WarmupShape,
  type BatchJob,
  type BatchOutcome,
  type PlanExplanation,
} from './scorer';
export { ALGORITHMS, makePlan, type Algorithm, type Budget, type Ladders, type Pass, type Plan, type ProgramKey, type RequestShape } from './plan';
export { AbortError } from './device-lock';
export { PrefixCache, type PrefixCacheCounters } from './prefix-cache';
export { choosePlan, costModelFor, planCost, type CostModel, type PlanChoice } from './selector';
