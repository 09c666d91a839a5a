/** Writing responses: JSON bodies, error bodies, plain text. */
import type { ServerResponse } from 'node:http';
import { HttpError } from './http-errors';

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): void {
  send(res, status, 'application/json', JSON.stringify(body), headers);
}

export function sendText(res: ServerResponse, status: number, contentType: string, text: string): void {
  send(res, status, contentType, text, {});
}

export function sendError(res: ServerResponse, error: HttpError): void {
  const headers: Record<string, string> = { ...error.headers };
  if (error.retryAfter !== undefined) headers['retry-after'] = String(error.retryAfter);
  sendJson(res, error.status, error.body(), headers);
}

function send(res: ServerResponse, status: number, contentType: string, text: string, headers: Readonly<Record<string, string>>): void {
  if (res.headersSent || res.writableEnded || res.destroyed) return;
  const payload = Buffer.from(text, 'utf8');
  res.statusCode = status;
  res.setHeader('content-type', contentType);
  res.setHeader('content-length', payload.length);
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.end(payload);
}
