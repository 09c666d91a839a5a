/**
 * A map over a stream that runs up to `concurrency` calls at once and
 * yields their results in input order: the head of the window is yielded
 * as soon as it settles, so memory holds at most `concurrency` inputs and
 * results, whatever the stream's length, and the source is pulled only as
 * the window has room (its backpressure holds).
 */

export interface InOrderOptions {
  /** Calls in flight at most (>= 1). */
  readonly concurrency: number;
}

/**
 * Yields `fn(item, index)` for each item of `source`, in order. `fn` must not
 * reject: a call's failure is its result's business (the callers here map
 * errors to results). A rejection still ends the stream with that error,
 * after the calls in flight have settled.
 */
export async function* mapInOrder<T, R>(
  source: AsyncIterable<T> | Iterable<T>,
  fn: (item: T, index: number) => Promise<R>,
  options: InOrderOptions,
): AsyncGenerator<R, void, undefined> {
  const { concurrency } = options;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError(`concurrency must be an integer >= 1, got ${String(concurrency)}`);
  const window: Promise<{ ok: true; value: R } | { ok: false; error: unknown }>[] = [];
  let index = 0;
  try {
    for await (const item of source as AsyncIterable<T>) {
      window.push(
        fn(item, index++).then(
          (value) => ({ ok: true as const, value }),
          (error: unknown) => ({ ok: false as const, error }),
        ),
      );
      if (window.length >= concurrency) yield unwrap(await (window.shift() as (typeof window)[number]));
    }
    while (window.length > 0) yield unwrap(await (window.shift() as (typeof window)[number]));
  } finally {
    // A consumer that stops early (break, throw) still waits for the calls it started.
    await Promise.all(window);
  }
}

function unwrap<R>(settled: { ok: true; value: R } | { ok: false; error: unknown }): R {
  if (!settled.ok) throw settled.error;
  return settled.value;
}
