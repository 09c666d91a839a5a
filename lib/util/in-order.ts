/**
 * A map over a stream that runs up to `concurrency` calls at once and
 * yields their results in input order: the head of the window is yielded
 * as soon as it settles, so memory holds at most `concurrency` inputs and
 * results, whatever the stream's length, and the source is pulled only as
 * the window has room (its backpressure holds).
 */

interface InOrderOptions {
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
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new RangeError(`concurrency must be an integer >= 1, got ${String(concurrency)}`);
  type Settled = { ok: true; value: R } | { ok: false; error: unknown };
  const iterator: AsyncIterator<T> | Iterator<T> =
    Symbol.asyncIterator in source
      ? (source as AsyncIterable<T>)[Symbol.asyncIterator]()
      : (source as Iterable<T>)[Symbol.iterator]();
  const window: Promise<Settled>[] = [];
  let index = 0;
  let pulling: Promise<IteratorResult<T>> | null = null;
  let exhausted = false;
  try {
    while (!exhausted || window.length > 0) {
      if (!exhausted && pulling === null && window.length < concurrency) pulling = Promise.resolve(iterator.next());
      // Whichever comes first: the next input (while the window has room) or the head's result,
      // so a finished head is yielded even while the source keeps us waiting (a pipe).
      const racers: Promise<{ readonly source: IteratorResult<T> } | { readonly head: Settled }>[] = [];
      if (pulling !== null) racers.push(pulling.then((result) => ({ source: result })));
      if (window.length > 0) racers.push(window[0].then((head) => ({ head })));
      const event = await Promise.race(racers);
      if ('source' in event) {
        pulling = null;
        if (event.source.done === true) exhausted = true;
        else
          window.push(
            fn(event.source.value, index++).then(
              (value): Settled => ({ ok: true, value }),
              (error: unknown): Settled => ({ ok: false, error }),
            ),
          );
      } else {
        window.shift();
        yield unwrap(event.head);
      }
    }
  } finally {
    // A consumer that stops early (break, throw) still waits for the calls it started.
    await Promise.all(window);
  }
}

function unwrap<R>(settled: { ok: true; value: R } | { ok: false; error: unknown }): R {
  if (!settled.ok) throw settled.error;
  return settled.value;
}
