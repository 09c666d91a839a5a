/**
 * lib/server: the scoring microservice (SGLang-compatible POST /v1/score,
 * rerank, health, models, Prometheus metrics, deadlines, graceful
 * shutdown), standalone (startServer) or mounted in a host's fastify or
 * express app (createScoringService). The command line that starts it is
 * lib/cli. The queue (and its 429s), the Scorer's types and its options are
 * lib/scoring's; the service keeps only HTTP. Its sub-rooms (hosts, routes,
 * network, lifecycle, settings, telemetry, http) are in docs/design.md,
 * "Rooms".
 * May import: wire, scoring (its index only), util (not cli).
 */
export {
  createScoringService,
  startServer,
  type ExpressStyleHandler,
  type FastifyInstanceLike,
  type FastifyPluginLike,
  type FastifyReplyLike,
  type FastifyRequestLike,
  type ReloadResult,
  type RequestListener,
  type ScoreServer,
  type ScoringService,
  type ScoringServiceOptions,
  type StartServerOptions,
} from './hosts';
export { type MountOptions, type RoutePath } from './routes';
export { type AuthorizeHook } from './network';
export {
  DEFAULT_SERVE_OPTIONS,
  SERVE_SETTINGS,
  resolveServeOptions,
  type ServeOptions,
  type SettingSpec,
} from './settings';
export { type BackendLoadOptions, type ScoringBackend } from './lifecycle';
export { HttpError, type ErrorBody } from './http';
export {
  createLogger,
  silentLogger,
  type BackendStats,
  type LogDestination,
  type LogFn,
  type Logger,
  type LogLevel,
  type ServiceLogger,
} from './telemetry';
