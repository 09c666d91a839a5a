/**
 * The bounded queue in front of the device, and cross-request batching.
 *
 * Requests are validated before they queue (so a bad one never waits), wait
 * here in FIFO order, and go to the Scorer one call at a time (the device
 * runs one execution at a time anyway; holding the line here, not inside the
 * Scorer, keeps the queue visible and lets a request that expires while
 * waiting leave without ever reaching the Scorer). When the device frees up,
 * the head of the queue takes along every waiting request with the same
 * query tokens, labels and flags (within the item and token limits), and the
 * Scorer runs them in one hold of the device. Each request still runs its
 * own plan, exactly as it would alone, so its scores are the same bit for bit
 * whatever it ran with (docs/design.md "Batch invariance"); the batch shares the query's
 * prefill through the prefix cache. With the Scorer's batching
 * 'cross-request', the head takes every waiting request along, whatever its
 * query, and the Scorer runs those that can share passes together (each
 * group its own query; scores within 1e-5 of alone, not bit for bit).
 * Nothing waits to form a batch: a request that arrives to an idle device
 * runs at once.
 */
import type { NormalizedRequest } from '../scoring/request';
import { Algorithm, ScoringBackend } from './backend';

export interface ScoreJob {
  readonly id: string;
  readonly request: NormalizedRequest;
  /** Fires on the deadline or when the client goes away: the job is dropped. */
  readonly signal: AbortSignal;
}

export interface JobOutcome {
  readonly scores: number[][];
  readonly promptTokens: number;
  readonly algorithm: Algorithm;
  /** Requests served by the Scorer call that served this one. */
  readonly batchSize: number;
  /** Milliseconds spent waiting in the queue. */
  readonly queueMs: number;
}

export interface SchedulerOptions {
  /** Most requests that may wait (not counting those running). */
  readonly queueSize: number;
  /** Scorer calls in flight at once. 1 keeps the device busy and lets the queue form batches. */
  readonly maxConcurrent: number;
  /** Run waiting requests that share query, labels and flags in one Scorer call. */
  readonly coalesce: boolean;
  /**
   * The Scorer batches requests with different queries (batching
   * 'cross-request'): the head of the queue takes every waiting request
   * along, and the Scorer decides which share passes.
   */
  readonly crossRequest?: boolean;
  readonly maxItems: number;
  readonly maxRequestTokens: number;
  /** One call served several requests. */
  readonly onBatch?: (members: number) => void;
}

interface Waiting {
  readonly job: ScoreJob;
  readonly key: string | null;
  readonly enqueued: number;
  settled: boolean;
  resolve(outcome: JobOutcome): void;
  reject(error: unknown): void;
  detach(): void;
}

export class QueueFullError extends Error {
  constructor(readonly queueSize: number) {
    super(`the queue is full (${queueSize} requests waiting)`);
    this.name = 'QueueFullError';
  }
}

export class Scheduler {
  private readonly waiting: Waiting[] = [];
  private running = 0;
  private emaCallSeconds = 0.05;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly backend: ScoringBackend,
    private readonly options: SchedulerOptions,
  ) {}

  /** Requests waiting for the device. */
  get queueDepth(): number {
    return this.waiting.length;
  }

  /** Scorer calls in flight. */
  get inFlight(): number {
    return this.running;
  }

  /** Seconds a new request would likely wait: the Retry-After hint. */
  retryAfterSeconds(): number {
    const calls = this.waiting.length + this.running + 1;
    return Math.min(60, Math.max(1, Math.ceil(calls * this.emaCallSeconds)));
  }

  /** Queues a job; throws QueueFullError at once when the queue is full. */
  submit(job: ScoreJob): Promise<JobOutcome> {
    if (job.signal.aborted) return Promise.reject(abortError(job.signal));
    // A request may always run when the device is free, even with --queue-size 0.
    const mustWait = this.running >= this.options.maxConcurrent;
    if (mustWait && this.waiting.length >= this.options.queueSize) throw new QueueFullError(this.options.queueSize);
    return new Promise<JobOutcome>((resolve, reject) => {
      const onAbort = (): void => {
        const index = this.waiting.indexOf(entry);
        if (index >= 0) this.waiting.splice(index, 1);
        settle(entry, () => reject(abortError(job.signal)));
        this.notifyIdle();
      };
      const entry: Waiting = {
        job,
        key: this.options.coalesce ? coalesceKey(job.request) : null,
        enqueued: performance.now(),
        settled: false,
        resolve,
        reject,
        detach: () => job.signal.removeEventListener('abort', onAbort),
      };
      job.signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(entry);
      this.pump();
    });
  }

  /** Resolves when nothing waits or runs (used by the drain on SIGTERM). */
  idle(): Promise<void> {
    if (this.waiting.length === 0 && this.running === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private notifyIdle(): void {
    if (this.waiting.length !== 0 || this.running !== 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  private pump(): void {
    while (this.running < this.options.maxConcurrent && this.waiting.length > 0) {
      const batch = this.takeBatch();
      this.running++;
      void this.run(batch).finally(() => {
        this.running--;
        this.pump();
        this.notifyIdle();
      });
    }
  }

  /** The head of the queue plus every later request it can share a call with. */
  private takeBatch(): Waiting[] {
    const head = this.waiting.shift() as Waiting;
    const batch = [head];
    if (this.options.crossRequest) return batch.concat(this.waiting.splice(0));
    if (head.key === null) return batch;
    const queryLength = head.job.request.queryTokens.length;
    let items = head.job.request.itemTokens.length;
    let tokens = head.job.request.promptTokens;
    for (let i = 0; i < this.waiting.length; ) {
      const other = this.waiting[i];
      if (other.key === head.key) {
        const moreItems = other.job.request.itemTokens.length;
        const moreTokens = other.job.request.promptTokens - queryLength;
        if (items + moreItems <= this.options.maxItems && tokens + moreTokens <= this.options.maxRequestTokens) {
          batch.push(other);
          items += moreItems;
          tokens += moreTokens;
          this.waiting.splice(i, 1);
          continue;
        }
      }
      i++;
    }
    return batch;
  }

  private async run(batch: Waiting[]): Promise<void> {
    const started = performance.now();
    // A member that aborts from here on is answered at once; its plan is skipped or stopped by its own signal.
    const listeners = batch.map((member) => {
      member.detach();
      const listener = (): void => settle(member, () => member.reject(abortError(member.job.signal)));
      if (member.job.signal.aborted) listener();
      else member.job.signal.addEventListener('abort', listener, { once: true });
      return listener;
    });
    try {
      const live = batch.filter((member) => !member.settled);
      if (live.length === 0) return;
      const outcomes = await this.backend.scoreBatch(live.map((member) => ({ request: member.job.request, signal: member.job.signal })));
      const seconds = (performance.now() - started) / 1000;
      this.emaCallSeconds = 0.8 * this.emaCallSeconds + 0.2 * seconds;
      this.options.onBatch?.(live.length);
      live.forEach((member, i) => {
        const outcome = outcomes[i];
        if (!outcome.ok) {
          const error = outcome.error;
          settle(member, () => member.reject(member.job.signal.aborted ? abortError(member.job.signal) : error));
          return;
        }
        const { result } = outcome;
        const jobOutcome: JobOutcome = {
          scores: result.scores,
          promptTokens: result.usage.promptTokens,
          algorithm: result.algorithm,
          batchSize: live.length,
          queueMs: started - member.enqueued,
        };
        settle(member, () => member.resolve(jobOutcome));
      });
    } catch (error) {
      for (const member of batch) settle(member, () => member.reject(error));
    } finally {
      batch.forEach((member, i) => member.job.signal.removeEventListener('abort', listeners[i]));
    }
  }
}

function settle(entry: Waiting, fn: () => void): void {
  if (entry.settled) return;
  entry.settled = true;
  fn();
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  const error = new Error(reason instanceof Error ? reason.message : 'the request was aborted');
  error.name = 'AbortError';
  return error;
}

/** Requests that may share one call. Requests with no items are not merged (nothing to share). */
function coalesceKey(request: NormalizedRequest): string | null {
  if (request.itemTokens.length === 0 || request.queryTokens.length === 0) return null;
  return `${request.itemFirst ? 1 : 0}${request.applySoftmax ? 1 : 0}|${request.labels.join(',')}|${request.queryTokens.join(',')}`;
}
