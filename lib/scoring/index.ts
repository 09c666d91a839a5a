/**
 * lib/scoring: scoring a request. Requests become token sequences, sizes
 * round up to buckets, a plan picks the passes, compiled programs live in the
 * JIT cache, the Scorer runs the passes on the device and label logprobs
 * become scores.
 * May import: runtime, hlo, model, device-weights, util (not server or cli).
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
} from './scorer';
export { ALGORITHMS, type Algorithm, type Budget, type Ladders } from './plans';
export { AbortError } from './device-lock';
export { PrefixCache, type PrefixCacheCounters } from './prefix-cache';
export { chooseAlgorithm, costModelFor, type Choice, type CostModel } from './selector';
