/**
 * CORS on node:http (docs/service.md, "Deploying on a network"): the rules
 * @fastify/cors and express's `cors` apply on those hosts, for the
 * standalone service. Nothing is allowed unless --cors-allow-origin names
 * the origin (or is `*`). A preflight (OPTIONS with
 * Access-Control-Request-Method) for an allowed origin and a known route is
 * answered 204 here, without a key: browsers send none on a preflight.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

const ALLOWED_HEADERS = 'authorization, content-type, x-request-id';
const EXPOSED_HEADERS = 'x-request-id, retry-after';
const PREFLIGHT_MAX_AGE_S = '600';

export interface CorsPolicy {
  /**
   * Adds the CORS headers an allowed origin gets; answers a preflight for a
   * route accepting `methods` (null: no route) and returns true if it did.
   */
  apply(req: IncomingMessage, res: ServerResponse, methods: readonly string[] | null): boolean;
}

/** The policy of `origins` (`['*']`, a list, or none: null). */
export function corsPolicy(origins: readonly string[]): CorsPolicy | null {
  if (origins.length === 0) return null;
  const any = origins.includes('*');
  const allowed = new Set(origins);
  return {
    apply(req, res, methods) {
      const origin = req.headers.origin;
      if (typeof origin !== 'string' || !(any || allowed.has(origin))) return false;
      res.setHeader('access-control-allow-origin', any ? '*' : origin);
      if (!any) res.setHeader('vary', 'Origin');
      const preflight = req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined;
      if (!preflight) {
        res.setHeader('access-control-expose-headers', EXPOSED_HEADERS);
        return false;
      }
      if (methods === null) return false;
      res.statusCode = 204;
      res.setHeader('access-control-allow-methods', methods.join(', '));
      res.setHeader('access-control-allow-headers', ALLOWED_HEADERS);
      res.setHeader('access-control-max-age', PREFLIGHT_MAX_AGE_S);
      res.setHeader('content-length', '0');
      res.end();
      req.resume();
      return true;
    },
  };
}
