/**
 * lib/server: the scoring microservice (SGLang-compatible POST /v1/score,
 * health, models, Prometheus metrics, bounded queue, deadlines, graceful
 * shutdown) and the `pjrt-score` command line.
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
export { CUDA12_PLUGIN } from '../assets/plugin';
export { main as cliMain } from './cli';
