/**
 * Every non-2xx answer of the service is an HttpError rendered as the Score
 * API's error body: `{"object": "error", "message", "type", "param", "code"}`.
 */
import { ScoreInputError } from '../scoring';

export interface ErrorBody {
  readonly object: 'error';
  readonly message: string;
  readonly type: string;
  readonly param: string | null;
  readonly code: number;
}

/** The OpenAI/SGLang style type name for each status the service answers. */
const TYPE_BY_STATUS: Readonly<Record<number, string>> = {
  400: 'BadRequestError',
  404: 'NotFoundError',
  405: 'MethodNotAllowedError',
  413: 'PayloadTooLargeError',
  429: 'RateLimitError',
  500: 'InternalServerError',
  503: 'ServiceUnavailableError',
  504: 'TimeoutError',
};

export class HttpError extends Error {
  readonly status: number;
  readonly param: string | null;
  readonly type: string;
  /** Seconds for the Retry-After header (429, 503). */
  readonly retryAfter?: number;
  /** Extra response headers (Allow for 405). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    status: number,
    message: string,
    options: { param?: string | null; retryAfter?: number; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
    this.param = options.param ?? null;
    this.type = TYPE_BY_STATUS[status] ?? (status >= 500 ? 'InternalServerError' : 'BadRequestError');
    if (options.retryAfter !== undefined) this.retryAfter = options.retryAfter;
    this.headers = options.headers ?? {};
  }

  body(): ErrorBody {
    return { object: 'error', message: this.message, type: this.type, param: this.param, code: this.status };
  }

  static badRequest(message: string, param: string): HttpError {
    return new HttpError(400, message, { param });
  }

  /** A ScoreInputError keeps its own message, param and code. */
  static fromInput(error: ScoreInputError): HttpError {
    return new HttpError(error.code, error.message, { param: error.param });
  }
}
