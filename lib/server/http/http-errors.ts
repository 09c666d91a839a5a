/**
 * Every non-2xx answer of the service is an HttpError rendered as one error
 * body that the clients of each imitated server can read at once:
 *
 *   { "object": "error", "message", "type", "param", "code",   SGLang's and vLLM's flat fields
 *     "error": { "message", "type", "param", "code" } }         OpenAI's nested object (openai-node, openai-python)
 *
 * On text-embeddings-inference's request shape (`texts`) the same fields
 * come with TEI's `{ "error": "<message>", "error_type": "validation" }`
 * instead of the nested object (a JSON key holds one value: TEI's `error`
 * is the message string). docs/service.md has the table.
 */
import { ScoreInputError } from '../../scoring';
import { PjrtScoreError } from '../../util/errors';

/** Which client family's error body: TEI's on TEI's request shape, the common one elsewhere. */
export type ErrorShape = 'common' | 'tei';

interface FlatErrorFields {
  readonly object: 'error';
  readonly message: string;
  readonly type: string;
  readonly param: string | null;
  readonly code: number;
}

export interface ErrorBody extends FlatErrorFields {
  readonly error: {
    readonly message: string;
    readonly type: string;
    readonly param: string | null;
    readonly code: number;
  };
}

interface TeiErrorBody extends FlatErrorFields {
  readonly error: string;
  readonly error_type: TeiErrorType;
}

/** TEI's error kinds (its ErrorType, lower case on the wire). */
type TeiErrorType = 'validation' | 'empty' | 'tokenizer' | 'overloaded' | 'unhealthy' | 'backend';

/** The OpenAI/SGLang style type name for each status the service answers. */
const TYPE_BY_STATUS: Readonly<Record<number, string>> = {
  400: 'BadRequestError',
  401: 'AuthenticationError',
  404: 'NotFoundError',
  405: 'MethodNotAllowedError',
  408: 'RequestTimeoutError',
  413: 'PayloadTooLargeError',
  429: 'RateLimitError',
  500: 'InternalServerError',
  503: 'ServiceUnavailableError',
  504: 'TimeoutError',
};

function teiTypeOf(status: number): TeiErrorType {
  if (status === 429) return 'overloaded';
  if (status === 503) return 'unhealthy';
  return status >= 500 ? 'backend' : 'validation';
}

/**
 * An answer of the service that is not 2xx, before it is a body: the routes' own, never thrown to a caller of the
 * library.
 */
export class HttpError extends PjrtScoreError {
  declare readonly code: 'HTTP_ERROR';
  readonly status: number;
  readonly param: string | null;
  readonly type: string;
  /** TEI's error_type for this error (derived from the status unless given). */
  readonly teiType: TeiErrorType;
  /** Seconds for the Retry-After header (429, 503). */
  readonly retryAfter?: number;
  /** Extra response headers (Allow for 405). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    status: number,
    message: string,
    options: {
      param?: string | null;
      retryAfter?: number;
      headers?: Record<string, string>;
      teiType?: TeiErrorType;
    } = {},
  ) {
    super(message, 'HTTP_ERROR');
    this.name = 'HttpError';
    this.status = status;
    this.param = options.param ?? null;
    this.type = TYPE_BY_STATUS[status] ?? (status >= 500 ? 'InternalServerError' : 'BadRequestError');
    this.teiType = options.teiType ?? teiTypeOf(status);
    if (options.retryAfter !== undefined) this.retryAfter = options.retryAfter;
    this.headers = options.headers ?? {};
  }

  body(shape: ErrorShape = 'common'): ErrorBody | TeiErrorBody {
    const flat: FlatErrorFields = {
      object: 'error',
      message: this.message,
      type: this.type,
      param: this.param,
      code: this.status,
    };
    if (shape === 'tei') return { ...flat, error: this.message, error_type: this.teiType };
    return { ...flat, error: { message: this.message, type: this.type, param: this.param, code: this.status } };
  }

  static badRequest(message: string, param: string): HttpError {
    return new HttpError(400, message, { param });
  }

  /** A ScoreInputError keeps its own message, param and status. */
  static fromInput(error: ScoreInputError): HttpError {
    return new HttpError(error.status, error.message, { param: error.param });
  }
}
