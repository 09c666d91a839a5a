/**
 * Errors for bad scoring input. The HTTP layer maps a ScoreInputError to
 * `{"object": "error", "message", "type": "BadRequestError", "param", "code"}`
 * without re-deriving anything, so the error carries exactly those fields.
 */
export class ScoreInputError extends Error {
  /** The request field at fault, spelled as the caller spelled it ('query', 'label_token_ids', ...). */
  readonly param: string;
  /** HTTP status: 400 for every input rule (docs/design.md "Scoring semantics"). */
  readonly code: number;
  /** The SGLang/OpenAI error type the service reports. */
  readonly type: string = 'BadRequestError';

  constructor(message: string, param: string, code = 400) {
    super(message);
    this.name = 'ScoreInputError';
    this.param = param;
    this.code = code;
  }

  /** The JSON error body of the Score API. */
  toJSON(): { object: 'error'; message: string; type: string; param: string; code: number } {
    return { object: 'error', message: this.message, type: this.type, param: this.param, code: this.code };
  }
}

/** Short description of a JSON-ish value for error messages: `string "abc"`, `number 1.5`, `null`, `array`. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return `array of length ${value.length}`;
  switch (typeof value) {
    case 'string': {
      const shown = value.length > 40 ? `${value.slice(0, 37)}...` : value;
      return `string ${JSON.stringify(shown)}`;
    }
    case 'number':
    case 'boolean':
    case 'bigint':
      return `${typeof value} ${String(value)}`;
    default:
      return typeof value;
  }
}

/**
 * A call that stopped because its AbortSignal fired: the one abort error of
 * the library and the service. `reason` is the signal's reason, kept as the
 * caller gave it (the service's deadline or a client gone are AbortErrors
 * themselves, and come back unchanged).
 */
export class AbortError extends Error {
  readonly code = 'ABORT_ERR';
  constructor(
    message = 'the operation was aborted',
    /** The signal's reason, when it had one. */
    readonly reason?: unknown,
  ) {
    super(message);
    this.name = 'AbortError';
  }

  /** The error a call aborted by `signal` rejects with: its reason when that is an AbortError, else one carrying it. */
  static from(signal: AbortSignal): AbortError {
    const reason: unknown = signal.reason;
    if (reason instanceof AbortError) return reason;
    const message = reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : undefined;
    return new AbortError(message, reason);
  }
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw AbortError.from(signal);
}

/** The admission queue is full: the call was refused at once, nothing ran (the service answers 429 with Retry-After). */
export class QueueFullError extends Error {
  readonly code = 'QUEUE_FULL';
  constructor(
    readonly queueSize: number,
    /** Seconds after which a retry will likely find room. */
    readonly retryAfterSeconds: number,
  ) {
    super(`the queue is full (${queueSize} requests waiting)`);
    this.name = 'QueueFullError';
  }
}
