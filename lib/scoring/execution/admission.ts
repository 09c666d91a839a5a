/**
 * The admission queue: the one line in front of the device, for library
 * calls and service requests alike (docs/design.md "The walk of one request").
 *
 * Requests are validated before they queue (a bad one never waits), wait
 * here in FIFO order, and reach the device one turn at a time. A queue
 * holding `queueSize` waiting requests refuses the next at once with
 * QueueFullError (a request may always run when the device is free, even
 * with queueSize 0). When the device frees up, the head of the queue takes
 * along every waiting request it may share a turn with:
 *
 * - coalescing (on by default): requests with the same query tokens, labels
 *   and flags, within the item and token limits. Each still runs its own
 *   plan, exactly as it would alone, so its scores are the same bit for bit
 *   (docs/design.md "Batch invariance"); they share the query's prefill
 *   through the prefix cache;
 * - all (batching 'cross-request'): every waiting request, whatever its
 *   query; the turn decides which share passes.
 *
 * Nothing waits on a timer to form a batch: a turn starts at the end of the
 * event loop's current turn (setImmediate), with every request that arrived
 * by then. So calls made together (a Promise.all, the requests of one poll
 * of the server's sockets, the callers answered by the previous turn that
 * call again at once) share a turn instead of the first running alone, and a
 * request to an idle device waits microseconds, not a batching window. A
 * request whose signal fires while it waits leaves the
 * queue and rejects with the signal's AbortError; one that fires during its
 * turn is answered at once, and its plan stops at its next pass.
 */
import { AbortError, QueueFullError } from '../requests/errors';
import type { NormalizedRequest } from '../requests/request';

/** One request and what it may carry through its turn. */
export interface AdmissionJob {
  readonly request: NormalizedRequest;
  readonly signal?: AbortSignal;
}

/** What a turn gives back per job, in job order. */
export type Outcome<R> = { readonly ok: true; readonly result: R } | { readonly ok: false; readonly error: unknown };

/** How a request went through the queue. */
export interface Admission {
  /** Requests in its turn, itself included. */
  readonly turnSize: number;
  /** Milliseconds it waited for its turn. */
  readonly queueMs: number;
}

export interface AdmissionOptions {
  /** Most requests that may wait (not counting those in the device's turn). */
  readonly queueSize: number;
  /**
   * Which waiting requests the head takes along: those that share its query ('same-query'), every one ('all'), or none.
   */
  readonly takeAlong: 'same-query' | 'all' | 'none';
  readonly maxItems: number;
  readonly maxRequestTokens: number;
}

interface Waiting<J extends AdmissionJob, R> {
  readonly job: J;
  readonly key: string | null;
  readonly enqueued: number;
  settled: boolean;
  resolve(value: { result: R; admission: Admission }): void;
  reject(error: unknown): void;
  detach(): void;
}

export class AdmissionQueue<J extends AdmissionJob, R> {
  private readonly waiting: Waiting<J, R>[] = [];
  /** Requests in the device's turn and not yet answered. */
  private running = 0;
  private turning = false;
  /** A turn is due at the end of the event loop's current turn. */
  private due = false;
  private emaTurnSeconds = 0.05;
  private idleWaiters: (() => void)[] = [];
  private turnsValue = 0;
  private turnRequestsValue = 0;
  /** Set by close(): the error every later submit, and every request still waiting then, rejects with. */
  private closedWith: (() => unknown) | null = null;

  /** `runTurn` runs the jobs of one turn on the device and answers each, in order. */
  constructor(
    private readonly options: AdmissionOptions,
    private readonly runTurn: (jobs: J[]) => Promise<Outcome<R>[]>,
  ) {}

  /** Requests waiting for the device. */
  /** Most requests that may wait: a caller that keeps at most this many calls open is never refused. */
  get capacity(): number {
    return this.options.queueSize;
  }

  get queueDepth(): number {
    return this.waiting.length;
  }

  /** Requests in the device's turn now. */
  get inFlight(): number {
    return this.running;
  }

  /** Prompt tokens of the requests waiting (the work ahead of a new request). */
  get queuedTokens(): number {
    let tokens = 0;
    for (const w of this.waiting) tokens += w.job.request.promptTokens;
    return tokens;
  }

  /** Turns run, and the requests they served. */
  get turns(): number {
    return this.turnsValue;
  }

  get turnRequests(): number {
    return this.turnRequestsValue;
  }

  /** Seconds a new request would likely wait: the Retry-After hint. */
  retryAfterSeconds(): number {
    const turns = this.waiting.length + (this.turning ? 1 : 0) + 1;
    return Math.min(60, Math.max(1, Math.ceil(turns * this.emaTurnSeconds)));
  }

  /** Queues a job; rejects with QueueFullError at once when the queue is full. */
  submit(job: J): Promise<{ result: R; admission: Admission }> {
    const queued = this.enqueue(job);
    this.pump();
    return queued;
  }

  /**
   * Queues several jobs together before the device takes its next turn, so
   * those that may share a turn (takeAlong) find each other; each is refused
   * or aborted on its own, as if submitted alone.
   */
  submitAll(jobs: readonly J[]): Promise<{ result: R; admission: Admission }>[] {
    const queued = jobs.map((job) => this.enqueue(job));
    this.pump();
    return queued;
  }

  /**
   * Closes the line: every request still waiting rejects with `error()`, and
   * so does every later submit. The turn on the device runs on and answers
   * its requests. Idempotent.
   */
  close(error: () => unknown): void {
    if (this.closedWith) return;
    this.closedWith = error;
    for (const entry of this.waiting.splice(0)) {
      entry.detach();
      settle(entry, () => entry.reject(error()));
    }
    this.notifyIdle();
  }

  /** Puts a job in the line without starting a turn. Full: `queueSize` wait beyond the one the device takes next. */
  private enqueue(job: J): Promise<{ result: R; admission: Admission }> {
    if (this.closedWith) return Promise.reject(this.closedWith());
    const { signal } = job;
    if (signal?.aborted) return Promise.reject(AbortError.from(signal));
    if (this.waiting.length >= this.options.queueSize + (this.turning ? 0 : 1)) {
      return Promise.reject(new QueueFullError(this.options.queueSize, this.retryAfterSeconds()));
    }
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        const index = this.waiting.indexOf(entry);
        if (index >= 0) this.waiting.splice(index, 1);
        settle(entry, () => reject(AbortError.from(signal as AbortSignal)));
        this.notifyIdle();
      };
      const entry: Waiting<J, R> = {
        job,
        key: this.options.takeAlong === 'same-query' ? coalesceKey(job.request) : null,
        enqueued: performance.now(),
        settled: false,
        resolve,
        reject,
        detach: () => signal?.removeEventListener('abort', onAbort),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(entry);
    });
  }

  /** Resolves when nothing waits or runs (the service's drain). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  isIdle(): boolean {
    return this.waiting.length === 0 && !this.turning && !this.due;
  }

  private notifyIdle(): void {
    if (!this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Schedules the next turn for the end of this event-loop turn, so requests arriving meanwhile join it. */
  private pump(): void {
    if (this.turning || this.due || this.waiting.length === 0) return;
    this.due = true;
    setImmediate(() => {
      this.due = false;
      this.startTurn();
    });
  }

  private startTurn(): void {
    if (this.turning || this.waiting.length === 0) {
      this.notifyIdle();
      return;
    }
    const turn = this.takeTurn();
    this.turning = true;
    void this.run(turn).finally(() => {
      this.turning = false;
      this.pump();
      this.notifyIdle();
    });
  }

  /** The head of the queue plus every later request it may share a turn with. */
  private takeTurn(): Waiting<J, R>[] {
    const head = this.waiting.shift() as Waiting<J, R>;
    const turn = [head];
    if (this.options.takeAlong === 'all') return turn.concat(this.waiting.splice(0));
    if (head.key === null) return turn;
    const queryLength = head.job.request.queryTokens.length;
    let items = head.job.request.itemTokens.length;
    let tokens = head.job.request.promptTokens;
    for (let i = 0; i < this.waiting.length;) {
      const other = this.waiting[i];
      if (other.key === head.key) {
        const moreItems = other.job.request.itemTokens.length;
        const moreTokens = other.job.request.promptTokens - queryLength;
        if (items + moreItems <= this.options.maxItems && tokens + moreTokens <= this.options.maxRequestTokens) {
          turn.push(other);
          items += moreItems;
          tokens += moreTokens;
          this.waiting.splice(i, 1);
          continue;
        }
      }
      i++;
    }
    return turn;
  }

  private async run(turn: Waiting<J, R>[]): Promise<void> {
    const started = performance.now();
    // A member that aborts from here on is answered at once; its plan is skipped or stopped by its own signal.
    const listeners = turn.map((member) => {
      member.detach();
      const signal = member.job.signal;
      const listener = (): void => settle(member, () => member.reject(AbortError.from(signal as AbortSignal)));
      if (signal?.aborted) listener();
      else signal?.addEventListener('abort', listener, { once: true });
      return listener;
    });
    const live = turn.filter((member) => !member.settled);
    this.running = live.length;
    try {
      if (live.length === 0) return;
      const outcomes = await this.runTurn(live.map((member) => member.job));
      const seconds = (performance.now() - started) / 1000;
      this.emaTurnSeconds = 0.8 * this.emaTurnSeconds + 0.2 * seconds;
      this.turnsValue++;
      this.turnRequestsValue += live.length;
      live.forEach((member, i) => {
        const outcome = outcomes[i];
        const signal = member.job.signal;
        if (!outcome.ok) {
          const error = outcome.error;
          settle(member, () => member.reject(signal?.aborted ? AbortError.from(signal) : error));
          return;
        }
        const admission: Admission = { turnSize: live.length, queueMs: started - member.enqueued };
        settle(member, () => member.resolve({ result: outcome.result, admission }));
      });
    } catch (error) {
      for (const member of turn) settle(member, () => member.reject(error));
    } finally {
      this.running = 0;
      turn.forEach((member, i) => member.job.signal?.removeEventListener('abort', listeners[i]));
    }
  }
}

function settle<J extends AdmissionJob, R>(entry: Waiting<J, R>, fn: () => void): void {
  if (entry.settled) return;
  entry.settled = true;
  fn();
}

/** Requests that may share a turn. Requests with no items or no query are not merged (nothing to share). */
function coalesceKey(request: NormalizedRequest): string | null {
  if (request.itemTokens.length === 0 || request.queryTokens.length === 0) return null;
  const flags = `${request.itemFirst ? 1 : 0}${request.applySoftmax ? 1 : 0}`;
  return `${flags}|${request.labels.join(',')}|${request.queryTokens.join(',')}`;
}
