/**
 * Reading a JSON request body: content type, size limit (checked on the
 * Content-Length header and again while streaming), strict UTF-8, JSON.
 */
import type { IncomingMessage } from 'node:http';
import { HttpError } from './http-errors';

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/**
 * JSON is accepted as `application/json` or any `application/*+json`, with
 * an optional utf-8 charset; a missing header is taken as JSON, as FastAPI
 * (and so SGLang) does. Anything else is a 400 naming the header.
 */
export function checkContentType(header: string | undefined): void {
  if (header === undefined || header.trim() === '') return;
  const [mediaType, ...params] = header.split(';').map((part) => part.trim().toLowerCase());
  const isJson = mediaType === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(mediaType);
  if (!isJson) {
    throw HttpError.badRequest(
      `Content-Type must be application/json, got ${JSON.stringify(header.slice(0, 100))}`,
      'content-type',
    );
  }
  for (const param of params) {
    const [name, value = ''] = param.split('=').map((s) => s.trim());
    if (name === 'charset' && value.replace(/"/g, '') !== 'utf-8' && value.replace(/"/g, '') !== 'utf8') {
      throw HttpError.badRequest(
        `the request body must be UTF-8 JSON, got charset ${JSON.stringify(value)}`,
        'content-type',
      );
    }
  }
}

export function payloadTooLarge(limit: number, got: string): HttpError {
  return new HttpError(413, `the request body is ${got}, more than the limit of ${limit} bytes`, { param: 'body' });
}

/**
 * Collects the body up to `limit` bytes. Over the limit it rejects with 413
 * at once and stops buffering; the caller answers and closes the connection.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined) {
    const length = Number(declared);
    if (Number.isFinite(length) && length > limit) return Promise.reject(payloadTooLarge(limit, `${length} bytes`));
  }
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (error: Error | null, value?: Buffer): void => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      if (error) reject(error);
      else resolve(value as Buffer);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        chunks.length = 0;
        finish(payloadTooLarge(limit, `over ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => finish(null, Buffer.concat(chunks, size));
    const onError = (err: Error): void => finish(err);
    const onClose = (): void => {
      if (!req.complete)
        finish(
          Object.assign(new Error('the client closed the connection before the body ended'), { code: 'ECONNRESET' }),
        );
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** Strict UTF-8 then JSON.parse; either failure is a 400 on `body`. */
export function parseJsonBody(bytes: Buffer): unknown {
  let text: string;
  try {
    text = fatalUtf8.decode(bytes);
  } catch {
    throw HttpError.badRequest(`the request body is not valid UTF-8 (byte ${firstInvalidUtf8(bytes)})`, 'body');
  }
  if (text.trim() === '') throw HttpError.badRequest('the request body is empty: a JSON object is required', 'body');
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw HttpError.badRequest(`the request body is not valid JSON: ${(err as Error).message}`, 'body');
  }
}

/** Offset of the first byte where strict decoding fails, for the message. */
function firstInvalidUtf8(bytes: Buffer): number {
  let lo = 0;
  let hi = bytes.length;
  // The longest valid prefix, by bisection (a valid prefix may end mid-character, hence `stream`).
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, mid), { stream: true });
      lo = mid;
    } catch {
      hi = mid - 1;
    }
  }
  return lo;
}
