import { PjrtScoreError } from '../../util/errors';

/**
 * Errors for bad scoring input. The HTTP layer maps a ScoreInputError to
 * `{"object": "error", "message", "type": "BadRequestError", "param", "code": <status>}`
 * without re-deriving anything, so the error carries exactly those fields
 * (the wire's numeric `code` is the error's `status`).
 */
export class ScoreInputError extends PjrtScoreError {
  declare readonly code: 'INPUT_INVALID';
  /** The request field at fault, spelled as the caller spelled it ('query', 'label_token_ids', ...). */
  readonly param: string;
  /** HTTP status: 400 for every input rule (docs/design.md "Scoring semantics"). */
  readonly status: number;
  /** The SGLang/OpenAI error type the service reports. */
  readonly type: string = 'BadRequestError';

  constructor(message: string, param: string, status = 400) {
    super(message, 'INPUT_INVALID');
    this.name = 'ScoreInputError';
    this.param = param;
    this.status = status;
  }

  /** The JSON error body of the Score API (its `code` is the HTTP status, as on the wire). */
  toJSON(): { object: 'error'; message: string; type: string; param: string; code: number } {
    return { object: 'error', message: this.message, type: this.type, param: this.param, code: this.status };
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
export class AbortError extends PjrtScoreError {
  declare readonly code: 'ABORT_ERR';
  constructor(
    message = 'the operation was aborted',
    /** The signal's reason, when it had one. */
    readonly reason?: unknown,
  ) {
    super(message, 'ABORT_ERR');
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

/**
 * The admission queue is full: the call was refused at once, nothing ran (the service answers 429 with Retry-After).
 */
export class QueueFullError extends PjrtScoreError {
  declare readonly code: 'QUEUE_FULL';
  constructor(
    readonly queueSize: number,
    /** Seconds after which a retry will likely find room. */
    readonly retryAfterSeconds: number,
  ) {
    super(`the queue is full (${queueSize} requests waiting)`, 'QUEUE_FULL');
    this.name = 'QueueFullError';
  }
}
