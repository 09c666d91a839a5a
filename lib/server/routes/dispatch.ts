/**
 * Running one route: every host (the standalone node:http server, the
 * express-style router, the fastify plugin) hands its exchange to
 * `dispatch`, which adds what every answer carries: the access check, the
 * request id, `Connection: close` while draining, the 404 and 405, the HTTP
 * and scoring metrics, the trace, and one `request` log line.
 */
import { AccessGate, OPEN_PATHS, refusalError } from '../network/access';
import { Exchange, Reply, errorReply } from '../http/exchange';
import { HttpError } from '../http/http-errors';
import { ServiceState } from '../lifecycle/service-state';
import { logEvent } from '../telemetry/log';
import { ScoreRecord } from './score';
import { RouteDefinition } from './table';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Runs `route` (null: no route here, a 404) and hands the Reply to `send`.
 * Never throws, never leaves a request unanswered; the drain waits for it.
 */
export async function dispatch(
  service: ServiceState,
  route: RouteDefinition | null,
  ex: Exchange,
  send: (reply: Reply) => void,
  gate?: AccessGate,
): Promise<void> {
  service.enter();
  try {
    await dispatchInner(service, route, ex, send, gate);
  } finally {
    service.leave();
  }
}

async function dispatchInner(
  service: ServiceState,
  route: RouteDefinition | null,
  ex: Exchange,
  send: (reply: Reply) => void,
  gate?: AccessGate,
): Promise<void> {
  const started = performance.now();
  const given = ex.req.headers['x-request-id'];
  const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : service.nextRequestId();
  const common: Record<string, string> = { 'x-request-id': id };
  const path = ex.path;
  const startMs = performance.now();
  const trace = service.tracing?.startRequest(ex.req, ex.method, route?.path ?? 'other', startMs) ?? null;
  const record: ScoreRecord = { id, status: 0, algorithm: 'none', items: 0, tokens: 0, steps: trace ? [] : null };
  let reply: Reply;
  try {
    // Before the 404: without a key, no answer tells which paths exist.
    if (gate !== undefined && !(route !== null && OPEN_PATHS.has(route.path))) {
      const refused = await gate(ex.req, route?.path ?? null);
      if (refused !== null) {
        service.metrics.observeRefusal(refused);
        throw refusalError(refused);
      }
    }
    if (route === null) throw new HttpError(404, `no route for ${ex.method} ${path.slice(0, 200)}`, { param: 'path' });
    if (!route.methods.includes(ex.method)) {
      throw new HttpError(405, `${route.path} accepts ${route.methods.join(', ')}, not ${ex.method}`, {
        headers: { allow: route.methods.join(', ') },
      });
    }
    reply = await route.run(service, ex, record);
    record.status = reply.status;
  } catch (error) {
    const httpError = error instanceof HttpError ? error : new HttpError(500, 'internal error; see the server log');
    if (!(error instanceof HttpError)) logEvent(service.logger, 'error', 'internal_error', { id, error });
    record.status = httpError.status;
    record.error = httpError.message;
    reply = errorReply(httpError);
    // Do not read a body nobody asked for: answer and close.
    if (!ex.req.complete && ex.body === undefined) {
      common.connection = 'close';
      ex.req.resume();
    }
  }
  // Read when the answer goes out: a request taken before SIGTERM and answered after it closes its connection too.
  if (service.phase === 'leaving' || service.phase === 'draining' || service.phase === 'closed')
    common.connection = 'close';
  try {
    send({ ...reply, headers: { ...reply.headers, ...common } });
  } catch (error) {
    logEvent(service.logger, 'error', 'internal_error', { id, error });
  }
  if (trace) {
    const endMs = performance.now();
    const steps = record.steps ?? [];
    if (record.scoredAtMs !== undefined) steps.push({ name: 'reply', startMs: record.scoredAtMs, endMs });
    trace.end(endMs, record.status, steps, {
      'pjrt_score.request_id': id,
      ...(route?.scoring
        ? {
            'pjrt_score.items': record.items,
            'pjrt_score.tokens': record.tokens,
            'pjrt_score.algorithm': record.algorithm,
          }
        : {}),
    });
  }
  const seconds = (performance.now() - started) / 1000;
  const scoring = route !== null && route.scoring;
  service.metrics.observeHttp(route?.path ?? 'other', record.status);
  if (scoring) service.metrics.observeScore(record.status, record.algorithm, seconds, record.items, record.tokens);
  logEvent(service.logger, 'info', 'request', {
    id,
    method: ex.method,
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
