/**
 * The routes on node:http's (req, res): the standalone service's request
 * listener (every route, 404 for the rest) and an express-style router,
 * `(req, res, next)`, for express, connect or a plain http server, that
 * answers its own paths and passes everything else to `next`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AccessGate } from '../network/access';
import { CorsPolicy } from '../network/cors';
import { Exchange, writeReply } from '../http/exchange';
import { dispatch } from '../routes/dispatch';
import { ROUTES, RouteDefinition, findRoute } from '../routes/table';
import { ServiceState } from '../lifecycle/service-state';

export type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/** express's `(req, res, next)`; no express needed at run time. */
export type ExpressStyleHandler = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;

/** What a listener applies before the routes: the access check, and CORS (node:http only; a host has its own). */
interface ListenerGuards {
  readonly gate?: AccessGate;
  readonly cors?: CorsPolicy | null;
}

/** The standalone service's listener: every route; an unknown path is our 404. */
export function createRequestListener(
  service: ServiceState,
  routes: readonly RouteDefinition[] = ROUTES,
  guards: ListenerGuards = {},
): RequestListener {
  const { gate, cors } = guards;
  return (req, res) => {
    const path = pathOf(req.url);
    const route = findRoute(routes, path);
    if (cors && cors.apply(req, res, route?.methods ?? null)) return;
    const ex: Exchange = { req, res, method: req.method ?? '', path };
    void dispatch(service, route, ex, (reply) => writeReply(res, reply), gate);
  };
}

/**
 * A router for `app.use(router)` (or `app.use('/prefix', router)`: express
 * strips the prefix from req.url). A body that a parser mounted before it
 * already read (express.json(), express.raw()) is taken as it is; mounted
 * first, it reads the body itself, with the standalone service's limits.
 */
export function createExpressRouter(
  service: ServiceState,
  routes: readonly RouteDefinition[],
  gate?: AccessGate,
): ExpressStyleHandler {
  return (req, res, next) => {
    const route = findRoute(routes, pathOf(req.url));
    if (route === null) {
      next();
      return;
    }
    const parsed = req as IncomingMessage & { body?: unknown; _body?: boolean };
    const consumed = parsed._body === true || req.readableEnded;
    const ex: Exchange = {
      req,
      res,
      method: req.method ?? '',
      path: route.path,
      ...(consumed ? { body: { value: parsed.body } } : {}),
    };
    void dispatch(service, route, ex, (reply) => writeReply(res, reply), gate);
  };
}

function pathOf(url: string | undefined): string {
  return (url ?? '/').split('?')[0];
}
