/**
 * lib/server/routes: the routes, defined once (table.ts: path, methods,
 * handler, OpenAPI operation) and run by one `dispatch` (dispatch.ts) that
 * every host calls; the handlers: scoring (score.ts, and on its steps
 * rerank.ts: the rerank dialects and Cohere v2's; the bodies read and written
 * by lib/wire), the model's description (models.ts),
 * what a gateway reads from a worker (worker.ts) and GET /openapi.json
 * (openapi.ts, openapi-schemas.ts).
 * May import: http, network, lifecycle, telemetry.
 */
export { type MountOptions, type RoutePath } from './table';
