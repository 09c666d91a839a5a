/**
 * The scoring routes over the lines of a batch file, OpenAI's batch format
 * as vLLM's `run-batch` and the hosted batch APIs read it: a line
 * `{custom_id, method, url, body}` in, a line `{id, custom_id, response:
 * {status_code, request_id, body}, error}` out. Each line is answered by the
 * one `dispatch` every host calls (routes/dispatch.ts), on an exchange
 * without a socket, so its status and body are the route's by construction:
 * the same validation, error bodies, floats, queue and Scorer.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { Exchange, Reply } from '../http/exchange';
import { parseJsonBody } from '../http/body';
import { HttpError } from '../http/http-errors';
import { ServiceState } from '../lifecycle/service-state';
import { dispatch } from '../routes/dispatch';
import { RouteDefinition, findRoute, selectRoutes } from '../routes/table';

/** One line of the input: its number in the file (1-based) and its bytes, null when it was longer than the limit. */
export interface BatchLine {
  readonly number: number;
  readonly bytes: Buffer | null;
}

/** One line of the output, with what the job counts. */
interface BatchAnswer {
  /** The output line, newline included. */
  readonly text: string;
  readonly status: number;
  readonly customId: string | null;
  /** Items (or documents) the line scored; 0 for a failed line. */
  readonly items: number;
}

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** The `custom_id` of a line's JSON (an input line or an output line), or null when it has none that is a string. */
export function customIdOf(bytes: Buffer | null): string | null {
  if (bytes === null) return null;
  try {
    const value = JSON.parse(fatalUtf8.decode(bytes)) as unknown;
    const id = isObject(value) ? value.custom_id : undefined;
    return typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}

/** What an output line says: its custom_id and status (null: not an output line). */
export function answeredLine(bytes: Buffer | null): {
  readonly customId: string | null;
  readonly status: number | null;
} {
  try {
    const value = bytes === null ? null : (JSON.parse(fatalUtf8.decode(bytes)) as unknown);
    if (!isObject(value)) return { customId: null, status: null };
    const status = isObject(value.response) ? value.response.status_code : undefined;
    return {
      customId: typeof value.custom_id === 'string' ? value.custom_id : null,
      status: typeof status === 'number' ? status : null,
    };
  } catch {
    return { customId: null, status: null };
  }
}

/** Answers batch lines through the service's scoring routes (the four a mount always serves). */
export class BatchLines {
  private readonly routes: readonly RouteDefinition[] = selectRoutes({});

  constructor(
    private readonly state: ServiceState,
    /** Longest line read; a longer one is answered 413 (the route's answer to a body over the limit). */
    readonly maxLineBytes: number,
  ) {}

  /** The output line for `line`. Never throws. */
  async answer(line: BatchLine): Promise<BatchAnswer> {
    const id = `batch-line-${line.number}`;
    let parsed: { customId: string; method: string; url: string; body: unknown };
    try {
      parsed = readLine(line, this.maxLineBytes);
    } catch (error) {
      const httpError = error instanceof HttpError ? error : new HttpError(500, 'internal error');
      const reply: Reply = {
        status: httpError.status,
        contentType: 'application/json',
        body: JSON.stringify(httpError.body()),
        headers: { 'x-request-id': id },
      };
      return outputLine(id, customIdOf(line.bytes), reply, 0);
    }
    const path = parsed.url.split('?')[0];
    const reply = await this.run(findRoute(this.routes, path), parsed.method, path, parsed.body, id);
    return outputLine(id, parsed.customId, reply, reply.status >= 200 && reply.status < 300 ? itemsOf(parsed.body) : 0);
  }

  private run(route: RouteDefinition | null, method: string, path: string, body: unknown, id: string): Promise<Reply> {
    const req = new IncomingMessage(new Socket());
    req.method = method;
    req.url = path;
    req.headers = { 'content-type': 'application/json', 'x-request-id': id };
    req.complete = true;
    req.push(null);
    const res = new ServerResponse(req);
    // The body goes in as the text a client would send, so the route reads it by its own rules (size, JSON).
    const text = body === undefined ? undefined : JSON.stringify(body);
    const ex: Exchange = { req, res, method, path, body: { value: text } };
    return new Promise<Reply>((resolve) => {
      void dispatch(this.state, route, ex, resolve);
    });
  }
}

/** The line's fields, or the 400 (413) a route gives a body it cannot read. */
function readLine(
  line: BatchLine,
  maxLineBytes: number,
): { customId: string; method: string; url: string; body: unknown } {
  if (line.bytes === null)
    throw new HttpError(413, `the line is more than the limit of ${maxLineBytes} bytes`, { param: 'body' });
  // Read as a route reads a body (strict UTF-8, then JSON): a line that is not JSON gets the route's 400.
  const value = parseJsonBody(line.bytes);
  if (!isObject(value))
    throw HttpError.badRequest('a line must be a JSON object {custom_id, method, url, body}', 'body');
  const { custom_id: customId, method, url, body } = value;
  if (typeof customId !== 'string') throw HttpError.badRequest('custom_id must be a string', 'custom_id');
  if (typeof method !== 'string') throw HttpError.badRequest('method must be a string ("POST")', 'method');
  if (typeof url !== 'string')
    throw HttpError.badRequest('url must be a string: /v1/score, /v1/rerank, /v2/rerank or /rerank', 'url');
  return { customId, method: method.toUpperCase(), url, body };
}

/**
 * The output line: the route's body as it wrote it (its floats kept), and for an error its fields again in `error`, as
 * vLLM writes them.
 */
function outputLine(id: string, customId: string | null, reply: Reply, items: number): BatchAnswer {
  const ok = reply.status >= 200 && reply.status < 300;
  const json = reply.contentType.startsWith('application/json') ? reply.body : JSON.stringify(reply.body);
  const requestId = reply.headers['x-request-id'] ?? id;
  const error = ok ? 'null' : JSON.stringify(errorFields(json, reply.status));
  const ids = `"id":${JSON.stringify(id)},"custom_id":${JSON.stringify(customId)}`;
  const response = `{"status_code":${reply.status},"request_id":${JSON.stringify(requestId)},"body":${json}}`;
  const text = `{${ids},"response":${response},"error":${error}}\n`;
  return { text, status: reply.status, customId, items };
}

function errorFields(
  json: string,
  status: number,
): { message: string; type: string; param: string | null; code: number } {
  try {
    const body = JSON.parse(json) as Record<string, unknown>;
    return {
      message: typeof body.message === 'string' ? body.message : `status ${status}`,
      type: typeof body.type === 'string' ? body.type : 'error',
      param: typeof body.param === 'string' ? body.param : null,
      code: status,
    };
  } catch {
    return { message: `status ${status}`, type: 'error', param: null, code: status };
  }
}

/** Items the body asked to score: `items` (score), `documents` (rerank), `texts` (TEI). */
function itemsOf(body: unknown): number {
  if (!isObject(body)) return 0;
  for (const key of ['items', 'documents', 'texts']) {
    const list = body[key];
    if (Array.isArray(list)) return list.length;
  }
  return 0;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
