/**
 * One HTTP exchange as every host presents it (node:http, express, fastify):
 * the raw Node request and response, and the answer as data (a Reply) that
 * each adapter writes its own way. The routes never write to a socket
 * themselves, so the three hosts give the same statuses, headers and bodies.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorShape, HttpError } from './http-errors';
import { stringifyWithFloats } from './json-floats';

export interface Exchange {
  /** The raw request; its body stream is read unless `body` is given. */
  readonly req: IncomingMessage;
  /** The raw response: watched for the client going away, never written by the routes. */
  readonly res: ServerResponse;
  readonly method: string;
  /** The path inside the mount point, without the query string. */
  readonly path: string;
  /** A body the host's own parser already read (express.json(), express.raw()). */
  readonly body?: { readonly value: unknown };
}

export interface Reply {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** A JSON answer; numbers under `floatKeys` are written with a fraction part (json-floats.ts). */
export function jsonReply(
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
  floatKeys?: ReadonlySet<string>,
): Reply {
  const text = floatKeys === undefined ? JSON.stringify(body) : stringifyWithFloats(body, floatKeys);
  return { status, contentType: 'application/json', body: text, headers };
}

export function errorReply(
  error: HttpError,
  headers: Readonly<Record<string, string>> = {},
  shape: ErrorShape = 'common',
): Reply {
  const all: Record<string, string> = { ...error.headers, ...headers };
  if (error.retryAfter !== undefined) all['retry-after'] = String(error.retryAfter);
  return jsonReply(error.status, error.body(shape), all);
}

/** Writes a Reply on a node:http (or express) response; nothing if the response is already gone. */
export function writeReply(res: ServerResponse, reply: Reply): void {
  if (res.headersSent || res.writableEnded || res.destroyed) return;
  const payload = Buffer.from(reply.body, 'utf8');
  res.statusCode = reply.status;
  res.setHeader('content-type', reply.contentType);
  res.setHeader('content-length', payload.length);
  for (const [name, value] of Object.entries(reply.headers)) res.setHeader(name, value);
  res.end(payload);
}
