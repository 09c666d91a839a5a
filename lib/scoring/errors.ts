/**
 * Errors for bad scoring input. The HTTP layer maps a ScoreInputError to
 * `{"object": "error", "message", "type": "BadRequestError", "param", "code"}`
 * without re-deriving anything, so the error carries exactly those fields.
 */
export class ScoreInputError extends Error {
  /** The request field at fault, spelled as the caller spelled it ('query', 'label_token_ids', ...). */
  readonly param: string;
  /** HTTP status: 400 for every input rule in SPEC section 1. */
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
