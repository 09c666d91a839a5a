/**
 * What the service needs from the Scorer (docs/scorer-api.md), as a
 * structural type over the Scorer's own: the HTTP layer depends on this
 * narrow surface only, so it can be read and tested with a Scorer of its
 * own making (a shared one, a gated one) behind it. The queue, coalescing,
 * cross-request batching and the in-flight count are the Scorer's
 * (scoring/execution/admission.ts); the service reads them through here.
 */
import type { Scorer, ScorerSettings } from '../../scoring';
import type { BackendStats } from '../telemetry/metrics';

export interface ScoringBackend extends Pick<
  Scorer,
  | 'modelName'
  | 'tokenize'
  | 'normalizeWith'
  | 'scoreNormalized'
  | 'queueDepth'
  | 'inFlight'
  | 'retryAfterSeconds'
  | 'idle'
  | 'warmup'
  | 'dispose'
> {
  readonly config: Pick<Scorer['config'], 'vocabSize' | 'contextLength' | 'addBos' | 'bosTokenId'> &
    Partial<Pick<Scorer['config'], 'architecture'>>;
  /** The stored tensor types ("Q4_1 (210), F32 (61), Q8_0 (1)"), when the backend knows them (/v1/models). */
  readonly quantization?: Scorer['quantization'];
  stats(): BackendStats;
  /** Prompt tokens of the requests waiting (the load report's queued work); optional: 0 when absent. */
  readonly queuedTokens?: Scorer['queuedTokens'];
  /** The normalizers that tokenize long texts off the event loop; optional: the synchronous ones otherwise. */
  readonly offLoop?: Pick<Scorer['offLoop'], 'normalizeWith'>;
  /** The rerank template (the reranker advice reads it); optional. */
  readonly rerankTemplate?: Scorer['rerankTemplate'];
  /** Token ids -> text (label names in the CLI table); optional. */
  readonly tokenizer?: { decode(ids: readonly number[]): string };
}

/** The Scorer's settings (scoring/options.ts, one row each) and where its log events go. */
export interface BackendLoadOptions extends ScorerSettings {
  readonly log: (event: Record<string, unknown>) => void;
}

/** Loads the real Scorer (model weights on the device). */
export async function loadScorerBackend(options: BackendLoadOptions): Promise<ScoringBackend> {
  // Required lazily: the CLI's --help and `fetch` need none of the Scorer's modules.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Scorer } = require('../../scoring') as typeof import('../../scoring');
  return Scorer.load(options);
}

/** True for the rejection of an aborted call (the Scorer's AbortError, or DOMException 'AbortError'). */
export function isAbortError(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
}
