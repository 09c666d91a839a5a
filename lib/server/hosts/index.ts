/**
 * lib/server/hosts: what hosts the routes: the service without a listener
 * (mountable-service.ts: createScoringService, mounted in a host), the
 * standalone node:http(s) server of `pjrt-score serve`
 * (standalone-server.ts: startServer), node:http's listener and the
 * express-style router (node-handler.ts), and the fastify plugin
 * (fastify-plugin.ts).
 * May import: http, network, settings, lifecycle, telemetry, routes.
 */
export { startServer, type ReloadResult, type ScoreServer, type StartServerOptions } from './standalone-server';
export { createScoringService, type ScoringService, type ScoringServiceOptions } from './mountable-service';
export { type ExpressStyleHandler, type RequestListener } from './node-handler';
export {
  type FastifyInstanceLike,
  type FastifyPluginLike,
  type FastifyReplyLike,
  type FastifyRequestLike,
} from './fastify-plugin';
