/**
 * Concurrent calls that go to the device together. A call that may share a
 * pass with others waits here instead of in the device line; each call still
 * asks the device lock for one turn, and the first turn to come takes every
 * call waiting at that moment and runs them as one batch (later turns find
 * their call already taken and return at once). So nothing waits to form a
 * batch: a call to an idle device runs at once, and calls that arrive while
 * the device is busy go together when it frees up.
 *
 * A call whose signal fires while it waits leaves the batch and rejects.
 */
import { AbortError, DeviceLock } from './device-lock';


interface Waiting<J, R> {
  readonly job: J;
  readonly signal?: AbortSignal;
  resolve(result: R): void;
  reject(error: unknown): void;
  detach(): void;
}

/** What a batch run gives back per job, in job order. */
export type JobOutcome<R> = { readonly ok: true; readonly result: R } | { readonly ok: false; readonly error: unknown };

export class RequestBatcher<J, R> {
  private waiting: Waiting<J, R>[] = [];

  /** `runBatch` runs the jobs of one turn (the lock held) and answers each. */
  constructor(
    private readonly lock: DeviceLock,
    private readonly runBatch: (jobs: J[]) => Promise<JobOutcome<R>[]>,
  ) {}

  /** Calls waiting to be taken into a batch. */
  get size(): number {
    return this.waiting.length;
  }

  submit(job: J, signal?: AbortSignal): Promise<R> {
    if (signal?.aborted) return Promise.reject(new AbortError());
    return new Promise<R>((resolve, reject) => {
      const onAbort = (): void => {
        const index = this.waiting.indexOf(entry);
        if (index >= 0) this.waiting.splice(index, 1);
        reject(new AbortError(typeof signal?.reason === 'string' ? signal.reason : undefined));
      };
      const entry: Waiting<J, R> = { job, signal, resolve, reject, detach: () => signal?.removeEventListener('abort', onAbort) };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(entry);
      // The turn of this call; its failure is answered through the entries, never as an unhandled rejection.
      this.lock.run(() => this.turn()).catch(() => undefined);
    });
  }

  /** Takes every waiting call and runs them as one batch. */
  private async turn(): Promise<void> {
    const taken = this.waiting;
    this.waiting = [];
    if (taken.length === 0) return;
    taken.forEach((entry) => entry.detach());
    try {
      const outcomes = await this.runBatch(taken.map((entry) => entry.job));
      taken.forEach((entry, i) => {
        const outcome = outcomes[i];
        if (outcome.ok) entry.resolve(outcome.result);
        else entry.reject(outcome.error);
      });
    } catch (error) {
      for (const entry of taken) entry.reject(error);
    }
  }
}
