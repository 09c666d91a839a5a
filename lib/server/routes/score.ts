/**
 * The scoring routes: POST /v1/score (SGLang's ScoringRequest in,
 * ScoringResponse out) and, through the same steps, POST /v1/rerank
 * (rerank.ts). Order of checks: phase (503), content type and body
 * (400/413), fields (400), queue (429), then the device under a deadline (504).
 * An endpoint only says how a body becomes a normalized request and how the
 * scores become its answer, both through lib/wire's readers and writers.
 */
import {
  AbortError,
  QueueFullError,
  ScoreInputError,
  describeValue,
  type Admission,
  type DevicePassTiming,
  type NormalizedRequest,
  type ScoreResult,
} from '../../scoring';
import { readScoreBody, SCORE_FLOAT_KEYS, scoreResponseBody, type ScoreResponseBody } from '../../wire';
import { isAbortError, ScoringBackend } from '../lifecycle/scorer-backend';
import { checkContentType, parseJsonBody, payloadTooLarge, readBody } from '../http/body';
import { Exchange, Reply, errorReply, jsonReply } from '../http/exchange';
import { ErrorShape, HttpError } from '../http/http-errors';
import { logEvent } from '../telemetry/log';
import { ServiceState } from '../lifecycle/service-state';
import type { StepTiming } from '../telemetry/tracing';

/** What the request log line and the metrics learn about one request. */
export interface ScoreRecord {
  readonly id: string;
  status: number;
  algorithm: string;
  items: number;
  tokens: number;
  batch?: number;
  queueMs?: number;
  error?: string;
  param?: string | null;
  /** The error body's shape, once the body says which client sent it. */
  errorShape?: ErrorShape;
  /**
   * Timed steps for the request's trace (tracing.ts): body, tokenize, queue wait, device passes; null when traces are
   * off.
   */
  steps: StepTiming[] | null;
  /** performance.now() when the scores were ready: the reply starts there. */
  scoredAtMs?: number;
  /** The body was read whole: a deadline after this is the server's (504), before it the client's (408). */
  bodyRead?: boolean;
}

/** The request's deadline passed (504): the reason its signal fires with, kept through the Scorer. */
class DeadlineError extends AbortError {
  constructor(readonly timeoutMs: number) {
    super(`the request did not finish within ${timeoutMs} ms`);
  }
}

/** The client closed the connection (499). */
class ClientGoneError extends AbortError {
  constructor() {
    super('the client closed the connection');
  }
}

/** What differs between the scoring routes. */
export interface ScoringEndpoint<T> {
  /**
   * Validates and tokenizes a parsed JSON body (ScoreInputError on bad input), long texts off the event loop: the
   * request's one normalization.
   */
  normalize(
    backend: ScoringBackend,
    body: unknown,
  ): Promise<{ readonly request: NormalizedRequest; readonly detail: T }>;
  /** The 200 answer. */
  respond(outcome: ScoreResult, detail: T, service: ServiceState, id: string): unknown;
  /** Keys whose numbers are floats on the wire (1 is written 1.0): json-floats.ts. */
  readonly floatKeys: ReadonlySet<string>;
  /** The error body for a parsed request body (TEI's shape on TEI's requests); default the common one. */
  errorShape?(body: unknown): ErrorShape;
}

/** POST /v1/score. */
export const SCORE_ENDPOINT: ScoringEndpoint<NormalizedRequest> = {
  normalize: async (backend, body) => {
    checkModelField(body);
    const read = readScoreBody(body);
    const request = backend.offLoop ? await backend.offLoop.normalizeWith(read) : backend.normalizeWith(read);
    return { request, detail: request };
  },
  respond: (outcome, request, service): ScoreResponseBody =>
    scoreResponseBody(outcome, request, service.backend?.modelName ?? ''),
  floatKeys: SCORE_FLOAT_KEYS,
};

/** Answers one scoring request; never throws (every failure is an error Reply). */
export async function handleScoring<T>(
  service: ServiceState,
  ex: Exchange,
  record: ScoreRecord,
  endpoint: ScoringEndpoint<T>,
): Promise<Reply> {
  const { options } = service;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DeadlineError(options.timeoutMs)), options.timeoutMs);
  const onClose = (): void => {
    if (!ex.res.writableFinished) controller.abort(new ClientGoneError());
  };
  ex.res.on('close', onClose);
  try {
    const { outcome, detail } = await scoreRequest(service, ex, controller.signal, record, endpoint);
    const body = endpoint.respond(outcome, detail, service, record.id);
    record.status = 200;
    return jsonReply(200, body, {}, endpoint.floatKeys);
  } catch (error) {
    const httpError = toHttpError(service, error, controller.signal, record.bodyRead === true);
    record.status = httpError.status;
    record.error = httpError.message;
    record.param = httpError.param;
    if (httpError.status === 500) logEvent(service.logger, 'error', 'internal_error', { id: record.id, error });
    let headers: Record<string, string> = {};
    if (httpError.status === 413 || httpError.status === 408) {
      // The rest of the body is not read: close the connection once the answer is out.
      headers = { connection: 'close' };
      ex.req.resume();
    }
    if (controller.signal.reason instanceof ClientGoneError) record.status = 499;
    return errorReply(httpError, headers, record.errorShape);
  } finally {
    clearTimeout(timer);
    ex.res.off('close', onClose);
  }
}

/** The JSON body: read and parsed here, or as the host's body parser left it. */
async function requestBody(service: ServiceState, ex: Exchange, signal: AbortSignal): Promise<unknown> {
  const limit = service.options.maxBodyBytes;
  if (ex.body !== undefined) {
    const value = ex.body.value;
    if (typeof value === 'string' || Buffer.isBuffer(value)) {
      const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
      if (bytes.length > limit) throw payloadTooLarge(limit, `${bytes.length} bytes`);
      return parseJsonBody(bytes);
    }
    // Already parsed by the host (express.json()): its parser applied its own limits.
    if (value === undefined) throw HttpError.badRequest('the request body is empty: a JSON object is required', 'body');
    return value;
  }
  return parseJsonBody(await raceSignal(readBody(ex.req, limit), signal));
}

async function scoreRequest<T>(
  service: ServiceState,
  ex: Exchange,
  signal: AbortSignal,
  record: ScoreRecord,
  endpoint: ScoringEndpoint<T>,
): Promise<{ outcome: ScoreResult; detail: T }> {
  const backend = service.backend;
  if (!service.serving || !backend) {
    const message = service.phase === 'loading' ? 'the model is loading; retry shortly' : 'the server is shutting down';
    throw new HttpError(503, message, { retryAfter: service.retryAfterSeconds() });
  }
  checkContentType(ex.req.headers['content-type']);
  const steps = record.steps;
  const readStart = performance.now();
  const body = await requestBody(service, ex, signal);
  record.bodyRead = true;
  steps?.push({ name: 'read body', startMs: readStart, endMs: performance.now() });
  if (endpoint.errorShape) record.errorShape = endpoint.errorShape(body);
  const tokenizeStart = performance.now();
  // Long texts are tokenized on a worker thread meanwhile: the deadline and a client gone still end the wait.
  const { request, detail } = await raceSignal(endpoint.normalize(backend, body), signal);
  steps?.push({ name: 'tokenize', startMs: tokenizeStart, endMs: performance.now() });
  record.items = request.itemTokens.length;
  record.tokens = request.promptTokens;
  let admission: Admission | null = null;
  let pass = 0;
  const submittedMs = performance.now();
  const outcome = await backend.scoreNormalized(request, {
    signal,
    // Told once the call is answered: the wait began at the submit, and lasted queueMs.
    onAdmitted: (a) => {
      admission = a;
      steps?.push({
        name: 'queue wait',
        startMs: submittedMs,
        endMs: submittedMs + a.queueMs,
        attributes: { 'pjrt_score.turn_size': a.turnSize },
      });
    },
    ...(steps
      ? {
          onPass: (p: DevicePassTiming) =>
            steps.push({
              name: 'device pass',
              startMs: p.startMs,
              endMs: p.endMs,
              attributes: { 'pjrt_score.pass': pass++, 'pjrt_score.program': p.program },
            }),
        }
      : {}),
  });
  record.scoredAtMs = performance.now();
  // With no items nothing ran on the device, whatever plan the Scorer names.
  record.algorithm = request.itemTokens.length === 0 ? 'none' : outcome.algorithm;
  if (admission !== null) {
    const { turnSize, queueMs } = admission;
    record.batch = turnSize;
    record.queueMs = Math.round(queueMs * 10) / 10;
  }
  record.tokens = outcome.usage.promptTokens;
  return { outcome, detail };
}

/** `model` is optional and informational (one model per server), but must be a string when given. */
export function checkModelField(body: unknown): void {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return; // the normalizer reports it
  const model = (body as Record<string, unknown>).model;
  if (model !== undefined && model !== null && typeof model !== 'string') {
    throw new ScoreInputError(`model must be a string, got ${describeValue(model)}`, 'model');
  }
}

function toHttpError(service: ServiceState, error: unknown, signal: AbortSignal, bodyRead: boolean): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof ScoreInputError) return HttpError.fromInput(error);
  if (error instanceof QueueFullError)
    return new HttpError(429, `${error.message}: retry later`, { retryAfter: error.retryAfterSeconds });
  // The client's stall, not the server's: its body was not all there by the deadline.
  if (error instanceof DeadlineError && !bodyRead)
    return new HttpError(408, `the request body did not arrive within ${error.timeoutMs} ms`, { param: 'body' });
  if (error instanceof DeadlineError) return new HttpError(504, error.message);
  if (signal.aborted && (isAbortError(error) || error === signal.reason))
    return new HttpError(499, 'the client closed the connection');
  if (service.phase === 'closed') return new HttpError(503, 'the server is shutting down', { retryAfter: 5 });
  return new HttpError(500, 'internal error while scoring; see the server log');
}

/** Rejects with the signal's reason as soon as it fires. */
function raceSignal<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
