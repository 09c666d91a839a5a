/**
 * Who may use a route (docs/service.md, "Deploying on a network"). The
 * standalone service checks API keys (api-keys.ts); a fastify or express
 * mount runs the host's `authorize(req)` hook, since the host owns its
 * auth. The probes (OPEN_PATHS) are always open: they carry no key. A refusal is a
 * 401 with `WWW-Authenticate: Bearer` and the error body of every route,
 * thrown before the body is read: a refused body never reaches the Scorer.
 */
import type { IncomingMessage } from 'node:http';
import { ApiKeys, RefusalReason } from './api-keys';
import { HttpError } from '../http/http-errors';

/** A host's check on a mount: true lets the request through, false is a 401. */
export type AuthorizeHook = (req: IncomingMessage) => boolean | Promise<boolean>;

/** Why a request was refused; 'denied' is an `authorize` hook's false. */
type Refusal = RefusalReason | 'denied';

/** null: the request may go on. `path` is the route's ('/metrics'), null for no route. */
export type AccessGate = (req: IncomingMessage, path: string | null) => Refusal | null | Promise<Refusal | null>;

/**
 * The probes (Kubernetes' kubelet sends no key), and the API reference's page and assets: the same for every caller,
 * nothing of the service in them (routes/docs.ts); the document it reads keeps its key.
 */
export const OPEN_PATHS: ReadonlySet<string> = new Set(['/health', '/readyz', '/livez', '/docs', '/docs/:asset']);

/** The standalone service's gate: a key on every route but the open paths (and /metrics if `metricsPublic`). */
export function apiKeyGate(keys: ApiKeys, metricsPublic: boolean): AccessGate {
  return (req, path) => {
    if (metricsPublic && path === '/metrics') return null;
    const verdict = keys.check(req.headers.authorization);
    return verdict === 'ok' ? null : verdict;
  };
}

/** A mount's gate: the host's hook decides. */
export function hookGate(authorize: AuthorizeHook): AccessGate {
  return async (req) => ((await authorize(req)) === true ? null : 'denied');
}

const MESSAGES: Readonly<Record<Refusal, string>> = {
  missing: 'an API key is required: send Authorization: Bearer <key>',
  malformed: 'the Authorization header must be Bearer <key>',
  wrong: 'the API key is not valid',
  denied: 'not authorized',
};

/** The 401 for a refusal. */
export function refusalError(reason: Refusal): HttpError {
  return new HttpError(401, MESSAGES[reason], { param: 'authorization', headers: { 'www-authenticate': 'Bearer' } });
}
