/**
 * `Scorer.scoreMany`: a stream of requests scored a window at a time
 * through the one admission queue, outcomes yielded in input order
 * (util/in-order.ts). The window stays within the queue's size, so no call
 * of it is refused; calls that wait together meet in a turn (coalescing,
 * cross-request batching: docs/design.md, "The walk of one request").
 */
import { mapInOrder } from '../util/in-order';
import { DEFAULT_SCORE_MANY_CONCURRENCY } from './scorer-types';
import type {
  BatchOutcome,
  ScoreCallOptions,
  ScoreLibraryRequest,
  ScoreManyOptions,
  ScoreResult,
} from './scorer-types';

export function scoreMany(
  score: (request: ScoreLibraryRequest, options: ScoreCallOptions) => Promise<ScoreResult>,
  queueCapacity: number,
  requests: AsyncIterable<ScoreLibraryRequest> | Iterable<ScoreLibraryRequest>,
  options: ScoreManyOptions,
): AsyncGenerator<BatchOutcome, void, undefined> {
  const { concurrency = Math.max(1, Math.min(DEFAULT_SCORE_MANY_CONCURRENCY, queueCapacity)), ...call } = options;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > Math.max(1, queueCapacity)) {
    throw new RangeError(
      `concurrency must be an integer in [1, ` +
        `${Math.max(1, queueCapacity)}] (the queue's size), got ${String(concurrency)}`,
    );
  }
  const one = (request: ScoreLibraryRequest): Promise<BatchOutcome> =>
    score(request, call).then(
      (result): BatchOutcome => ({ ok: true, result }),
      (error: unknown): BatchOutcome => ({ ok: false, error }),
    );
  return mapInOrder(requests, one, { concurrency });
}
