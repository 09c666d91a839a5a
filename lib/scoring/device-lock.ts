/**
 * One execution stream per device: callers run their device work one at a
 * time, in arrival order. A caller whose AbortSignal fires while it waits
 * leaves the line without running.
 */
export class AbortError extends Error {
  readonly code = 'ABORT_ERR';
  constructor(message = 'the operation was aborted') {
    super(message);
    this.name = 'AbortError';
  }
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortError(typeof signal.reason === 'string' ? signal.reason : undefined);
}

export class DeviceLock {
  private tail: Promise<void> = Promise.resolve();
  private waiting = 0;

  /** Calls waiting for or holding the device. */
  get pending(): number {
    return this.waiting;
  }

  async run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    throwIfAborted(signal);
    this.waiting++;
    const previous = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((resolve) => (release = resolve));
    try {
      await previous;
      throwIfAborted(signal);
      return await fn();
    } finally {
      this.waiting--;
      release();
    }
  }
}
