/**
 * Request routing, the small GET endpoints, and the one log line per request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError } from './http-errors';
import { sendError, sendJson, sendText } from './respond';
import { RERANK_ENDPOINT } from './rerank-route';
import { SCORE_ENDPOINT, ScoreRecord, handleScoring } from './score-route';
import { ScoreService } from './service';

type Route = '/v1/score' | '/v1/rerank' | '/rerank' | '/health' | '/v1/models' | '/metrics';

const ROUTES: Readonly<Record<Route, readonly string[]>> = {
  '/v1/score': ['POST'],
  '/v1/rerank': ['POST'],
  '/rerank': ['POST'],
  '/health': ['GET', 'HEAD'],
  '/v1/models': ['GET', 'HEAD'],
  '/metrics': ['GET', 'HEAD'],
};

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The node:http request listener of the service. Never throws, never leaves a request unanswered. */
export function createRequestListener(service: ScoreService): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    service.enter();
    void handle(service, req, res).finally(() => service.leave());
  };
}

async function handle(service: ScoreService, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const started = performance.now();
  const given = req.headers['x-request-id'];
  const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : service.nextRequestId();
  res.setHeader('x-request-id', id);
  if (service.phase === 'draining' || service.phase === 'closed') res.setHeader('connection', 'close');
  const path = (req.url ?? '/').split('?')[0];
  const route = (Object.prototype.hasOwnProperty.call(ROUTES, path) ? path : null) as Route | null;
  const record: ScoreRecord = { id, status: 0, algorithm: 'none', items: 0, tokens: 0 };
  try {
    if (route === null) throw new HttpError(404, `no route for ${req.method ?? ''} ${path.slice(0, 200)}`, { param: 'path' });
    const allowed = ROUTES[route];
    if (!allowed.includes(req.method ?? '')) {
      throw new HttpError(405, `${route} accepts ${allowed.join(', ')}, not ${req.method ?? ''}`, { headers: { allow: allowed.join(', ') } });
    }
    switch (route) {
      case '/v1/score':
        await handleScoring(service, req, res, record, SCORE_ENDPOINT);
        break;
      case '/v1/rerank':
      case '/rerank':
        await handleScoring(service, req, res, record, RERANK_ENDPOINT);
        break;
      case '/health':
        record.status = health(service, res);
        break;
      case '/v1/models':
        record.status = models(service, res);
        break;
      case '/metrics':
        record.status = metrics(service, res);
        break;
    }
  } catch (error) {
    const httpError = error instanceof HttpError ? error : new HttpError(500, 'internal error; see the server log');
    if (!(error instanceof HttpError)) service.logger.error('internal_error', { id, error });
    record.status = httpError.status;
    record.error = httpError.message;
    // Do not read a body nobody asked for: answer and close.
    if (!req.complete) res.setHeader('connection', 'close');
    sendError(res, httpError);
    req.resume();
  }
  const seconds = (performance.now() - started) / 1000;
  const routeLabel = route ?? 'other';
  service.metrics.observeHttp(routeLabel, record.status);
  const scoring = route === '/v1/score' || route === '/v1/rerank' || route === '/rerank';
  if (scoring) {
    service.metrics.observeScore(record.status, record.algorithm, seconds, record.items, record.tokens);
  }
  service.logger.info('request', {
    id,
    method: req.method,
    path: path.slice(0, 200),
    status: record.status,
    ...(scoring
      ? {
          algorithm: record.algorithm,
          items: record.items,
          tokens: record.tokens,
          ...(record.batch !== undefined ? { batch: record.batch } : {}),
          ...(record.queueMs !== undefined ? { queue_ms: record.queueMs } : {}),
        }
      : {}),
    latency_ms: Math.round(seconds * 10000) / 10,
    ...(record.error !== undefined ? { error: record.error } : {}),
    ...(record.param !== undefined && record.param !== null ? { param: record.param } : {}),
  });
}

function health(service: ScoreService, res: ServerResponse): number {
  const ready = service.phase === 'ready';
  const status = ready ? 200 : 503;
  const body: Record<string, unknown> = {
    status: service.phase === 'ready' ? 'ok' : service.phase,
    ready,
    uptime_seconds: Math.round((Date.now() - service.startedAt) / 100) / 10,
  };
  if (service.backend) body.model = service.backend.modelName;
  if (service.scheduler) {
    body.queue_depth = service.scheduler.queueDepth;
    body.in_flight = service.scheduler.inFlight;
  }
  sendJson(res, status, body, ready ? {} : { 'retry-after': String(service.retryAfterSeconds()) });
  return status;
}

function models(service: ScoreService, res: ServerResponse): number {
  const backend = service.backend;
  if (!backend) {
    sendError(res, new HttpError(503, 'the model is loading; retry shortly', { retryAfter: service.retryAfterSeconds() }));
    return 503;
  }
  sendJson(res, 200, {
    object: 'list',
    data: [
      {
        id: backend.modelName,
        object: 'model',
        created: Math.floor(service.startedAt / 1000),
        owned_by: 'pjrt-score',
        root: backend.modelName,
        max_model_len: backend.config.contextLength,
      },
    ],
  });
  return 200;
}

function metrics(service: ScoreService, res: ServerResponse): number {
  let stats = null;
  try {
    stats = service.backend ? service.backend.stats() : null;
  } catch (error) {
    service.logger.warn('stats_failed', { error });
  }
  const text = service.metrics.render({
    ready: service.phase === 'ready',
    draining: service.phase === 'draining',
    queueDepth: service.scheduler?.queueDepth ?? 0,
    inFlight: service.backend?.pending ?? 0,
    queueCapacity: service.options.queueSize,
    stats,
  });
  sendText(res, 200, 'text/plain; version=0.0.4; charset=utf-8', text);
  return 200;
}
