/**
 * lib/server: the scoring microservice (SGLang-compatible POST /v1/score,
 * health, models, Prometheus metrics, bounded queue, deadlines, graceful
 * shutdown). The command line that starts it is lib/cli.
 * May import: scoring, model, runtime, util (not cli).
 */
export { startServer, type ScoreServer, type StartServerOptions } from './server';
export { DEFAULT_SERVE_OPTIONS, SERVE_SETTINGS, resolveServeOptions, type ServeOptions, type SettingSpec } from './options';
export {
  type BackendLoadOptions,
  type BackendScoreResult,
  type BackendStats,
  type ScoreBody,
  type ScoringBackend,
} from './backend';
export { HttpError, type ErrorBody } from './http-errors';
export { createLogger, type Logger, type LogLevel } from './log';
export { CUDA12_PLUGIN } from './fetch-assets';
