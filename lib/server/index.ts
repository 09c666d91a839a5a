/**
 * lib/server: the scoring microservice (SGLang-compatible POST /v1/score,
 * rerank, health, models, Prometheus metrics, deadlines, graceful
 * shutdown), standalone (startServer) or mounted in a host's fastify or
 * express app (createScoringService). The command line that starts it is
 * lib/cli. The queue (and its 429s), the Scorer's types and its options are
 * lib/scoring's; the service keeps only HTTP.
 * May import: scoring (its index only), util (not cli).
 */
export { startServer, type ReloadResult, type ScoreServer, type StartServerOptions } from './server';
export { type AuthorizeHook } from './access';
export { createScoringService, type ScoringService, type ScoringServiceOptions } from './scoring-service';
export { type MountOptions, type RoutePath } from './routes';
export { type ExpressStyleHandler, type RequestListener } from './node-handler';
export { type FastifyInstanceLike, type FastifyPluginLike, type FastifyReplyLike, type FastifyRequestLike } from './fastify-plugin';
export { DEFAULT_SERVE_OPTIONS, SERVE_SETTINGS, resolveServeOptions, type ServeOptions, type SettingSpec } from './options';
export {
  type BackendLoadOptions,
  type BackendStats,
  type ScoringBackend,
} from './backend';
export { HttpError, type ErrorBody } from './http-errors';
export { createLogger, silentLogger, type LogDestination, type LogFn, type Logger, type LogLevel, type ServiceLogger } from './log';
