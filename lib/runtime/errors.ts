import { PjrtScoreError } from '../util/errors';

/** Errors from the device: PJRT's status code and the plugin's own message. */
export type PjrtErrorCode =
  | 'CANCELLED'
  | 'UNKNOWN'
  | 'INVALID_ARGUMENT'
  | 'DEADLINE_EXCEEDED'
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'PERMISSION_DENIED'
  | 'RESOURCE_EXHAUSTED'
  | 'FAILED_PRECONDITION'
  | 'ABORTED'
  | 'OUT_OF_RANGE'
  | 'UNIMPLEMENTED'
  | 'INTERNAL'
  | 'UNAVAILABLE'
  | 'DATA_LOSS'
  | 'UNAUTHENTICATED';

export class PjrtError extends PjrtScoreError {
  /** PJRT's status code, as the plugin returned it. */
  declare readonly code: PjrtErrorCode;
  constructor(message: string, code: PjrtErrorCode) {
    super(message, code);
    this.name = 'PjrtError';
  }
}

/** Use of an object after dispose(), or after a close() that ends in it. */
export class DisposedError extends PjrtScoreError {
  declare readonly code: 'ERR_DISPOSED';
  constructor(what: string, state: 'has been disposed' | 'is closing' = 'has been disposed') {
    super(`${what} ${state}`, 'ERR_DISPOSED');
    this.name = 'DisposedError';
  }
}

/**
 * Awaits a native promise and re-throws its failure as a PjrtError whose
 * stack is the caller's (native rejections carry no JS stack of their own).
 */
export async function fromNative<T>(operation: string, promise: Promise<T>): Promise<T> {
  const site = new Error();
  try {
    return await promise;
  } catch (err) {
    const native = err as { name?: string; code?: string; message?: string };
    let wrapped: Error;
    if (native && native.name === 'PjrtError') {
      wrapped = new PjrtError(`${operation}: ${native.message}`, (native.code ?? 'UNKNOWN') as PjrtErrorCode);
    } else if (native && native.code === 'ERR_DISPOSED') {
      wrapped = new DisposedError(String(native.message).replace(/ has been disposed$/, ''));
    } else {
      throw err;
    }
    wrapped.stack = `${wrapped.name}: ${wrapped.message}\n${(site.stack ?? '').split('\n').slice(2).join('\n')}`;
    throw wrapped;
  }
}
