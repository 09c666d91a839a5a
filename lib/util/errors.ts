/**
 * The one base class of every error a user of the library, the CLI or the
 * service can see (docs/design.md, "Errors"). `code` is a stable string a
 * caller can switch on; each subclass names its codes, and
 * docs/scorer-api.md "Errors" has the table (code, class, when).
 */
export class PjrtScoreError extends Error {
  /** Stable and documented: the class's code (e.g. 'QUEUE_FULL'), or one of its few (PjrtError: PJRT's status). */
  readonly code: string;

  constructor(message: string, code: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PjrtScoreError';
    this.code = code;
  }
}
