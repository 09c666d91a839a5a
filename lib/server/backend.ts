/**
 * What the service needs from the Scorer (docs/scorer-api.md), as a
 * structural type: the HTTP layer depends on this narrow surface only, so it
 * can be read, tested and reasoned about without the device behind it.
 */
import type { ModelConfig } from '../model/config';
import type { Algorithm } from '../scoring/plan';
import type { JitCacheCounters } from '../scoring/jit-cache';
import type { PrefixCacheCounters } from '../scoring/prefix-cache';
import type { NormalizedRerank } from '../scoring/rerank';
import type { NormalizedRequest, ScoreRequestBody } from '../scoring/request';
import type { AlgorithmChoice, ScorerSettings, WarmupShape } from '../scoring';

export type { Algorithm, AlgorithmChoice, WarmupShape };

/** The Score API body as the backend receives it (snake_case, SGLang spelling). */
export type ScoreBody = ScoreRequestBody;

export interface BackendScoreResult {
  readonly scores: number[][];
  readonly usage: { readonly promptTokens: number; readonly completionTokens: number; readonly totalTokens: number };
  readonly algorithm: Algorithm;
  readonly model: string;
}

/** One request of a batch, with its own abort signal. */
export interface BackendJob {
  readonly request: NormalizedRequest;
  readonly signal?: AbortSignal;
}

export type BackendOutcome = { readonly ok: true; readonly result: BackendScoreResult } | { readonly ok: false; readonly error: unknown };

/** Counters from `scorer.stats()`; every field is optional so a newer or older Scorer still renders. */
export interface BackendStats {
  readonly jit?: Partial<JitCacheCounters>;
  readonly runs?: Readonly<Record<string, number>>;
  readonly prefixCache?: Partial<PrefixCacheCounters>;
  readonly itemsScored?: number;
  readonly tokensScored?: number;
  readonly devicePasses?: number;
  readonly batchedPasses?: number;
  readonly batchedRequests?: number;
}

export interface ScoringBackend {
  readonly modelName: string;
  readonly config: Pick<ModelConfig, 'vocabSize' | 'contextLength' | 'addBos' | 'bosTokenId'>;
  /** Calls waiting for or holding the device inside the backend. */
  readonly pending: number;
  tokenize(text: string): number[];
  /** Validates and tokenizes a Score API body (ScoreInputError on bad input): the service's only normalization. */
  normalizeBody(body: unknown): NormalizedRequest;
  /** Validates a rerank body into its score request (ScoreInputError on bad input; needs a rerank template for the model). */
  normalizeRerankBody(body: unknown): NormalizedRerank;
  /** Scores one body (the CLI). */
  scoreBody(body: unknown, options?: { signal?: AbortSignal }): Promise<BackendScoreResult>;
  /** Scores normalized requests in one hold of the device: each as it would run alone, or, with batching 'cross-request', in shared passes. */
  scoreBatch(jobs: readonly BackendJob[]): Promise<BackendOutcome[]>;
  stats(): BackendStats;
  /** Compiles the programs requests of these shapes use (progress bar on `progress`). */
  warmup(shapes: readonly WarmupShape[], progress?: NodeJS.WritableStream | false): Promise<void>;
  /** Token ids -> text (label names in the CLI table); optional. */
  readonly tokenizer?: { decode(ids: readonly number[]): string };
  dispose(): void;
}

/** The Scorer's settings (scoring/options.ts, one row each) and where its log events go. */
export interface BackendLoadOptions extends ScorerSettings {
  readonly log: (event: Record<string, unknown>) => void;
}

/** Loads the real Scorer (model weights on the device). */
export async function loadScorerBackend(options: BackendLoadOptions): Promise<ScoringBackend> {
  // Required lazily: the CLI's --help and `fetch` must work without loading the native addon.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Scorer } = require('../scoring/scorer') as typeof import('../scoring/scorer');
  return Scorer.load(options);
}

/** True for the rejection of an aborted call (the Scorer's AbortError, or DOMException 'AbortError'). */
export function isAbortError(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
}
